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

describe("luarocks make (perfsh-0.1.0-1.rockspec)", function()
  it("installs into a tree a perfsh that runs the recipes, every module and recipe, and perfsh.core", function()
    if support.build ~= "build" then
      pending("a sanitizer build: the rockspec builds the plain build/ (as make does)")
      return
    end
    if not support.need_command(pending, "luarocks") then return end
    local q = support.q
    local tree = os.tmpname()
    os.remove(tree)
    local out, err, rc = support.sh(("luarocks --lua-version 5.4 make --tree %s"):format(q(tree)))
    assert.are.equal(0, rc, out .. err)
    -- the installed perfsh, with a clean environment, counts sum()'s one call
    out, err, rc = support.sh(("env -i %s/bin/perfsh stat -r sum ./examples/sum"):format(q(tree)))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("region sum (func, 1 hit)", 1, true), out)
    assert.are.equal("1", out:match("\n  time %(us%) +(%d+) "), out) -- the hits column
    -- every module of lua/perfsh/ and every recipe, where the executable finds them
    local lua = tree .. "/share/lua/5.4/perfsh/"
    for f in support.sh("ls lua/perfsh/"):gmatch("[%w_]+%.lua") do
      assert.truthy(io.open(lua .. f), "the rockspec leaves out lua/perfsh/" .. f)
    end
    for f in support.sh("ls scripts/"):gmatch("[%w_]+%.lua") do
      assert.truthy(io.open(lua .. "recipes/" .. f), "the rockspec leaves out scripts/" .. f)
    end
    out, err, rc = support.sh(("cd / && env -i %s/bin/perfsh recipes"):format(q(tree)))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("\n  stat ", 1, true), out)
    -- a plain lua5.4 with the tree's paths (luarocks path) loads perfsh and perfsh.core
    out, err, rc = support.sh(("cd / && eval \"$(luarocks --lua-version 5.4 path --tree %s)\" && lua5.4 -e "
      .. "'print(package.searchpath(\"perfsh\", package.path), require(\"perfsh\").core.pmu_counters() >= 0)'")
      :format(q(tree)))
    assert.are.equal(0, rc, err)
    assert.are.equal(lua .. "init.lua\ttrue\n", out)
    support.sh("rm -rf " .. q(tree))
  end)
end)
