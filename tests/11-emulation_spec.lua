-- The tracer runs simple entry instructions on the saved registers: the program must not notice.
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")

describe("emulated entry instructions", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  teardown(function() os.execute("rm -rf " .. dir) end)
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
  end)

  -- bench/hit_target's hit_movslq starts with movslq %edi,%rax, hit_nop5 with a 5-byte NOP
  it("take two stops per hit for movslq and a 5-byte NOP at the entry (stat header: N stops)", function()
    local target = dir .. "/hit_target"
    local _, err, rc = support.sh(("cc -O2 -o %s bench/hit_target.c"):format(target))
    assert.are.equal(0, rc, err)
    local function stops(mode, n)
      local out, serr, src = support.sh(("%s stat --backend ptrace -r hit_%s -e task-clock %s %d %s"):format(
        support.perfsh, mode, target, n, mode))
      assert.are.equal(0, src, serr)
      assert.truthy(out:find(("region hit_%s (func, %d hits)"):format(mode, n), 1, true), out)
      local n_stops = assert(out:match("caught by ptrace; (%d+) stops"), out)
      return math.tointeger(tonumber(n_stops))
    end
    for _, mode in ipairs{"movslq", "nop5"} do
      local s1, s2 = stops(mode, 300), stops(mode, 600)
      assert.are.equal(2 * 300, s2 - s1, mode)
      assert.is_true(s1 <= 2 * 300 + 4, mode .. ": " .. s1 .. " stops")
    end
  end)
end)
