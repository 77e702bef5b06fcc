-- The marker catcher: a program built with perfsh/marker.h, started by perfsh, measures its own
-- markers into memory it shares with perfsh (core/catch/marker/markshm.h), which drains the records while the
-- program runs and changes the program's policy live (t:markers{...}). The program is let go at
-- its first instruction and runs untraced, so these run on programs built with AddressSanitizer
-- too (make SAN=1), whose leak check does not work under ptrace.
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")
local P = support.perfsh

local EX = "examples/marker_loop"
-- the library's own environment cleared: what it does comes from perfsh alone
local ENV = "env -u PERFSH_OUT -u PERFSH_EVENTS -u PERFSH_SAMPLE -u PERFSH_EVERY -u PERFSH_SLOW_US "
for _, k in ipairs{"PERFSH_OUT", "PERFSH_EVENTS", "PERFSH_SAMPLE", "PERFSH_EVERY", "PERFSH_SLOW_US"} do
  assert(os.getenv(k) == nil, k .. " is set in the environment of the tests")
end

-- marker_loop N REPS THREADS [SLOW] under the marker catcher, its output to a temporary file
local function spawn(args, opts)
  local out = os.tmpname()
  local spec = {EX, backend = "marker", events = {"task-clock"}, stdout = out}
  for i, a in ipairs(args) do spec[i + 1] = tostring(a) end
  for k, v in pairs(opts or {}) do spec[k] = v end
  local t = perfsh.spawn(spec)
  return t, function() return support.take(out) end
end

local by_thread = support.by_thread

local function count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

