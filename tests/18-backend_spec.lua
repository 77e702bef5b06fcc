-- Choosing the catcher: --backend auto|uprobe|ptrace on perfsh stat, backend = in perfsh.spawn.
-- The uprobe catcher needs root or CAP_PERFMON: elsewhere its tests are pending with the reason.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")
local P = support.perfsh

local need_uprobes = support.need_uprobes

describe("--backend", function()
  it("uprobe: every call of two threads, a few stops per thread and none per hit", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(P .. " stat --backend uprobe -r work -e task-clock examples/threads 1000 10")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("region work (func, 2000 hits)", 1, true), out)
    local stops = tonumber(out:match("caught by uprobe; (%d+) stops?"))
    assert.truthy(stops, out)
    assert.is_true(stops <= 7, out) -- per new thread: the clone event, its first stop, its exit
    assert.is_nil(out:find("lost", 1, true), out)
  end)

  it("uprobe: 4 threads, 100k hits each: every hit recorded or counted as lost, none mixed", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(P .. " stat --backend uprobe --per-thread -r work -e task-clock "
      .. "examples/threads 100000 1 4")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("^calls = 400000\n"), out)
    -- a lost record (an entry or a return) costs at most the one hit it belonged to
    local lost = tonumber(out:match("(%d+) probe records lost") or "0")
    local tids, n, missing = {}, 0, 0
    for tid, hits in out:gmatch("\nregion work, thread (%d+) %((%d+) hits") do
      assert.is_nil(tids[tid], "thread " .. tid .. " twice")
      tids[tid] = true
      n = n + 1
      hits = tonumber(hits)
      assert.is_true(hits <= 100000, out) -- no thread got another's hits
      missing = missing + 100000 - hits
    end
    assert.are.equal(4, n, out)
    assert.is_true(missing <= lost, ("%d hits missing, %d records lost\n%s"):format(missing, lost, out))
  end)

  -- An event the uprobe catcher cannot read at a probe (it opens the counters per thread, user
  -- space only): msr/tsc/ on x86 (the msr PMU cannot count user space alone). Pending elsewhere.
  local function unreadable_at_probe()
    if not need_uprobes(pending) then return nil end
    if core.resolve("msr/tsc/") and not core.uprobe_check{"msr/tsc/"} then return "msr/tsc/" end
    pending("no msr PMU here (msr/tsc/), the event the uprobe catcher cannot read at a probe")
  end

  it("uprobe refuses an event it cannot read at a probe, in one line naming it, before the program starts",
    function()
      local ev = unreadable_at_probe()
      if not ev then return end
      local out, err, rc = support.sh(("%s stat --backend uprobe -e %s -r sum examples/sum"):format(P, ev))
      assert.are.equal(2, rc, err)
      assert.are.equal("", out) -- the program never ran (it prints its sum)
      local lines = support.lines(err)
      assert.truthy(lines[#lines]:find("^perfsh stat: " .. ev:gsub("%p", "%%%0") .. " cannot be read at a uprobe %(.+%)"
        .. ": use %-%-backend ptrace or drop it$"), err)
      local ok, why = pcall(perfsh.spawn, {"examples/sum", events = {"task-clock", ev}, backend = "uprobe"})
      assert.is_false(ok)
      assert.truthy(tostring(why):find(ev .. " cannot be read at a uprobe", 1, true), why)
    end)

  it("auto takes ptrace for an event the uprobe catcher cannot read, with a note", function()
    local ev = unreadable_at_probe()
    if not ev then return end
    local out, err, rc = support.sh(("%s stat --backend auto -e task-clock,%s -r sum examples/sum"):format(P, ev))
    assert.are.equal(0, rc, err)
    assert.truthy(err:find("perfsh stat: note: backend auto: ptrace, as " .. ev .. " cannot be read at a uprobe (",
      1, true), err)
    assert.truthy(out:find("caught by ptrace", 1, true), out)
    assert.truthy(out:find("region sum (func, 1 hit)", 1, true), out)
    local t <close> = perfsh.spawn{"examples/sum", events = {ev}, backend = "auto", stdout = "/dev/null"}
    assert.are.equal("ptrace", t.catcher)
    assert.truthy(t.note:find(ev .. " cannot be read at a uprobe", 1, true), t.note)
  end)

  it("auto is the default: inproc for a program perfsh starts, else uprobe where it works, else ptrace with a "
    .. "one-line note saying why", function()
    local out, err, rc = support.sh("env -u PERFSH_BACKEND " .. P .. " stat -r sum -e task-clock examples/sum")
    assert.are.equal(0, rc, err)
    local ok, why = core.uprobe_available()
    if core.inproc_available() then
      assert.truthy(out:find("caught by inproc; 0 stops\n", 1, true), out)
      assert.are.equal("", err)
    elseif ok then
      assert.truthy(out:find("caught by uprobe; 1 stop\n", 1, true), out)
      assert.are.equal("", err)
    else
      assert.truthy(out:find("caught by ptrace; %d+ stops"), out)
      assert.are.equal(("perfsh stat: note: backend auto: ptrace, as the uprobe catcher cannot work here (%s)\n")
        :format(why), err)
    end
    assert.are.equal("auto", (support.sh("env -u PERFSH_BACKEND " .. P .. [[ -e 'io.write(require("perfsh.defaults")]]
      .. [[.backend())']])))
    out, err, rc = support.sh("PERFSH_BACKEND=bpf " .. P .. " stat -r sum -e task-clock examples/sum")
    assert.are.same({2, "", "perfsh stat: PERFSH_BACKEND=bpf; give auto, uprobe or ptrace\n"}, {rc, out, err})
  end)

  it("auto takes inproc for a line range of a program perfsh starts, else uprobe, else ptrace", function()
    local out, err, rc = support.sh(P .. " stat --backend auto -r sum.c:40-sum.c:43 -e task-clock examples/sum")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("region sum.c:40-sum.c:43 (range, 1 hit)", 1, true), out)
    local want = support.auto_catcher()
    assert.truthy(out:find("caught by " .. want .. (want == "uprobe" and "; 1 stop\n" or ""), 1, true), out)
  end)

  it("auto takes inproc for function regions of a program perfsh starts, else uprobe where it works", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(P .. " stat --backend auto -r walk -e task-clock examples/recursive 5 10")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("region walk (func, 5 hits, 50 nested entries)", 1, true), out)
    assert.truthy(out:find("caught by " .. support.auto_catcher(), 1, true), out)
  end)

  it("refuses an unknown backend", function()
    local _, err, rc = support.sh(P .. " stat --backend bpf -r sum examples/sum")
    assert.are_not.equal(0, rc)
    assert.are.equal("perfsh stat: --backend bpf; give auto, uprobe or ptrace\n", err)
  end)
end)

describe("line ranges", function()
  local function loops(m) return support.line_of("examples/loops.c", "/* " .. m .. " */") end
  local function sum(text) return support.line_of("examples/sum.c", text) end
  -- {program, args, range}: sum.c's loop, loops.c's loops, jump table, inlined call
  local cases = {
    {"examples/sum", {}, ("sum.c:%d-sum.c:%d"):format(sum("numbers[i] = (uint32_t)rand();") - 1,
      sum("printf(\"sum = "))},
    {"examples/sum", {}, "sum.c:40-sum.c:43"},
    {"examples/loops", {"20000", "1"}, ("loops.c:%d-loops.c:%d"):format(loops("FILL-FOR"), loops("FILL-AFTER"))},
    {"examples/loops", {"20000", "1"}, ("loops.c:%d-loops.c:%d"):format(loops("FILL-BEFORE"), loops("FILL-FOR"))},
    {"examples/loops", {"2000", "4"}, ("loops.c:%d-loops.c:%d"):format(loops("DISPATCH-FIRST"),
      loops("DISPATCH-AFTER"))},
    {"examples/loops", {"200", "3"}, ("loops.c:%d-loops.c:%d"):format(loops("DISPATCH-CASE"), loops("DISPATCH-AFTER"))},
    {"examples/loops", {"1000", "2"}, ("loops.c:%d-loops.c:%d"):format(loops("MAIN-TWICE"), loops("MAIN-PRINT"))},
  }

  -- hits, entries (starts reached), and threads of each record, with backend @b
  local function run(c, b)
    local spec = {c[1], events = {"task-clock"}, stdout = "/dev/null", backend = b}
    for i, a in ipairs(c[2]) do spec[i + 1] = a end
    local t <close> = perfsh.spawn(spec)
    local r = t:region{range = c[3]}
    assert.are.equal(0, t:run().code)
    return {hits = r:stats().hits, entries = t:region_meta(r.id).entries}, t:info()
  end

  it("give the same hits with --backend ptrace and --backend uprobe, never a stop per hit with uprobe", function()
    if not need_uprobes(pending) then return end
    for _, c in ipairs(cases) do
      local want = run(c, "ptrace")
      local got, info = run(c, "uprobe")
      assert.are.same(want, got, c[3])
      assert.are.equal("uprobe", info.catcher)
      assert.is_true(info.stops <= 2, c[3])
    end
  end)

  it("through perfsh stat: the same line with either catcher", function()
    if not need_uprobes(pending) then return end
    local range = cases[5][3]
    local lines = {}
    for _, b in ipairs{"ptrace", "uprobe"} do
      local out, err, rc = support.sh(("%s stat --backend %s -r %s -e task-clock examples/loops 2000 4"):format(P, b,
        range))
      assert.are.equal(0, rc, err)
      lines[#lines + 1] = out:match("region [^\n]*")
    end
    assert.are.equal(("region %s (range, 4 hits)"):format(range), lines[1])
    assert.are.equal(lines[1], lines[2])
  end)
end)

describe("perfsh.spawn{backend = ...}", function()
  it("uprobe: the same records as ptrace, every level of a recursion", function()
    if not need_uprobes(pending) then return end
    local t <close> = perfsh.spawn{"examples/recursive", "5", "10", events = {"task-clock"}, stdout = "/dev/null",
      backend = "uprobe"}
    assert.are.equal("uprobe", t.catcher)
    local r = t:region{func = "walk", every_level = true}
    assert.are.equal(0, t:run().code)
    local st = r:stats()
    assert.are.equal(55, st.hits)
    local info = t:info()
    assert.are.equal("uprobe", info.catcher)
    assert.are.equal(0, info.lost)
    assert.is_true(info.stops <= 2)
  end)

  it("auto: uprobe for several groups of software events, each hit with every group's values", function()
    if not need_uprobes(pending) then return end
    local t <close> = perfsh.spawn{"examples/attribute", "30", "pages", events = {"task-clock"},
      groups = {{"page-faults", "context-switches"}, {"cpu-clock"}}, backend = "auto", stdout = "/dev/null"}
    assert.are.equal("uprobe", t.catcher)
    assert.is_nil(t.note)
    local r = t:region{func = "touch_pages", args = {"a", "b", "c"}}
    assert.are.equal(0, t:run().code)
    local n = 0
    for h in r:hits() do
      n = n + 1
      support.assert_touch_pages(h) -- the second group's page faults are the call's own
      -- task-clock (first group) and cpu-clock (third) of the same hit agree within 25% + 50 us
      assert.is_true(math.abs(h["task-clock"] - h["cpu-clock"]) <= 0.25 * h["task-clock"] + 50000,
        h["task-clock"] .. " vs " .. h["cpu-clock"])
    end
    assert.are.equal(30, n)
    assert.are.equal(0, t:info().lost)
  end)

  -- A probe is a member of its counter group and fires only while the group is on the PMU, so
  -- groups that can take turns on a hardware PMU need ptrace; core.uprobe_check says so before
  -- the program starts (the events resolve without a PMU; opening them needs one).
  it("auto: ptrace for several groups with a hardware PMU's events, saying why", function()
    if not need_uprobes(pending) then return end
    local why = "several counter groups with cycles: groups of a hardware PMU can take turns on it, and a group off "
      .. "it misses the probes"
    local ok, msg, code = core.uprobe_check({"task-clock", "cycles"}, {1, 1})
    assert.is_nil(ok)
    assert.are.equal(why, msg)
    assert.are.equal(core.errors.needs_ptrace, code)
    assert.is_true(core.uprobe_check({"task-clock", "page-faults"}, {1, 1}))
    local out, err, rc = support.sh(P .. " stat --backend uprobe -e task-clock -g cycles -r sum examples/sum")
    assert.are.equal(2, rc, err)
    assert.are.equal("", out) -- the program never ran (it prints its sum)
    assert.are.equal("perfsh stat: " .. why .. ": use --backend ptrace or drop it\n", err)
    if not core.pmu_present() then return end
    local t <close> = perfsh.spawn{"examples/sum", events = {"task-clock"}, groups = {{"cycles"}}, backend = "auto",
      stdout = "/dev/null"}
    assert.are.equal("ptrace", t.catcher)
    assert.are.equal("backend auto: ptrace, as " .. why, t.note)
  end)

  it("refuses an unknown backend", function()
    assert.has.error(function() perfsh.spawn{"examples/sum", backend = "bpf"} end,
      "bad argument #1 to 'spawn' (backend 'bpf'; give auto, uprobe, ptrace, marker or inproc)")
  end)
end)

describe("--ring-pages", function()
  it("counts and reports every record a full ring drops", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(P .. " stat --backend uprobe --ring-pages 1 -r work -e task-clock "
      .. "examples/threads 1000 10")
    assert.are.equal(0, rc, err)
    local lost = tonumber(out:match("; %d+ stops, (%d+) probe records lost %(ring full"))
    local hits = tonumber(out:match("region work %(func, (%d+) hits"))
    assert.truthy(hits, out)
    -- a call with a lost record is not a hit; none is paired with another call's return
    if lost then assert.is_true(2 * hits + lost <= 4000, out) else assert.are.equal(2000, hits, out) end
  end)

  it("counts every hit a full ring drops a record of, with several groups (one record each per hit)", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(P .. " stat --backend uprobe --ring-pages 1 -r work -e task-clock "
      .. "-g page-faults,context-switches examples/threads 1000 10")
    assert.are.equal(0, rc, err)
    local lost = tonumber(out:match("; %d+ stops, (%d+) probe records lost %(ring full"))
    local hits = tonumber(out:match("region work %(func, (%d+) hits"))
    assert.truthy(hits, out)
    -- a hit with any group's record lost is dropped and counted once, as an entry or a return
    if lost then assert.is_true(2 * hits + lost <= 4000, out) else assert.are.equal(2000, hits, out) end
  end)

  it("is refused for the ptrace catcher, and must be a power of two", function()
    local _, err, rc = support.sh(P .. " stat --backend ptrace --ring-pages 1 -r sum examples/sum")
    assert.are_not.equal(0, rc)
    assert.are.equal("perfsh stat: a ring size is for the uprobe catcher (backend uprobe)\n", err)
    _, err, rc = support.sh(P .. " stat --backend uprobe --ring-pages 3 -r sum examples/sum")
    assert.are_not.equal(0, rc)
    assert.are.equal("perfsh stat: --ring-pages needs a power of two (e.g. --ring-pages 1024), not '3'\n", err)
  end)
end)

describe("sampling with the uprobe catcher", function()
  -- perfsh.spawn{...} of @argv under the uprobe catcher, task-clock counted, its output dropped;
  -- rings of 16 MiB, which hold every record of these runs should perfsh not drain them (on a
  -- loaded machine the default ring can lose some: that is counted, and not what is tested here)
  local function spawn_uprobe(argv)
    argv.events, argv.stdout, argv.backend, argv.ring_pages = {"task-clock"}, "/dev/null", "uprobe", 4096
    return perfsh.spawn(argv)
  end

  it("records in time windows, the probes switched on and off while the program is held at each edge, "
    .. "never a stop per hit; each hit's time is its own call's", function()
    if not need_uprobes(pending) then return end
    local t <close> = spawn_uprobe{"examples/loop", "20000", "20000"}
    local r = t:region{func = "spin", sample = {window_ms = 2, period_ms = 40}}
    assert.are.equal(0, t:run().code)
    local st = r:stats()
    assert.is_true(st.hits < 20000 / 2, tostring(st.hits))
    assert.is_true(st.hits <= st.entries, tostring(st.entries)) -- entries: those made in the windows
    -- a stop at each window's edge (two a period of 40 ms): tens, against hundreds of hits
    assert.is_true(t:info().stops <= 2 + st.hits / 4, ("%d stops, %d hits"):format(t:info().stops, st.hits))
    -- switched while the program ran, the entry's and the return's probes drifted apart at each
    -- edge, and most hits read a time (and so a scaled count) far from their task-clock, even < 0.
    -- (The kernel reads the two ~25 us apart in some 0.03% of hits, windows or not, on these VMs.)
    local far, n = 0, 0
    for h in r:hits() do
      assert.is_true(h.sampled)
      if not h.exited then -- one cut short where its window closed ends where it began
        local tc = h["task-clock"]
        n = n + 1
        assert.is_true(h.time_ns > 0 and h.time_ns < 1e9 and tc > 0 and tc < 1e9,
          ("time %d ns, task-clock %d ns"):format(h.time_ns, tc))
        if math.abs(h.time_ns - tc) > 0.1 * tc + 2000 then far = far + 1 end
      end
    end
    assert.is_true(n > 0 and far <= 2 + n // 50, ("%d of %d hits' time far from their task-clock"):format(far, n))
  end)

  it("records in time windows with several groups, each hit's values its own (groups switched while held)",
    function()
      if not need_uprobes(pending) then return end
      local t <close> = perfsh.spawn{"examples/attribute", "300", "pages", events = {"task-clock"},
        groups = {{"page-faults"}}, stdout = "/dev/null", backend = "uprobe"}
      local r = t:region{func = "touch_pages", args = {"a", "b", "c"}, sample = {window_ms = 20, period_ms = 40}}
      assert.are.equal(0, t:run().code)
      local st = r:stats()
      assert.is_true(st.hits > 0 and st.hits < 300, tostring(st.hits))
      assert.are.equal(0, t:info().lost)
      local n = 0
      for h in r:hits() do
        assert.is_true(h.sampled)
        if not (h.unwound or h.exited) then -- a call a window's end cut short has no real end
          n = n + 1
          support.assert_touch_pages(h) -- the second group's page faults are the call's own
        end
      end
      assert.are.equal(st.hits, n)
    end)

  -- The kernel writes a record at every probe; the hit path keeps those of the chosen calls. Every
  -- call is counted (by its entry's record), the program never stops for a hit.
  it("records each call with probability 0.01: 100,000 calls, within 4.5 sigma, every call counted", function()
    if not need_uprobes(pending) then return end
    local t <close> = spawn_uprobe{"examples/loop", "1", "100000"}
    local r = t:region{func = "spin", sample = {p = 0.01}}
    assert.are.equal(0, t:run().code)
    assert.are.equal(0, t:info().lost)
    local st = r:stats()
    assert.are.equal(100000, st.entries)
    -- binomial: n p = 1000, sigma = sqrt(n p (1 - p)) = 31.5; 4.5 sigma = 141.6
    assert.is_true(math.abs(st.hits - 1000) <= 141, "recorded " .. st.hits)
    assert.is_true(st.sampled)
    assert.are.equal("uprobe", st.entry_counter)
    assert.are.equal(0, st.late)
    assert.is_true(math.abs(st.scale - 100000 / st.hits) < 1e-9)
    local est = st["task-clock"].estimated_total
    assert.is_true(math.abs(est - 100000 / st.hits * st["task-clock"].sum) <= 1e-6 * est)
    for h in r:hits() do assert.is_true(h.sampled) end
    assert.is_true(t:info().stops <= 2, tostring(t:info().stops)) -- the exit: no stop per hit
  end)

  it("records exactly every Nth call of each thread, and estimates totals over every call", function()
    if not need_uprobes(pending) then return end
    local t <close> = spawn_uprobe{"examples/threads", "50000", "10"}
    local r = t:region{func = "work", sample = {every = 100}}
    assert.are.equal(0, t:run().code)
    assert.are.equal(0, t:info().lost)
    local st = r:stats()
    assert.are.equal(100000, st.entries)
    assert.are.equal(1000, st.hits) -- every 100th call of each of the 2 threads: 500 each
    local per = {}
    for h in r:hits() do per[h.tid] = (per[h.tid] or 0) + 1 end
    local n = 0
    for _, k in pairs(per) do
      n = n + 1
      assert.are.equal(500, k)
    end
    assert.are.equal(2, n)
    assert.are.equal(100, st.scale)
    assert.is_true(math.abs(st["task-clock"].estimated_total - 100 * st["task-clock"].sum) < 1e-6)
    assert.is_true(t:info().stops <= 7, tostring(t:info().stops)) -- per new thread, none per hit
  end)

  it("samples in perfsh stat and perfsh tail, never with a stop a hit", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(P .. " stat --backend uprobe --ring-pages 4096 --sample 0.01 -r spin "
      .. "-e task-clock examples/loop 1 20000")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("caught by uprobe", 1, true), out)
    assert.falsy(err:find("ptrace", 1, true), err)
    assert.truthy(out:find("sampled: %d+ of 20000 calls recorded"), out)
    local _, err2, rc2 = support.sh(P .. " tail --backend uprobe --every 10 -r spin -e task-clock "
      .. "examples/loop 1 20000")
    assert.are.equal(0, rc2, err2)
    assert.falsy(err2:find("ptrace", 1, true), err2)
    assert.truthy(err2:find("perfsh tail: spin: 2000 hits sampled of 20000", 1, true), err2)
  end)

  it("perfsh stat --every prints and saves the same fields as under ptrace", function()
    if not need_uprobes(pending) then return end
    local fields = {}
    for _, b in ipairs{"ptrace", "uprobe"} do
      local file = os.tmpname()
      local out, err, rc = support.sh(("%s stat --backend %s%s --every 100 --save %s -r spin -e task-clock "
        .. "examples/loop 1 20000"):format(P, b, b == "uprobe" and " --ring-pages 4096" or "", file))
      assert.are.equal(0, rc, err)
      assert.truthy(out:find("caught by " .. b, 1, true), out)
      assert.truthy(out:find("region spin (func, 200 hits, sampled from 20000 calls)", 1, true), out)
      assert.truthy(out:find("sampled: 200 of 20000 calls recorded; estimated totals scale by 100.00\n"), out)
      assert.truthy(out:find("estimated totals over all calls: task-clock ", 1, true), out)
      local f <close> = perfsh.load(file)
      fields[b] = {f.meta["entries.0"], f.meta["sampled.0"], f.meta["kind.0"], #f.regions[1]:list()}
      os.remove(file)
    end
    assert.are.same({"20000", "1", "func", 200}, fields.uprobe)
    assert.are.same(fields.ptrace, fields.uprobe)
  end)
end)

describe("the uprobe catcher and files", function()
  it("probes a library function before the library is mapped", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(P .. " stat --backend uprobe -r libc.so.6:srand -r libc.so.6:srandom "
      .. "-e task-clock examples/sum")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("region libc.so.6:srand (func, 1 hit)", 1, true), out)
    assert.falsy(err:find("every process", 1, true), err) -- the probe is the traced process's alone
  end)

  -- A perf uprobe opened for one process is installed in that process's memory only: another
  -- process calling the same libc function does not trap. Its CPU time a call (randloop measures
  -- CLOCK_THREAD_CPUTIME_ID, so what else runs does not count) stays within 2x of its time
  -- alone, where a trap a call would make it some 500x (10 us against 20 ns).
  it("probes a library function in the measured process only: another process calling it is not slowed",
    function()
    if not need_uprobes(pending) then return end
    local bin = os.tmpname()
    local _, err, rc = support.sh(("cc -O2 -o %s tests/fixtures/randloop.c"):format(bin))
    assert.are.equal(0, rc, err)
    local function per_call(out) return tonumber(out:match("calls, ([%d.]+) ns a call")) end
    local alone = per_call(support.sh(bin .. " 0.3"))
    -- the measured randloop calls random() for 2.5 s of CPU time, a trap each: the other one runs
    -- 0.3 s of CPU time from 1 s after perfsh started, well inside it
    local p = io.popen(("%s stat --backend uprobe -r libc.so.6:random -e task-clock %s 2.5 2>&1"):format(P, bin))
    os.execute("sleep 1")
    local beside = per_call(support.sh(bin .. " 0.3"))
    local out = p:read("a")
    p:close()
    os.remove(bin)
    local hits = tonumber((out:match("region libc%.so%.6:random %(func, ([%d,]+) hits") or ""):gsub(",", ""), 10)
    assert.is_true(hits and hits > 1000, out)
    assert.is_true(alone and beside and beside < 2 * alone,
      ("random() took %s ns a call alone and %s ns beside the probed process"):format(alone, beside))
  end)

  it("keeps a region across an exec of the same program, and drops it, with a note, after an exec of another",
    function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(P .. " stat --backend uprobe -r work -e task-clock examples/reexec")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("region work (func, 2 hits)", 1, true), out)
    out, err, rc = support.sh(P .. " stat --backend uprobe -r work -e task-clock examples/reexec true")
    assert.are.equal(0, rc, err)
    assert.truthy(err:find("^perfsh: region 'work' dropped after exec of /usr/bin/true: its probes are in /"), err)
    assert.truthy(out:find("region work (func, 1 hit, dropped: after exec of /usr/bin/true", 1, true), out)
  end)
end)

describe("the uprobe catcher and exceptions", function()
  local dir = os.tmpname()
  os.remove(dir)
  local exe, cond = dir .. "/exc", dir .. "/condtail_cxx"

  setup(function()
    assert(os.execute("mkdir -p " .. support.q(dir)))
    local _, err, rc = support.sh(("g++ -O2 -g -o %s tests/fixtures/exc.cpp"):format(support.q(exe)))
    assert.are.equal(0, rc, err)
    _, err, rc = support.sh(("g++ -O2 -x c++ -o %s tests/fixtures/condtail.c"):format(support.q(cond)))
    assert.are.equal(0, rc, err)
  end)
  teardown(function() os.execute("rm -rf " .. support.q(dir)) end)

  it("catches a function region of a program that can unwind at its exits: its exceptions pass", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(("%s stat --backend uprobe -r middle -e task-clock %s"):format(P, exe))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("^sum=27 caught=3 total=%-30\n"), out)
    assert.truthy(out:find("region middle (func, 6 hits, 3 incomplete (unwound or exited))", 1, true), out)
  end)

  it("refuses one whose exits cannot be found (a uretprobe would make it terminate), with the code "
    .. "core.errors.needs_ptrace, which perfsh stat's auto branches on (not the text)", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(("%s stat --backend uprobe -r ct_jump -e task-clock %s"):format(P, cond))
    assert.are.same({2, ""}, {rc, out})
    local why = err:match("^perfsh stat: region 'ct_jump': its exits cannot be found (%b()), ")
    assert.truthy(why, err)
    assert.are.equal(("perfsh stat: region 'ct_jump': its exits cannot be found %s, and %s can unwind exceptions "
      .. "(C++, Rust): an unwinder that meets the return address a uretprobe put in place terminates the program; "
      .. "it needs the ptrace catcher (--backend ptrace)\n"):format(why, cond), err)
    local t <close> = perfsh.spawn{cond, events = {"task-clock"}, backend = "uprobe", stdout = "/dev/null"}
    local r, twhy, code = t:try_region{func = "ct_jump"}
    assert.is_nil(r)
    assert.are.equal(core.errors.needs_ptrace, code)
    assert.truthy(twhy:find("can unwind exceptions", 1, true), twhy)
    assert.are.same({-1, -2, -3}, {core.errors.usage, core.errors.notfound, core.errors.needs_ptrace})
    local _, _, ucode = t:try_region{func = "no_such_function"}
    assert.are_not.equal(core.errors.needs_ptrace, ucode)
  end)

  it("auto runs a C++ program under inproc, else under uprobe and one such function under ptrace, with a note; "
    .. "all unharmed", function()
    local out, err, rc = support.sh(("%s stat --backend auto -r middle -e task-clock %s"):format(P, exe))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("sum=27 caught=3 total=-30\n", 1, true), out)
    assert.truthy(out:find("caught by " .. support.auto_catcher(), 1, true), out)
    out, err, rc = support.sh(("%s stat --backend auto -r ct_jump -e task-clock %s"):format(P, cond))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("^sum=100\n"), out)
    assert.truthy(out:find("region ct_jump (func, 10 hits)", 1, true), out)
    if core.inproc_available() then -- its return address swapped in-process: no exit to find
      assert.truthy(out:find("caught by inproc", 1, true), out)
      assert.are.equal("", err)
      return
    end
    assert.truthy(out:find("caught by ptrace", 1, true), out)
    if core.uprobe_available() then
      assert.truthy(err:find("^perfsh stat: note: backend auto: ptrace, as region ct_jump needs it: "), err)
    end
  end)
end)

describe("perfsh killed by SIGKILL during an attach", function()
  -- The default catcher takes uprobe for -p, so a perfsh that dies (kill -9, the OOM killer, a
  -- lost ssh session) leaves nothing in the target: the kernel drops a dead perfsh's probes with
  -- its perf events, and its ptrace ties (threads seen starting) end without a signal.
  local function wait_for(pred, seconds)
    for _ = 1, seconds * 20 do
      local v = pred()
      if v then return v end
      os.execute("sleep 0.05")
    end
  end
  local slurp = support.read_if

  it("leaves the target running to its normal end, with its own output and exit status", function()
    if not need_uprobes(pending) then return end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. support.q(dir)))
    -- 4 threads x 40,000 calls of work(100000): some seconds of work, attached while it runs
    local p = io.popen(("(examples/threads 40000 100000 4 >%s/out 2>&1; echo $? >%s/rc) >/dev/null 2>&1 & echo $!")
      :format(dir, dir))
    local sub = p:read("l")
    p:close()
    local target = wait_for(function()
      local f = io.popen("pgrep -P " .. sub)
      local pid = f:read("l")
      f:close()
      return pid
    end, 5)
    assert.truthy(target, "the target never started")
    p = io.popen(("env -u PERFSH_BACKEND %s stat -p %s -r work --seconds 60 >%s/perfsh.out 2>%s/perfsh.err & echo $!")
      :format(P, target, dir, dir))
    local ppid = p:read("l")
    p:close()
    -- the probes are in and firing once the kernel has mapped the target's out-of-line page
    local probed = wait_for(function()
      local maps = slurp("/proc/" .. target .. "/maps")
      return maps and maps:find("[uprobes]", 1, true)
    end, 20)
    local err = slurp(dir .. "/perfsh.err") or ""
    os.execute("kill -KILL " .. ppid .. " 2>/dev/null")
    assert.truthy(probed, "no probe fired in the target before perfsh was killed: " .. err)
    local rc = wait_for(function() return slurp(dir .. "/rc") end, 120)
    local out = slurp(dir .. "/out")
    os.execute("rm -rf " .. support.q(dir))
    assert.are.equal("0\n", rc)
    assert.are.equal("calls = 160000\n", out)
    assert.falsy(err:find("backend auto: ptrace", 1, true), err)
  end)
