-- Sampled regions: every entry is counted (by a hardware breakpoint, a uprobe or int3 stops),
-- only the sampled ones are recorded. PERFSH_SAMPLING forces the ptrace catcher's mechanism:
-- tests/run.sh runs this file once more with each of uprobe and int3 (under ptrace), and once
-- with PERFSH_BACKEND=uprobe (the uprobe catcher's records, decimated per call).
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")

local forced = os.getenv("PERFSH_SAMPLING")
if forced == "" then forced = nil end

local function spawn_loop(calls)
  -- examples/loop N REPS: spin(N) called REPS times
  return perfsh.spawn{"examples/loop", "1", tostring(calls), events = {"task-clock"}, stdout = "/dev/null"}
end

-- t:region{...} with sampling; nil (the test pending, with the reason) where the mechanism
-- PERFSH_SAMPLING forces cannot be used here (uprobes need root or CAP_PERFMON).
local function sampled(t, spec, pending)
  local ok, r = pcall(t.region, t, spec)
  if not ok and tostring(r):find("PERFSH_SAMPLING=", 1, true) then
    pending(tostring(r))
    return nil
  end
  assert(ok, r)
  return r
end

-- The stops a run may make: two per recorded hit, and one per entry where int3 counts them.
local function max_stops(st)
  return 2 * st.hits + 20 + (st.entry_counter == "int3" and st.entries or 0)
end

describe("region sampling", function()
  it("records 10% +- 1% of 100k hits at p = 0.1, and stops only for those", function()
    local t <close> = spawn_loop(100000)
    local r = sampled(t, {func = "spin", sample = {p = 0.1}}, pending)
    if not r then return end
    assert.are.equal(0, t:run().code)
    local st = r:stats()
    assert.are.equal(100000, st.entries)
    -- binomial: sd 95, so +- 1000 is over 10 sigma
    assert.is_true(st.hits >= 9000 and st.hits <= 11000, "sampled " .. st.hits)
    local stops = t:info().stops
    assert.is_true(stops <= max_stops(st), ("%d stops for %d sampled hits"):format(stops, st.hits))
    assert.is_true(st.sampled)
    assert.is_true(math.abs(st.scale - 100000 / st.hits) < 1e-9)
    for h in r:hits() do assert.is_true(h.flags & 4 ~= 0) end -- PS_SNAP_SAMPLED
  end)

  it("records exactly every Nth hit", function()
    -- not a multiple of 100: a sample on the very last call can be lost when the kernel delivers
    -- its signal after the program has gone on to exit
    local t <close> = spawn_loop(5005)
    local r = sampled(t, {func = "spin", sample = {every = 100}}, pending)
    if not r then return end
    t:run()
    local st = r:stats()
    assert.are.equal(5005, st.entries)
    -- a sample whose signal the kernel delivers late (after the entry) is counted, not recorded
    assert.are.equal(50, st.hits + st.late)
  end)

  it("records in time windows only", function()
    local t <close> = perfsh.spawn{"examples/loop", "20000", "20000", events = {"task-clock"}, stdout = "/dev/null"}
    local r = sampled(t, {func = "spin", sample = {window_ms = 2, period_ms = 40}}, pending)
    if not r then return end
    t:run()
    local st = r:stats()
    if t.catcher == "uprobe" then -- its probes are switched off between windows: entries in them only
      assert.is_true(st.entries < 20000 / 2, tostring(st.entries))
      assert.is_true(st.hits > 0 and st.hits <= st.entries, ("%d of %d"):format(st.hits, st.entries))
    else
      assert.are.equal(20000, st.entries)
      assert.is_true(st.hits > 0 and st.hits < st.entries / 2, ("%d of %d"):format(st.hits, st.entries))
    end
  end)

  it("estimates totals from the sampled hits", function()
    local t <close> = spawn_loop(20005) -- see above: no sample on the last call
    local r = sampled(t, {func = "spin", sample = {every = 10}}, pending)
    if not r then return end
    t:run()
    local st = r:stats()
    assert.are.equal(20005, st.entries)
    assert.are.equal(2000, st.hits + st.late)
    assert.is_true(math.abs(st["task-clock"].estimated_total - 20005 / st.hits * st["task-clock"].sum) < 1e-6)
  end)

  it("refuses what it cannot do", function()
    local t <close> = spawn_loop(10)
    assert.has.error(function() t:region{func = "spin", sample = {p = 2}} end,
      "region 'spin': p is a probability above 0 and at most 1, not 2")
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
    local r = sampled(t, {func = "spin", sample = {every = 3}}, pending)
    if not r then
      t:detach()
      p:close()
      return
    end
    t:run{hits = 20}
    t:detach()
    assert.is_true(r:stats().hits >= 20)
    assert.are.equal("total = 400000000\n", p:read("a"))
    assert.is_true(p:close())
  end)

  it("says what counted the entries", function()
    local t <close> = spawn_loop(1000)
    local r = sampled(t, {func = "spin", sample = {every = 10}}, pending)
    if not r then return end
    local plain = t:region{func = "main"}
    t:run()
    local st = r:stats()
    if forced then
      assert.are.equal(forced, st.entry_counter)
    else
      assert.truthy(({breakpoint = 1, uprobe = 1, int3 = 1})[st.entry_counter], tostring(st.entry_counter))
    end
    assert.are.equal("int3", plain:stats().entry_counter) -- a region that is not sampled stops at each entry
  end)

  it("records 1% of 40,000 calls with perfsh stat --sample 0.01, and counts every call", function()
    local out, err, code = support.sh(support.perfsh .. " stat --sample 0.01 -r spin examples/loop 1 40000")
    if code ~= 0 and err:find("PERFSH_SAMPLING=", 1, true) then
      pending(err)
      return
    end
    assert.are.equal(0, code, err)
    local hits, calls = out:match("sampled: (%d+) of (%d+) calls recorded")
    assert.are.equal("40000", calls, out)
    -- binomial: mean 400, sd 19.9, so +- 100 is 5 sigma
    assert.is_true(tonumber(hits) >= 300 and tonumber(hits) <= 500, "recorded " .. tostring(hits))
    local says = {breakpoint = "calls counted by a hardware breakpoint (in the kernel)\n",
      uprobe = "calls counted by a uprobe (in the kernel)\n",
      int3 = "calls counted by int3 stops: every call stops the target\n"}
    local said = 0
    for mech, line in pairs(says) do
      if out:find(line, 1, true) then
        said = said + 1
        assert.are.equal(forced or mech, mech)
      end
    end
    assert.are.equal(1, said, out)
  end)

  it("counts every entry of two threads", function()
    local t <close> = perfsh.spawn{"examples/threads", "3005", "100", events = {"task-clock"}, stdout = "/dev/null"}
    local r = sampled(t, {func = "work", sample = {every = 10}}, pending)
    if not r then return end
    assert.are.equal(0, t:run().code)
    local st = r:stats()
    assert.are.equal(6010, st.entries)
    assert.are.equal(600, st.hits + st.late) -- every 10th entry of each thread
    local tids, n = {}, 0
    for h in r:hits() do
      if not tids[h.tid] then n = n + 1 end
      tids[h.tid] = true
    end
    assert.are.equal(2, n)
  end)

  it("counts entries across exec, in the new image", function()
    local t <close> = perfsh.spawn{"examples/reexec", events = {"task-clock"}, stdout = "/dev/null"}
    local r = sampled(t, {func = "work", sample = {every = 1}}, pending)
    if not r then return end
    assert.are.equal(0, t:run().code)
    local st = r:stats()
    assert.are.equal(2, st.entries)
    -- the second entry is the program's last: its sample's signal may come after it exits
    assert.is_true(st.hits >= 1 and st.hits <= 2, "recorded " .. st.hits)
  end)

  it("refuses an unknown PERFSH_SAMPLING in one line", function()
    -- how the ptrace catcher counts entries: the uprobe catcher's probes count them
    local _, err, code = support.sh("PERFSH_SAMPLING=debugregs " .. support.perfsh ..
      " stat --backend ptrace --sample 0.5 -r spin examples/loop 1 10")
    assert.are_not.equal(0, code)
    assert.truthy(err:find("PERFSH_SAMPLING is 'debugregs': set it to breakpoint, uprobe or int3, or unset it",
      1, true), err)
  end)
end)
