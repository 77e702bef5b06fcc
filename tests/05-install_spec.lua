-- make install PREFIX=DIR: the standard Lua layout, found without environment variables.
local support = dofile("tests/support.lua")

describe("make install", function()
  it("installs a perfsh that finds its modules and recipes, and a module plain lua5.4 loads", function()
    if support.build ~= "build" then
      pending("a sanitizer build: plain lua5.4 cannot load an ASan-linked core.so")
      return
    end
    local dir = os.tmpname()
    os.remove(dir)
    local _, err, rc = support.sh(("make -s install PREFIX=%s"):format(dir))
    assert.are.equal(0, rc, err)
    for _, f in ipairs{"/bin/perfsh", "/share/lua/5.4/perfsh/init.lua", "/lib/lua/5.4/perfsh/core.so",
      "/share/perfsh/scripts/count.lua"} do
      assert.truthy(io.open(dir .. f), "missing " .. f)
    end
    -- the installed executable, run from elsewhere, with a clean environment
    local out
    out, err, rc = support.sh(("cd / && env -i %s/bin/perfsh -e 'print(perfsh.version)'"):format(dir))
    assert.are.equal(0, rc, err)
    assert.are.equal(require("perfsh").version .. "\n", out)
    out, err, rc = support.sh(("cd / && env -i %s/bin/perfsh count --csv -e task-clock true"):format(dir))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("task-clock,", 1, true))
    -- a plain lua5.4 with the prefix in its paths
    out, err, rc = support.sh(("cd / && LUA_PATH='%s/share/lua/5.4/?.lua;%s/share/lua/5.4/?/init.lua;;' "
      .. "LUA_CPATH='%s/lib/lua/5.4/?.so;;' lua5.4 -e 'print(require(\"perfsh\").core.pmu_counters() >= 0)'")
      :format(dir, dir, dir))
    assert.are.equal(0, rc, err)
    assert.are.equal("true\n", out)
    support.sh("rm -rf " .. dir)
  end)
end)

describe("make install PREFIX=DIR of the marker library", function()
  it("links a program through pkg-config that runs without LD_LIBRARY_PATH", function()
    if support.build ~= "build" then
      pending("a sanitizer build: the installed library is ASan-linked")
      return
    end
    local dir = os.tmpname()
    os.remove(dir)
    local q = support.q
    local _, err, rc = support.sh(("make -s install PREFIX=%s"):format(q(dir)))
    assert.are.equal(0, rc, err)
    local f = assert(io.open(dir .. "/prog.c", "w"))
    f:write([[
#include <stdio.h>
#include <perfsh/marker.h>
int main(void)
{
	int id = ps_marker_region("work");
	ps_marker_begin(id);
	ps_marker_end(id);
	printf("%d\n", ps_marker_enabled());
	return 0;
}
]])
    f:close()
    local pc = ("PKG_CONFIG_PATH=%s/lib/pkgconfig"):format(q(dir))
    _, err, rc = support.sh(("cd %s && cc -o prog prog.c $(%s pkg-config --cflags --libs perfsh-marker)")
      :format(q(dir), pc))
    assert.are.equal(0, rc, err)
    -- the shared library, found through the rpath the .pc gave: no LD_LIBRARY_PATH, no ldconfig
    local deps = support.sh(("readelf -d %s/prog"):format(q(dir)))
    assert.truthy(deps:find("libperfsh-marker.so", 1, true), deps)
    local out
    out, err, rc = support.sh(("cd / && env -i PERFSH_OUT=%s/p.psnap %s/prog"):format(q(dir), q(dir)))
    assert.are.equal(0, rc, err)
    assert.are.equal("1\n", out)
    local snap = perfsh.load(dir .. "/p.psnap")
    assert.are.equal(1, snap.info.records)
    snap:close()
    support.sh("rm -rf " .. q(dir))
  end)
end)