end)

describe("a Rust program (examples/grocery_rs: a method called from scoped threads)", function()
  local exe = "examples/grocery_rs"
  local function hits(out)
    return tonumber(out:match("region update_product %(func, (%d+) hits?[,)]"))
  end

  it("is caught by the default catcher (in-process where the agent is built) with the same hits as ptrace: "
    .. "every call of Product::update_product",
    function()
    if not io.open(exe) then
      pending("examples/grocery_rs is not built: rustc is not installed (make deps installs it)")
      return
    end
    -- 300 products, 4 rounds, 3 threads: 1,200 calls
    local cmd = " stat -r update_product -e task-clock " .. exe .. " 300 4 3"
    local out, err, rc = support.sh("env -u PERFSH_BACKEND " .. P .. cmd)
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    assert.truthy(out:find("updates = 1200\n", 1, true), out)
    assert.are.equal(1200, hits(out), out)
    assert.truthy(out:find("caught by " .. support.auto_catcher(), 1, true), out)
    local pout, perr, prc = support.sh(P .. " stat --backend ptrace -r update_product -e task-clock " .. exe
      .. " 300 4 3")
    assert.are.equal(0, prc, perr)
    assert.truthy(pout:find("caught by ptrace", 1, true), pout)
    assert.are.equal(1200, hits(pout), pout)
  end)
end)

