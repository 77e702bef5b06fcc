-- Sampled regions: hardware breakpoints count every entry, only sampled ones stop the program.
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")

local function spawn_loop(calls)
  -- examples/loop N REPS: spin(N) called REPS times
  return perfsh.spawn{"examples/loop", "1", tostring(calls), events = {"task-clock"}, stdout = "/dev/null"}
end

describe("region sampling", function()
  it("records 10% +- 1% of 100k hits at p = 0.1, and stops only for those", function()
    local t <close> = spawn_loop(100000)
    local r = t:region{func = "spin", sample = {p = 0.1}}
    assert.are.equal(0, t:run().code)
    local st = r:stats()
    assert.are.equal(100000, st.entries)
    assert.is_true(st.hits >= 9000 and st.hits <= 11000, "sampled " .. st.hits)
    local stops = t:info().stops
    assert.is_true(stops <= 2 * st.hits + 20, ("%d stops for %d sampled hits"):format(stops, st.hits))
    assert.is_true(st.sampled)
    assert.is_true(math.abs(st.scale - 100000 / st.hits) < 1e-9)
    for h in r:hits() do assert.is_true(h.flags & 4 ~= 0) end -- PS_SNAP_SAMPLED
  end)

  it("records exactly every Nth hit", function()
    -- not a multiple of 100: a sample on the very last call can be lost when the kernel delivers
    -- its signal after the program has gone on to exit
    local t <close> = spawn_loop(5005)
    local r = t:region{func = "spin", sample = {every = 100}}
    t:run()
    local st = r:stats()
    assert.are.equal(5005, st.entries)
    -- a sample whose signal the kernel delivers late (after the entry) is counted, not recorded
    assert.are.equal(50, st.hits + st.late)
  end)

  it("records in time windows only", function()
    local t <close> = perfsh.spawn{"examples/loop", "20000", "20000", events = {"task-clock"}, stdout = "/dev/null"}
    local r = t:region{func = "spin", sample = {window_ms = 2, period_ms = 40}}
    t:run()
    local st = r:stats()
    assert.are.equal(20000, st.entries)
    assert.is_true(st.hits > 0 and st.hits < st.entries / 2, ("%d of %d"):format(st.hits, st.entries))
  end)

  it("estimates totals from the sampled hits", function()
    local t <close> = spawn_loop(20005) -- see above: no sample on the last call
    local r = t:region{func = "spin", sample = {every = 10}}
    t:run()
    local st = r:stats()
    assert.are.equal(20005, st.entries)
    assert.are.equal(2000, st.hits + st.late)
    assert.is_true(math.abs(st["task-clock"].estimated_total - 20005 / st.hits * st["task-clock"].sum) < 1e-6)
  end)

  it("refuses what it cannot do", function()
    local t <close> = spawn_loop(10)
    assert.has.error(function() t:region{func = "spin", sample = {p = 2}} end,
      "region 'spin': p is in (0, 1]; window_ms is above 0 and below period_ms")
    assert.has.error(function() t:region{func = "spin", sample = {p = 0.5, every = 3}} end,
      "region 'spin': give one of every, p, or window_ms with period_ms")
    local b, e
    for l in io.lines("examples/loop.c") do
      b = b or (l:find("/* LOOP-BEGIN */", 1, true) and true)
    end
    assert.truthy(b)
    e = "region 'loop.c:42-loop.c:44': sampling applies to function regions whose code is mapped"
    assert.has.error(function() t:region{range = "loop.c:42-loop.c:44", sample = {p = 0.5}} end, e)
  end)

  it("detaches a sampled region and leaves the program unharmed", function()
    local p, pid = support.background("examples/loop", "20000 20000")
    local t <close> = perfsh.attach(pid, {events = {"task-clock"}})
    local r = t:region{func = "spin", sample = {every = 3}}
    t:run{hits = 20}
    t:detach()
    assert.is_true(r:stats().hits >= 20)
    assert.are.equal("total = 400000000\n", p:read("a"))
    assert.is_true(p:close())
  end)
end)
