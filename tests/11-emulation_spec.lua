-- The tracer runs simple entry instructions on the saved registers: the program must not notice.
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")

describe("emulated entry instructions", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local exe = dir .. "/emu"
  local funcs = {"e_movrr", "e_mov32", "e_lea", "e_lea_rip", "e_leaext2", "e_movi32", "e_movi64", "e_movc7",
    "e_xor", "e_rex", "e_lea32"}

  it("give the same results as an untraced run, with two stops per call", function()
    local _, err, rc = support.sh(("cc -O2 -o %s tests/fixtures/emu.c"):format(exe))
    assert.are.equal(0, rc, err)
    local plain = support.sh(exe)
    local out = dir .. "/out"
    local t <close> = perfsh.spawn{exe, events = {"task-clock"}, stdout = out}
    for _, f in ipairs(funcs) do t:region{func = f} end
    assert.are.equal(0, t:run().code)
    local f = assert(io.open(out))
    assert.are.equal(plain, f:read("a"))
    f:close()
    local calls = 0
    for _, r in ipairs(t.regions) do
      assert.are.equal(3, r:stats().hits, r.name)
      calls = calls + 3
    end
    -- two stops per call (entry, return) plus the exec and exit of the process
    assert.is_true(t:info().stops <= 2 * calls + 4, "stops " .. t:info().stops)
    os.execute("rm -rf " .. dir)
  end)
end)