describe("inlined copies", function()
  -- tests/fixtures/inline_both.c: step() inlined into main (A calls) and out of line (B calls,
  -- and D levels of calls through a pointer from each call, nested inside the inlined copy);
  -- fib(F) inlined into itself, its copies run again by the recursion in deeper frames; leap()
  -- inlined into jumper() N times, every Jth call left by a longjmp
  local dir = os.tmpname()
  os.remove(dir)
  local exe = dir .. "/inline_both"

  setup(function()
    assert(os.execute("mkdir -p " .. support.q(dir)))
    local _, err, rc = support.sh(("cc -O2 -g -o %s tests/fixtures/inline_both.c"):format(support.q(exe)))
    assert.are.equal(0, rc, err)
  end)
  teardown(function() os.execute("rm -rf " .. support.q(dir)) end)

  -- per region name: its kind, hits, entries and each record's hit, depth and flags; with the info
  local function run(backend, every)
    local t <close> = perfsh.spawn{exe, "30", "50", "2", "12", "30", "3", events = {"task-clock"},
      stdout = "/dev/null", backend = backend}
    t:region{func = "step", every_level = every}
    t:region{func = "fib", every_level = every}
    t:region{func = "leap", every_level = every}
    assert.are.equal(0, t:run().code)
    local got = {}
    for _, r in ipairs(t.regions) do
      local meta = t:region_meta(r.id)
      local recs = {}
      for h in r:hits() do
        recs[#recs + 1] = {hit = h.hit, depth = h.depth, flags = h.flags, unwound = h.unwound}
        assert.is_true(h.time_ns > 0, r.name) -- an end where the copy starts would make it 0
      end
      got[r.name] = {kind = meta.kind, hits = r:stats().hits, entries = meta.entries, records = recs}
    end
    return got, t:info()
  end

  it("the uprobe catcher catches a function's inlined copies with the same records as ptrace, never a stop a hit",
    function()
      if not need_uprobes(pending) then return end
      for _, every in ipairs{false, true} do
        local want = run("ptrace", every)
        local got, info = run("uprobe", every)
        assert.are.equal("range", want["step@inline#0 in main"].kind)
        assert.are.equal(30, want["step@inline#0 in main"].hits)
        assert.are.equal(every and 210 or 80, want.step.hits)
        assert.are.equal(every and 11 or 1, want.fib.hits) -- fib(12): 11 calls out of line
        local copies = 0
        for name, r in pairs(want) do
          if name:find("^fib@inline#%d+ in fib$") then
            copies = copies + 1
            assert.is_true(r.hits >= 1 and r.hits <= r.entries, name)
          end
        end
        assert.is_true(copies >= 1, "gcc -O2 inlined fib into itself")
        -- calls 0, 3, ..., 27 left by a longjmp: each ends unwound where the next one starts
        local leap, unwound = want["leap@inline#0 in jumper"], 0
        for _, rec in ipairs(leap.records) do
          if rec.unwound then unwound = unwound + 1 end
        end
        assert.are.same({30, 10}, {#leap.records, unwound})
        assert.are.same(want, got)
        assert.are.equal("uprobe", info.catcher)
        assert.is_true(info.stops <= 2, tostring(info.stops))
      end
    end)

  it("an exception thrown through an inlined copy: the program runs on, the hit that threw is unwound", function()
    if not need_uprobes(pending) then return end
    local cxx = dir .. "/inline_throw"
    local _, err, rc = support.sh(("g++ -O2 -g -o %s tests/fixtures/inline_throw.cpp"):format(support.q(cxx)))
    assert.are.equal(0, rc, err)
    for _, b in ipairs{"ptrace", "uprobe"} do
      local out
      out, err, rc = support.sh(("%s stat --backend %s -r twirl -e task-clock %s 20"):format(P, b, cxx))
      assert.are.equal(0, rc, err)
      assert.truthy(out:find("^s=%d+ caught=5\n"), out)
      assert.truthy(out:find("caught by " .. b, 1, true), out)
      assert.truthy(out:find("\nregion twirl@inline#0 in main (range, 15 hits, 5 incomplete (unwound or exited))\n", 1,
        true), out)
    end
  end)

  it("perfsh stat --backend uprobe and auto report the copies as ptrace does", function()
    local lines = {}
    for _, b in ipairs{"ptrace", "uprobe", "auto"} do
      if b == "ptrace" or need_uprobes(pending) then
        local out, err, rc = support.sh(("%s stat --backend %s -r step -e task-clock %s 30 50 2"):format(P, b, exe))
        assert.are.equal(0, rc, err)
        local regions = {}
        for r in out:gmatch("\n(region [^\n]*)") do regions[#regions + 1] = r end
        lines[#lines + 1] = table.concat(regions, "\n")
        if b ~= "ptrace" then assert.truthy(out:find("caught by uprobe; 1 stop\n", 1, true), out) end
      end
    end
    assert.are.equal("region step (func, 80 hits, 130 nested entries)\nregion step@inline#0 in main (range, 30 hits)",
      lines[1])
    for i = 2, #lines do assert.are.equal(lines[1], lines[i]) end
  end)
end)
