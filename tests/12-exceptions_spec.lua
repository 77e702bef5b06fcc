-- C++ exceptions through and inside regions: the unwinder must see real return addresses.
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")

describe("C++ exceptions", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local exe = dir .. "/exc"

  it("pass through regions unharmed; hits they cut short are reported unwound", function()
    local _, err, rc = support.sh(("g++ -O2 -g -o %s tests/fixtures/exc.cpp"):format(exe))
    assert.are.equal(0, rc, err)
    local plain = support.sh(exe)
    assert.are.equal("sum=27 caught=3 total=-30\n", plain)
    local out = dir .. "/out"
    local t <close> = perfsh.spawn{exe, events = {"task-clock"}, stdout = out}
    local middle = t:region{func = "middle"}
    local thrower = t:region{func = "thrower"}
    local outer = t:region{func = "outer"}
    local inner = t:region{func = "inner"}
    assert.are.equal(0, t:run().code)
    local f = assert(io.open(out))
    assert.are.equal(plain, f:read("a"))
    f:close()
    for _, r in ipairs{middle, thrower} do
      local st = r:stats()
      assert.are.equal(6, st.hits, r.name)      -- the calls that returned
      assert.are.equal(3, st.incomplete, r.name) -- the calls the exception unwound
    end
    -- inner throws and catches inside itself: every call of inner and outer returns
    assert.are.equal(10, inner:stats().hits)
    assert.are.equal(0, inner:stats().incomplete)
    assert.are.equal(10, outer:stats().hits)
    assert.are.equal(0, outer:stats().incomplete)
    os.execute("rm -rf " .. dir)
  end)
end)
