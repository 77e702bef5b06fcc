-- One owner for each rule: the default events (perfsh.defaults), IPC (perfsh.metrics), slow-hit
-- logging (perfsh.region).
local support = dofile("tests/support.lua")
local perfsh = require "perfsh"
local core = require "perfsh.core"
local metrics = require "perfsh.metrics"

local P = support.perfsh

-- The event names of a stat --csv report, in order.
local function csv_events(out)
  local names, seen = {}, {}
  for e in out:gmatch("\n[^,\n]+,([^,\n]+),") do
    if e ~= "event" and e ~= "time_ns" and not seen[e] then -- not the header
      seen[e] = true
      names[#names + 1] = e
    end
  end
  return names
end

describe("default events", function()
  it("are what perfsh stat counts when -e is not given", function()
    local want = core.pmu_present() and {"instructions", "cycles"} or {"task-clock", "page-faults"}
    assert.are.same(want, perfsh.default_events())
    assert.are.same(want, perfsh.default_events("region"))
    local out, err, rc = support.sh(P .. " stat --csv -r sum examples/sum")
    assert.are.equal(0, rc, err)
    assert.are.same(want, csv_events(out))
  end)

  it("are counted by perfsh.spawn{} without events, so time_ns is on-CPU time, not wall time", function()
    local t <close> = perfsh.spawn{"examples/recursive", "3", "4", stdout = "/dev/null"}
    assert.are.same(perfsh.default_events(), t:events())
    local r = t:region{func = "walk"}
    t:run()
    local st = r:stats()
    assert.are.equal(3, st.hits)
    for _, e in ipairs(perfsh.default_events()) do assert.are.equal(3, st[e].count) end
    if not core.pmu_present() then
      assert.are.equal(st["task-clock"].sum, st.time_ns.sum) -- time_enabled is the on-CPU time
    end
  end)

  it("are counted by perfsh.attach() without events", function()
    local p, pid = support.background("examples/loop", "20000 20000")
    local t <close> = perfsh.attach(pid)
    assert.are.same(perfsh.default_events(), t:events())
    local r = t:region{func = "spin"}
    t:run{hits = 5}
    t:detach()
    local st = r:stats()
    assert.is_true(st.hits >= 5)
    assert.are.equal(st.hits, st[perfsh.default_events()[1]].count)
    assert.are.equal("total = 400000000\n", p:read("a"))
    assert.is_true(p:close())
  end)

  it("are none with events = {}, and groups alone replace them", function()
    local t <close> = perfsh.spawn{"true", events = {}}
    assert.are.same({}, t:events())
    local g <close> = perfsh.spawn{"true", groups = {{"task-clock"}, {"page-faults"}}}
    assert.are.same({"task-clock", "page-faults"}, g:events())
  end)

  it("of each use come from one table, and the recipes' help shows them", function()
    local hw = core.pmu_present()
    assert.are.same(hw and {"instructions", "cycles", "task-clock"} or {"task-clock", "page-faults",
      "context-switches"}, perfsh.default_events("command"))
    assert.are.same(hw and {"instructions", "cycles", "cache-misses"} or {"task-clock", "page-faults",
      "context-switches"}, perfsh.default_events("tail"))
    assert.are.same({hw and "instructions" or "task-clock"}, perfsh.default_events("attribute"))
    local a = perfsh.default_events()
    a[1] = "changed"
    assert.are_not.equal("changed", perfsh.default_events()[1]) -- a fresh array each time
    assert.has.error(function() perfsh.default_events("stat") end,
      "bad argument #1 to 'default_events' (no use 'stat'; use attribute, command, region, tail)")
    -- the help as one line: argparse wraps it at 100 columns
    local out = support.sh(P .. " stat --help"):gsub("%s+", " ")
    assert.truthy(out:find("(default: instructions,cycles where there is a hardware PMU, else task-clock,page-faults)",
      1, true), out)
    out = support.sh(P .. " tail --help"):gsub("%s+", " ")
    assert.truthy(out:find("(default: instructions,cycles,cache-misses with a hardware PMU, else "
      .. "task-clock,page-faults,context-switches)", 1, true), out)
  end)
end)

describe("metrics.value() and metrics.of_totals()", function()
  it("compute IPC where instructions and cycles are counted, and nil elsewhere", function()
    assert.are.equal(2.5, metrics.value({instructions = 250, cycles = 100}, "ipc"))
    assert.is_nil(metrics.value({instructions = 250, cycles = 0}, "ipc"))
    assert.is_nil(metrics.value({instructions = 0, cycles = 0}, "ipc"))
    assert.is_nil(metrics.value({["task-clock"] = 5}, "ipc"))
    assert.are.equal(0.5, metrics.of_totals({instructions = {sum = 50}, cycles = {sum = 100}, hits = 3}, "ipc"))
    assert.is_nil(metrics.of_totals({instructions = {sum = 50}, hits = 3}, "ipc"))
    assert.are.equal(2, metrics.value({a = 4, b = 2}, "a / b"))
  end)
end)

describe("r:on_slow()", function()
  it("belongs to the region: its loggers see its hits, with argument names", function()
    local t <close> = perfsh.spawn{"examples/recursive", "4", "2", events = {"task-clock"}, stdout = "/dev/null"}
    local r = t:region{func = "walk", args = {"n"}}
    local seen = {}
    local logger = r:on_slow{threshold_us = 0, log = function(_, h) seen[#seen + 1] = h.n end}
    assert.are.same({logger}, r.loggers)
    t:run()
    assert.are.same({2, 2, 2, 2}, seen)
    assert.are.equal(4, logger.logged)
    assert.are.same({0, 1, 2, 3}, logger.lines)
  end)

  it("needs a live tracee", function()
    local path = os.tmpname()
    local t <close> = perfsh.spawn{"examples/recursive", "1", "1", events = {"task-clock"}, stdout = "/dev/null"}
    t:region{func = "walk"}
    t:run()
    t:save(path)
    local f = perfsh.load(path)
    assert.has.error(function() f.regions[1]:on_slow{threshold_us = 1} end, "on_slow needs a live tracee")
    os.remove(path)
  end)
end)
