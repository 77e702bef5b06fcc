-- The uprobe catcher's rings under load: every record kept at the default ring (that a thread's
-- end does not hold up the drain is tests/c/test_catch_uprobe.c's); and t:run{hits = N}
-- ending at the Nth record. They need root or
-- CAP_PERFMON: elsewhere these tests are pending.
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")
local P = support.perfsh

-- perfsh stat's header and hit count for @args (no lost records: lost is 0).
local function stat(args)
  local out, err, rc = support.sh(P .. " stat --backend uprobe -r work " .. args)
  assert.are.equal(0, rc, err)
  local header = out:match("perfsh stat: [^\n]*")
  return header, tonumber(out:match("region work %(func, (%d+) hits%)")),
    tonumber(header:match("(%d+) probe records lost") or 0)
end

describe("the uprobe catcher's rings", function()
  it("lose nothing at the default size: 4 threads x 250,000 calls, all 1,000,000 hits recorded", function()
    if not support.need_uprobes(pending) then return end
    if support.build ~= "build" then
      -- the figure is the shipped build's: under ASan perfsh drains several times slower
      pending("a sanitizer build: its drain is not the one whose rate this pins")
      return
    end
    local header, hits, lost = stat("examples/threads 250000 100 4")
    assert.are.same({1000000, 0}, {hits, lost}, header)
  end)
end)

-- The state letters of process @pid's threads (t: stopped by perfsh), sorted.
local function states_of(pid)
  local states = {}
  local ls = io.popen("ls /proc/" .. pid .. "/task 2>/dev/null")
  for tid in ls:lines() do
    local f = io.open(("/proc/%d/task/%s/stat"):format(pid, tid))
    local text = f and f:read("a")
    if f then f:close() end
    if text then states[#states + 1] = text:match("^.-%) (%a)") end
  end
  ls:close()
  table.sort(states)
  return table.concat(states)
end

describe("t:run{hits = N} under the uprobe catcher", function()
  it("keeps exactly N hits, holds the program, and the next run takes the hits made meanwhile first", function()
    if not support.need_uprobes(pending) then return end
    local t <close> = perfsh.spawn{"examples/threads", "10000000", "100", "2", backend = "uprobe",
      events = {"task-clock"}, stdout = "/dev/null"}
    local r = t:region{func = "work"}
    -- two threads of calls of some 20 us: the rings hold hundreds of records past the Nth at a drain
    for round = 1, 3 do
      assert.are.same({nil, "paused"}, {t:run{hits = 1000}})
      local st = r:stats()
      -- the records past the Nth wait in the rings: none is cut short or lost
      assert.are.same({1000 * round, 0, 0}, {st.hits, st.incomplete, t:info().lost})
      assert.truthy(states_of(t:info().pid):match("^t+$"), "held: " .. states_of(t:info().pid))
    end
    -- a run with no limit records on; the calls entered are recorded or still running
    assert.are.same({nil, "paused"}, {t:run{seconds = 0.3}})
    local st, info = r:stats(), r:info()
    assert.is_true(st.hits > 3000)
    assert.are.same({info.entries, 0, 0}, {st.hits + info.running, st.incomplete, t:info().lost})
  end)
end)
