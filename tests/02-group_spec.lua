-- perfsh.group: open, enable, read, scale, close.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")

describe("perfsh.group{} of software events", function()
  it("counts task-clock while enabled and nothing while disabled", function()
    local g <close> = perfsh.group{"task-clock", "page-faults"}
    local r0 = assert(g:read())
    assert.are.equal(0, r0["task-clock"])
    assert.are.equal(0, r0.time_enabled)
    assert(g:enable())
    core.spin(10000000)
    assert(g:disable())
    local r = assert(g:read())
    assert.is_true(r["task-clock"] > 1000000) -- more than 1 ms
    assert.are.same({"task-clock", "page-faults"}, r.events)
    assert.are.equal(r["task-clock"], r.raw[1])
    assert.are.equal(r["page-faults"], r.raw[2])
    assert.are.equal(1.0, r.ratio)
    assert.are.equal(r.time_enabled, r.time_running)
    assert.are.equal(r.raw[1] + 0.0, r.scaled[1])
    core.spin(10000000)
    assert.are.equal(r["task-clock"], g:read()["task-clock"]) -- disabled: frozen
    assert(g:reset())
    assert.are.equal(0, g:read()["task-clock"])
  end)

  it("is closed by <close>, __gc or :close(), and says so when used", function()
    local g = perfsh.group{"task-clock"}
    assert.truthy(tostring(g):match("^perfsh%.group%(task%-clock; pid 0, cpu %-1%)$"))
    g:close()
    g:close()
    assert.are.equal("perfsh.group(closed)", tostring(g))
    assert.has.error(function() g:read() end, "attempt to use a closed group")
    assert.has.error(function() g:enable() end, "attempt to use a closed group")
  end)

  it("accepts a single name and the enable option", function()
    local g <close> = perfsh.group{"task-clock", enable = true}
    core.spin(1000000)
    assert.is_true(g:read()["task-clock"] > 0)
  end)

  it("reports a missing thread as an operating-system error", function()
    local g, msg, code = core.group({"task-clock"}, {pid = 999999999})
    assert.is_nil(g)
    assert.are.equal("perf_event_open(task-clock): no such process or thread 999999999", msg)
    assert.are.equal(3, code) -- ESRCH
  end)
end)

describe("perfsh.group{} of hardware events", function()
  it("counts a loop of known length within 1%, with a bounded probe effect", function()
    if not support.need_pmu(pending) then return end
    local g <close> = perfsh.group{"instructions", enable = true}
    local n = 1000000
    local a, b = g:read().instructions, g:read().instructions
    local probe = b - a -- what one read costs in user-space instructions, Lua included
    local r0 = g:read().instructions
    core.spin(n)
    local r1 = g:read().instructions
    local got = r1 - r0 - probe
    assert.is_true(probe < 20000, "probe effect " .. probe)
    assert.is_true(math.abs(got - (2 * n + 3)) <= 0.01 * 2 * n, ("counted %d, expected %d"):format(got, 2 * n + 3))
  end)

  it("reads instructions and cycles together", function()
    if not support.need_pmu(pending) then return end
    local g <close> = perfsh.group{"instructions", "cycles"}
    g:enable()
    for _ = 1, 1e6 do end
    local r = g:read()
    assert.is_true(r.instructions > 1e6)
    assert.is_true(r.cycles > 0)
  end)

  it("fails with a clear message where there is no PMU", function()
    if core.pmu_present() then
      pending("this machine has a hardware PMU")
      return
    end
    local ok, err = pcall(perfsh.group, {"instructions", "cycles"})
    assert.is_false(ok)
    assert.truthy(err:find("perf_event_open(instructions): no hardware PMU on this machine", 1, true))
    -- software events still work
    local g <close> = perfsh.group{"task-clock"}
    assert.truthy(g)
  end)
end)

describe("perfsh.scale()", function()
  local rows = {
    -- value, enabled, running, scaled, ratio
    {1000, 100, 100, 1000, 1.0},
    {1000, 200, 100, 2000, 0.5},
    {300, 400, 100, 1200, 0.25},
    {1000, 100, 0, 0, 0.0},
  }
  for _, r in ipairs(rows) do
    it(("scales %d over %d/%d"):format(r[1], r[3], r[2]), function()
      local s, ratio = perfsh.scale(r[1], r[2], r[3])
      assert.are.equal(r[4], s)
      assert.are.equal(r[5], ratio)
    end)
  end
end)
