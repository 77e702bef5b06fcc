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