describe("the marker catcher", function()
  it("records every hit of a loop of known size with its fields, per thread, nothing stopped per hit", function()
    local t <close>, output = spawn{1000, 40, 3}
    local loop = t:marker("loop", {fields = {"rep", "slow"}})
    local thread = t:marker("thread")
    assert.are.equal(0, t:run().code)
    assert.are.equal("threads 3 reps 40\n", output())
    local info, st = t:info(), t:markers()
    assert.are.equal("marker", info.catcher)
    assert.are.same({"running", 3, 0, 0, 0}, {st.state, st.threads, st.lost, st.unmatched, st.no_slot})
    assert.is_true(info.stops <= 1, "stops: " .. info.stops) -- let go at its first instruction, never traced
    local s = loop:stats()
    assert.are.same({120, 120}, {s.hits, s.entries})
    assert.are.same({3, 3}, {thread:stats().hits, thread:stats().entries})
    local per = by_thread(loop)
    assert.are.equal(3, count(per))
    for tid, recs in pairs(per) do
      assert.are.equal(40, #recs)
      for i, h in ipairs(recs) do
        assert.are.same({i - 1, 0, tid}, {h.rep, h.slow, h.tid})
        assert.is_true(h["task-clock"] > 0 and h.wall_ns >= h.time_ns * 0.99, tid)
      end
    end
    -- a thread's region holds its 40 loops: its time is at least theirs
    for h in thread:hits() do
      local sum = 0
      for _, l in ipairs(per[h.tid]) do sum = sum + l.time_ns end
      assert.is_true(h.time_ns >= sum, h.tid)
    end
  end)

  it("records every hit of 4 threads, none lost or mixed, when no ring can fill", function()
    local REPS = 10000 -- below a ring's 16384 records: whenever perfsh drains, nothing can be lost
    local t <close>, output = spawn{50, REPS, 4}
    local loop = t:marker("loop", {fields = {"rep"}})
    assert.are.equal(0, t:run().code)
    assert.are.equal(("threads 4 reps %d\n"):format(REPS), output())
    local s, st = loop:stats(), t:markers()
    assert.are.same({4 * REPS, 4 * REPS, 0, 0}, {s.entries, s.hits, st.lost, st.unmatched})
    local per = by_thread(loop)
    assert.are.equal(4, count(per))
    for tid, recs in pairs(per) do
      assert.are.equal(REPS, #recs)
      for i, h in ipairs(recs) do
        if h.rep ~= i - 1 or h.tid ~= tid then error(("thread %d: record %d is rep %d"):format(tid, i, h.rep)) end
      end
    end
  end)

  it("records each hit as the library paired it: the same hit and depth as the library's own file", function()
    -- every hit of loop is inside one of thread: depth 1, and per thread its hits are 0..4
    local function pairs_of(hits)
      local t = {}
      for h in hits do t[#t + 1] = ("%d/%d"):format(h.hit, h.depth) end
      table.sort(t)
      return t
    end
    local t <close>, output = spawn{1000, 5, 2}
    local loop = t:marker("loop")
    t:marker("thread")
    assert.are.equal(0, t:run().code)
    assert.are.equal("threads 2 reps 5\n", output())
    local live = pairs_of(loop:hits())
    local path = os.tmpname()
    local _, err, rc = support.sh(("%sPERFSH_OUT=%s PERFSH_EVENTS=task-clock %s 1000 5 2"):format(ENV, path, EX))
    assert.are.equal(0, rc, err)
    local f = perfsh.load(path)
    os.remove(path)
    local file
    for _, r in ipairs(f.regions) do
      if r.name == "loop" then file = pairs_of(r:hits()) end
    end
    f:close()
    assert.are.same({"0/1", "0/1", "1/1", "1/1", "2/1", "2/1", "3/1", "3/1", "4/1", "4/1"}, file)
    assert.are.same(file, live)
  end)

  it("samples in the program with the probability asked, within binomial bounds", function()
    local t <close>, output = spawn{100, 4000, 1}
    local loop = t:marker("loop", {sample = {p = 0.25}})
    assert.are.equal(0, t:run().code)
    output()
    local s = loop:stats()
    -- 4000 draws of p = 0.25: mean 1000, standard deviation 27.4; 6 of them either side
    assert.are.equal(4000, s.entries)
    assert.is_true(s.hits >= 1000 - 165 and s.hits <= 1000 + 165, "hits: " .. s.hits)
    assert.is_true(s.sampled and math.abs(s.scale - 4000 / s.hits) < 1e-9)
    for h in loop:hits() do assert.is_true(h.sampled) end
  end)

  it("takes a new policy while the program runs: off, slow hits only, every 10th", function()
    -- every 25th rep sleeps 30 ms, with field slow = 1; the program runs for minutes unless closed
    local t <close> = spawn{2000, 100000, 1, 25}
    local loop = t:marker("loop", {fields = {"rep", "slow"}})
    t:markers{on = false}
    assert.is_nil(t:run{seconds = 0.3})
    assert.are.same({0, 0}, {loop:stats().hits, loop:stats().entries})
    assert.is_false(t:markers().on)

    t:markers{on = true, slow_us = 20000}
    local deadline = os.time() + 60
    assert.is_nil(t:run{["until"] = function() return loop:stats().hits >= 3 or os.time() > deadline end})
    local slow = loop:list()
    assert.is_true(#slow >= 3, #slow)
    for _, h in ipairs(slow) do
      assert.are.same({1, 0}, {h.slow, h.rep % 25})
      assert.is_true(h.wall_ns >= 20e6, h.wall_ns)
    end
    assert.is_true(t:markers().fast > 0)

    t:markers{slow_us = 0, every = 10}
    local before = #slow
    assert.is_nil(t:run{["until"] = function() return loop:stats().hits >= before + 20 or os.time() > deadline end})
    local all = loop:list()
    assert.is_true(#all >= before + 20, #all)
    for i = before + 2, #all do
      assert.are.equal(10, all[i].rep - all[i - 1].rep)
      assert.is_true(all[i].sampled)
    end
    t:markers{on = false}
  end)

  it("keeps every record written before the program died of SIGTERM", function()
    local t <close> = spawn{2000, 10000000, 2}
    local loop = t:marker("loop", {fields = {"rep"}})
    local deadline = os.time() + 20
    assert.is_nil(t:run{["until"] = function() return loop:stats().hits >= 50 or os.time() > deadline end})
    assert.is_true(os.execute("kill -TERM " .. t:info().pid))
    local st = t:run()
    assert.are.same({false, "SIGTERM"}, {st.exited, st.signal})
    local s, ms = loop:stats(), t:markers()
    assert.is_true(s.hits >= 50, s.hits)
    assert.are.equal(0, ms.lost)
    -- every begin made a record; the one each thread was inside when it died is its last, exited
    assert.is_true(s.entries - s.hits <= 2, ("%d entries, %d hits"):format(s.entries, s.hits))
    assert.are.equal(s.entries - s.hits, s.incomplete)
    for tid, recs in pairs(by_thread(loop)) do
      for i, h in ipairs(recs) do
        if h.exited then
          assert.are.equal(#recs, i, tid)
        else
          assert.are.equal(i - 1, h.rep, tid)
        end
      end
    end
  end)

  it("lets a detached program run on to its end, its markers off", function()
    local t, output = spawn{2000, 3000, 1}
    local loop = t:marker("loop")
    local deadline = os.time() + 20
    assert.is_nil(t:run{["until"] = function() return loop:stats().hits >= 5 or os.time() > deadline end})
    assert.is_true(t:detach())
    assert.is_false(t:markers().on)
    local pid = t:info().pid
    t:close()
    -- not killed: it finishes its loops and prints its line (reaped by perfsh at its exit)
    local text = ""
    while text == "" and os.time() < deadline + 20 do
      os.execute("sleep 0.1")
      local f = io.open(("/proc/%d/stat"):format(pid))
      local state = f and f:read("l"):match("^%d+ %b() (%a)")
      if f then f:close() end
      if not state or state == "Z" then text = output() end
    end
    assert.are.equal("threads 1 reps 3000\n", text)
  end)

  it("leaves out the threads beyond its slots, counted, with one warning line", function()
    local err = os.tmpname()
    local t <close>, output = spawn({100, 2, 70}, {stderr = err})
    local loop, thread = t:marker("loop"), t:marker("thread")
    assert.are.equal(0, t:run().code)
    assert.are.equal("threads 70 reps 2\n", output())
    local st = t:markers()
    assert.are.equal(70, st.threads + st.no_slot)
    assert.are.same({st.threads, 2 * st.threads}, {thread:stats().hits, loop:stats().hits})
    local text = support.take(err)
    if st.no_slot > 0 then
      assert.are.equal("perfsh marker: more than 64 threads have hit a marker; the markers of the others are off "
        .. "(counted)\n", text)
    else
      assert.are.equal("", text)
    end
  end)

  it("refuses other regions, an attach and per-region events in one line each", function()
    local t <close>, output = spawn{10, 1, 1}
    local ok, why = pcall(t.region, t, {func = "spin"})
    assert.is_false(ok)
    assert.truthy(tostring(why):find("the marker catcher measures the program's markers only", 1, true), why)
    ok, why = pcall(t.marker, t, "loop", {events = {"page-faults"}})
    assert.is_false(ok)
    assert.truthy(tostring(why):find("the marker catcher counts the events the program was started with", 1, true),
      why)
    assert.are.equal(0, t:run().code)
    output()
    ok, why = pcall(perfsh.attach, 1, {backend = "marker", events = {"task-clock"}})
    assert.is_false(ok)
    assert.truthy(tostring(why):find("the marker catcher measures a program perfsh starts", 1, true), why)
  end)
end)

describe("perfsh stat -r marker:NAME with the marker catcher", function()
  it("is the default for markers of a started program, and says how the counters were read", function()
    local out, err, rc = support.sh(("%s%s stat -r marker:loop -r marker:thread -e task-clock %s 1000 7 3"):format(ENV,
      P, EX))
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    assert.truthy(out:find("caught by the program's marker library (counters read by r", 1, true), out)
    assert.truthy(out:find("\nregion marker:loop (marker, 21 hits)\n", 1, true), out)
    assert.truthy(out:find("\nregion marker:thread (marker, 3 hits)\n", 1, true), out)
  end)

  it("refuses --backend marker with a function region or -p, in one line", function()
    local out, err, rc = support.sh(("%s stat --backend marker -r spin %s"):format(P, EX))
    assert.are.same({2, "", "perfsh stat: --backend marker measures marker:NAME regions only, and 'spin' is not one\n"},
      {rc, out, err})
    out, err, rc = support.sh(("%s stat --backend marker -r marker:loop -p 1"):format(P))
    assert.are.same({2, ""}, {rc, out})
    assert.truthy(err:find("--backend marker measures a program perfsh starts", 1, true), err)
  end)
end)

describe("perfsh check and compare of markers", function()
  it("gate markers with the counters engine, the default for them even without a PMU", function()
    local base = os.tmpname()
    local out, err, rc = support.sh(("%s%s check -r marker:loop --runs 3 -e task-clock --save-baseline %s %s 1000 "
      .. "10 1"):format(ENV, P, base, EX))
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    -- 3 runs, and as many more where they were too noisy to detect +50% (a loaded machine)
    assert.truthy(out:find("(engine counters, 3 runs, caught by marker", 1, true)
      or out:find("(engine counters, 3 runs (+3 while they were too noisy to detect +50%), caught by marker", 1,
        true), out)
    assert.truthy(out:find("marker:loop task%-clock: [%d,]+ a hit, spread ±"), out)
    out, err, rc = support.sh(("%s%s check -r marker:loop --runs 3 --limit task-clock=1000%% --limit time_ns=1000%% "
      .. "--baseline %s %s 1000 10 1"):format(ENV, P, base, EX))
    os.remove(base)
    assert.are.equal(0, rc, out .. err)
    assert.truthy(out:find("\nPASS: 0 of 2 checks over their limit", 1, true), out)
  end)

  it("compare markers with no event named: the on-CPU and wall time of each", function()
    local out, err, rc = support.sh(("%s%s compare --runs 1 -r marker:loop -r marker:thread %s 1000 4 2"):format(ENV,
      P, EX))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("\n%s*time_ns%s+marker:loop%s+8%s"), out)
    assert.truthy(out:find("\n%s*wall_ns%s+marker:thread%s+2%s"), out)
  end)
end)

describe("the marker library given a bad control block", function()
  local function run(control)
    return support.sh(("%s PERFSH_CONTROL=%s %s 1000 3 1"):format(ENV, control, EX))
  end

  it("runs the program with its markers off and says why in one line", function()
    local out, err, rc = run("/nonexistent/block")
    assert.are.same({0, "threads 1 reps 3\n"}, {rc, out})
    assert.are.equal("perfsh marker: PERFSH_CONTROL: /nonexistent/block: No such file or directory; markers are off\n",
      err)
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    -- the magic, then version 9, in a block big enough to be one
    f:write("PMSHCTL1", string.pack("<I4", 9), string.rep("\0", 300000))
    f:close()
    out, err, rc = run(path)
    os.remove(path)
    assert.are.same({0, "threads 1 reps 3\n"}, {rc, out})
    assert.truthy(err:find("^perfsh marker: PERFSH_CONTROL: .*: not a perfsh control block this library reads "
      .. "%(version 9; this library reads 2%); markers are off\n$"), err)
  end)
end)

describe("perfsh kinds", function()
  local SRV, N, M = "examples/epoll_server", 6, 4

  it("breaks the epoll loop down per event kind, costs accept apart and logs slow iterations", function()
    local log = os.tmpname()
    local out, err, rc = support.sh(("%s%s kinds -r marker:iter --field 1 --kind 0=data --kind 1=listen "
      .. "-r marker:accept -r marker:data --threshold-us 0 --log %s -e task-clock %s %d %d"):format(ENV, P, log, SRV,
      N, M))
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    local events = N * (M + 2) -- N accepts, N * M messages, N closes
    assert.truthy(out:find(("connections %d messages %d events %d waits"):format(N, M, events), 1, true), out)
    assert.truthy(out:find("caught by the program's marker library (counters read by r", 1, true), out)
    assert.truthy(out:find(("\nmarker:iter by field 1: %d hits\n"):format(events), 1, true), out)
    -- the rows: kind, hits, share
    assert.truthy(out:find(("\n  data%%(0%%)%%s+%d%%s+%.1f%%%%"):format(N * (M + 1), 100 * N * (M + 1) / events)), out)
    assert.truthy(out:find(("\n  listen%%(1%%)%%s+%d%%s+%.1f%%%%"):format(N, 100 * N / events)), out)
    assert.truthy(out:find(("\n  all%%s+%d%%s+100%%.0%%%%"):format(events)), out)
    assert.truthy(out:find(("\n  marker:accept%%s+listen%%(1%%)%%s+%d%%s"):format(N)), out)
    assert.truthy(out:find(("\n  marker:data%%s+data%%(0%%)%%s+%d%%s"):format(N * (M + 1))), out)
    assert.truthy(out:find(("slow marker:iter hits (on-CPU time above 0us): %d logged to %s\n"):format(events, log), 1,
      true), out)
    local kinds = {}
    for line in support.take(log):gmatch("[^\n]+") do
      assert.truthy(line:find("^hit=%d+ time=.* task%-clock=%d+ .* kind=%a+%(%d%) fields=%d+,%d,0,0$"), line)
      local kind = line:match("kind=(%a+)")
      kinds[kind] = (kinds[kind] or 0) + 1
    end
    assert.are.same({data = N * (M + 1), listen = N}, kinds)
  end)

  it("refuses a region that is not a marker, and a bad --field or --kind, in one line", function()
    for args, msg in pairs{
      ["-r sum"] = "perfsh kinds: region 'sum': the kinds come from a marker's fields; give marker:NAME regions\n",
      ["-r marker:iter --field 4"] = "perfsh kinds: --field needs a field from 0 to 3, not '4'\n",
      ["-r marker:iter --kind listen"] = "perfsh kinds: --kind listen: give VALUE=LABEL, e.g. --kind 1=listen\n",
    } do
      local out, err, rc = support.sh(("%s kinds %s examples/epoll_server 1 1"):format(P, args))
      assert.are.same({2, "", msg}, {rc, out, err})
    end
  end)
end)

describe("the marker library under perfsh, given events it cannot open", function()
  it("runs the program with markers off, one warning line, and tells perfsh why", function()
    if require("perfsh.core").pmu_present() then
      pending("cycles opens on this machine (a hardware PMU): no event to fail with")
      return
    end
    local err = os.tmpname()
    local t <close>, output = spawn({1000, 3, 1}, {events = {"cycles"}, stderr = err})
    local loop = t:marker("loop")
    assert.are.equal(0, t:run().code)
    assert.are.equal("threads 1 reps 3\n", output())
    local st = t:markers()
    assert.are.same({"off", 0}, {st.state, loop:stats().hits})
    assert.truthy(st.why:find("^perf_event_open%(cycles%): no hardware PMU"), st.why)
    assert.are.equal("perfsh marker: PERFSH_CONTROL: " .. st.why .. "; markers are off\n", support.take(err))
  end)
end)
