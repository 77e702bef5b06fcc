-- The in-process catcher (--backend inproc): libperfsh-agent.so, preloaded into a program perfsh
-- starts, patches the entries of its functions with jumps to trampolines and measures each call
-- with the marker library's machinery (no trap); perfsh drains the records as the marker
-- catcher does. Hits must be those of the ptrace catcher, the program's output untouched; what
-- the agent does not do yet is refused up front in one line naming --backend uprobe.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")
local P = support.perfsh

-- Run @argv under @backend with function regions @funcs (opts: every_level); returns the
-- regions' stats, first arguments (sorted) and records {first argument, unwound} (sorted by it),
-- by function, the program's stdout and its exit code.
local function measure(backend, argv, funcs, opts)
  local out = os.tmpname()
  local spec = {backend = backend, events = {"task-clock"}, stdout = out}
  for i, a in ipairs(argv) do spec[i] = a end
  local t <close> = perfsh.spawn(spec)
  local regions = {}
  for _, f in ipairs(funcs) do
    regions[f] = t:region{func = f, every_level = opts and opts.every_level, inline = false, args = {"a0"}}
  end
  local code = t:run().code
  local res = {}
  for f, r in pairs(regions) do
    local args, recs = {}, {}
    for h in r:hits() do
      args[#args + 1] = h.args and h.args[1] or -1
      recs[#recs + 1] = {args[#args], h.unwound and true or false}
    end
    table.sort(args)
    table.sort(recs, function(a, b) return a[1] < b[1] end)
    res[f] = {stats = r:stats(), args = args, records = recs}
  end
  return res, support.take(out), code
end

-- A program built by @cmd ("cc ... -o %s SRC"; %s: a temporary file), asserted to build.
local function build(cmd)
  local exe = os.tmpname()
  local _, err, rc = support.sh(cmd:format(exe))
  assert.are.equal(0, rc, err)
  return exe
end

-- The agent is built beside perfsh (make), and inproc opens the same software events.
local need_agent = support.need_agent

describe("the in-process catcher", function()
  it("measures examples/sum's sum with the hits of the ptrace catcher, the program's output untouched", function()
    if not need_agent(pending) then return end
    local plain = support.sh("examples/sum")
    local want, wout = measure("ptrace", {"examples/sum"}, {"sum"})
    local got, gout, code = measure("inproc", {"examples/sum"}, {"sum"})
    assert.are.equal(0, code)
    assert.are.equal(plain, gout)
    assert.are.equal(plain, wout)
    assert.are.equal(1, got.sum.stats.hits)
    assert.are.equal(want.sum.stats.hits, got.sum.stats.hits)
    assert.are.equal(want.sum.stats.entries, got.sum.stats.entries)
    assert.is_true(got.sum.stats.hits == 1 and #got.sum.args == 1)
  end)

  it("measures a function called from 4 threads with the hits of the ptrace catcher", function()
    if not need_agent(pending) then return end
    local argv = {"examples/threads", "500", "100", "4"}
    local want = measure("ptrace", argv, {"work"})
    local got, out, code = measure("inproc", argv, {"work"})
    assert.are.equal(0, code)
    assert.are.equal("calls = 2000\n", out)
    assert.are.equal(2000, got.work.stats.hits)
    assert.are.equal(want.work.stats.hits, got.work.stats.hits)
  end)

  it("counts a recursive walk's outermost calls and its nested entries as the ptrace catcher does", function()
    if not need_agent(pending) then return end
    local argv = {"examples/recursive", "7", "12"}
    local plain = support.sh(table.concat(argv, " "))
    local want = measure("ptrace", argv, {"walk"})
    local got, out, code = measure("inproc", argv, {"walk"})
    assert.are.equal(0, code)
    assert.are.equal(plain, out)
    assert.are.equal("checksum = " .. 7 * 13 * 14 // 2 .. "\n", out)
    assert.are.equal(7, got.walk.stats.hits)
    assert.are.equal(want.walk.stats.hits, got.walk.stats.hits)
    assert.are.equal(want.walk.stats.entries, got.walk.stats.entries)
    assert.are.same({12, 12, 12, 12, 12, 12, 12}, got.walk.args)
    assert.are.same(want.walk.args, got.walk.args)
  end)

  it("records every level of the recursion with each call's argument, as the ptrace catcher does", function()
    if not need_agent(pending) then return end
    local argv = {"examples/recursive", "3", "20"}
    local want = measure("ptrace", argv, {"walk"}, {every_level = true})
    local got, out, code = measure("inproc", argv, {"walk"}, {every_level = true})
    assert.are.equal(0, code)
    assert.are.equal("checksum = " .. 3 * 21 * 22 // 2 .. "\n", out)
    assert.are.equal(63, got.walk.stats.hits)
    assert.are.equal(want.walk.stats.hits, got.walk.stats.hits)
    for n = 0, 20 do
      for k = 1, 3 do assert.are.equal(n, got.walk.args[3 * n + k]) end -- walk(0) .. walk(20), three times each
    end
    assert.are.same(want.walk.args, got.walk.args)
  end)

  it("lets C++ exceptions pass through measured functions, the hits they cut short recorded unwound", function()
    if not need_agent(pending) then return end
    local exe = build("g++ -O2 -g -o %s tests/fixtures/exc.cpp")
    local plain = support.sh(exe)
    assert.are.equal("sum=27 caught=3 total=-30\n", plain)
    local out = os.tmpname()
    local t <close> = perfsh.spawn{exe, backend = "inproc", events = {"task-clock"}, stdout = out}
    local r = {}
    for _, f in ipairs{"middle", "thrower", "outer", "inner"} do r[f] = t:region{func = f} end
    assert.are.equal(0, t:run().code)
    os.remove(exe)
    assert.are.equal(plain, support.take(out))
    for _, f in ipairs{"middle", "thrower"} do
      assert.are.equal(6, r[f]:stats().hits, f)       -- the calls that returned
      assert.are.equal(3, r[f]:stats().incomplete, f) -- the calls the exception unwound
    end
    for _, f in ipairs{"outer", "inner"} do -- inner throws and catches inside itself
      assert.are.equal(10, r[f]:stats().hits, f)
      assert.are.equal(0, r[f]:stats().incomplete, f)
    end
  end)

  it("lets threads end by pthread_exit inside measured functions, destructors run, the hits recorded unwound",
    function()
    if not need_agent(pending) then return end
    local exe = build("g++ -O2 -g -o %s tests/fixtures/pexit.cpp -lpthread")
    assert.are.equal("sum=4 dtors=8\n", support.sh(exe))
    local got, out, code = measure("inproc", {exe}, {"body", "finish"})
    os.remove(exe)
    assert.are.equal(0, code)
    assert.are.equal("sum=4 dtors=8\n", out)
    for _, f in ipairs{"body", "finish"} do
      assert.are.equal(2, got[f].stats.hits, f)
      assert.are.equal(2, got[f].stats.incomplete, f)
    end
  end)

  it("ends the hits of calls longjmp leaves as unwound, as the ptrace catcher does", function()
    if not need_agent(pending) then return end
    local exe = build("cc -O2 -g -o %s tests/fixtures/ljmp.c")
    local want = measure("ptrace", {exe}, {"mid", "deep"})
    local got, out, code = measure("inproc", {exe}, {"mid", "deep"})
    os.remove(exe)
    assert.are.equal(0, code)
    assert.are.equal("s=1320\n", out)
    for _, f in ipairs{"mid", "deep"} do
      assert.are.equal(20, got[f].stats.hits, f)
      assert.are.equal(10, got[f].stats.incomplete, f)
      assert.are.equal(want[f].stats.hits, got[f].stats.hits, f)
      assert.are.equal(want[f].stats.incomplete, got[f].stats.incomplete, f)
    end
  end)

  it("measures Rust's update_product, called from std::thread::scope threads, with the hits of the ptrace catcher",
    function()
    if not need_agent(pending) then return end
    if not io.open("examples/grocery_rs") then
      print("# skipped: examples/grocery_rs is not built (make builds it where rustc is)")
      pending("examples/grocery_rs is not built: rustc is not installed")
      return
    end
    local function stat(backend) -- 500 products, 4 rounds, 3 threads: 2,000 calls
      local out, err, rc = support.sh(("%s stat --backend %s -r update_product -e task-clock "
        .. "examples/grocery_rs 500 4 3"):format(P, backend))
      assert.are.equal(0, rc, err)
      assert.truthy(out:find("caught by " .. backend, 1, true), out)
      return out:match("^(updates = %d+\nchecksum = [%d.]+\n)"), out:match("\n(region update_product %b())")
    end
    local out, line = stat("inproc")
    local want_out, want_line = stat("ptrace")
    assert.are.equal(support.sh("examples/grocery_rs 500 4 3"), out)
    assert.are.equal("region update_product (func, 2000 hits)", line)
    assert.are.equal(want_line, line)
    assert.are.equal(want_out, out)
  end)

  it("lets Rust panics pass through measured functions to a catch_unwind inside one: the calls they cut short "
    .. "recorded unwound, the catching call's return caught, drops run", function()
    if not need_agent(pending) then return end
    local rustc = support.find_rustc(pending)
    if not rustc then return end
    local exe = build(rustc .. " -O -g -o %s tests/fixtures/rcatch.rs")
    local got, out, code = measure("inproc", {exe, "40"}, {"guarded", "level", "risky"})
    assert.are.equal(0, code)
    assert.are.equal("returned=30 panicked=10 drops=40\n", out)
    -- guarded(i) lands the panic by a landing pad (no __cxa_begin_catch) and returns: 40 hits
    assert.are.same({40, 0}, {got.guarded.stats.hits, got.guarded.stats.incomplete})
    for _, rec in ipairs(got.guarded.records) do assert.are.same({rec[1], false}, rec) end
    -- level(i) runs a drop as the panic of risky(i) passes (a cleanup pad); i % 4 == 3 panics
    for _, f in ipairs{"level", "risky"} do
      assert.are.same({30, 10}, {got[f].stats.hits, got[f].stats.incomplete}, f)
      assert.are.equal(40, #got[f].records, f)
      for i, rec in ipairs(got[f].records) do assert.are.same({i - 1, (i - 1) % 4 == 3}, rec, f) end
    end
    -- the ptrace catcher (its breakpoint on __rust_panic_cleanup) and the uprobe catcher (which leaves the stack
    -- alone) give the same records
    for _, b in ipairs(core.uprobe_available() and {"ptrace", "uprobe"} or {"ptrace"}) do
      local want = measure(b, {exe, "40"}, {"guarded", "level", "risky"})
      for _, f in ipairs{"guarded", "level", "risky"} do
        assert.are.same(want[f].records, got[f].records, b .. " " .. f)
      end
    end
    os.remove(exe)
  end)

  it("prints a Rust panic's whole backtrace (RUST_BACKTRACE=1) through measured functions, and runs on", function()
    if not need_agent(pending) then return end
    local rustc = support.find_rustc(pending)
    if not rustc then return end
    local exe = build(rustc .. " -O -g -o %s tests/fixtures/rcatch.rs")
    local out, err, rc = support.sh(("RUST_BACKTRACE=1 %s stat --backend inproc -e task-clock -r guarded -r level "
      .. "-r risky %s 8 hook"):format(P, exe))
    os.remove(exe)
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("^returned=6 panicked=2 drops=8\n"), out)
    assert.truthy(out:find("region guarded (func, 8 hits)", 1, true), out)
    local traces = 0
    for trace in err:gmatch("stack backtrace:\n(.-)\nnote:") do
      traces = traces + 1
      local names = {}
      for _, l in ipairs(support.lines(trace)) do names[#names + 1] = l:match("^%s*%d+: (.+)") end
      local at, want = 0, {"rcatch::risky", "rcatch::level", "rcatch::guarded", "rcatch::main"}
      for _, name in ipairs(names) do
        assert.falsy(name:find("pa_", 1, true), trace) -- no agent frame: the real return addresses
        if name:find(want[at + 1], 1, true) == 1 then at = at + 1 end
        if at == #want then break end
      end
      assert.are.equal(#want, at, trace)
    end
    assert.are.equal(2, traces, err)
  end)

  it("measures functions of libraries the program links (libm's frexp, libc's pthread_create) with the hits of the "
    .. "ptrace catcher", function()
    if not need_agent(pending) then return end
    local exe = build("cc -O2 -g -fno-builtin -o %s tests/fixtures/frexp.c -lm")
    local plain = support.sh(exe .. " 1000")
    local want, wout = measure("ptrace", {exe, "1000"}, {"libm.so.6:frexp"})
    local got, out, code = measure("inproc", {exe, "1000"}, {"libm.so.6:frexp"})
    os.remove(exe)
    assert.are.equal(0, code)
    assert.are.equal(plain, out)
    assert.are.equal(plain, wout)
    assert.are.equal(1000, got["libm.so.6:frexp"].stats.hits)
    assert.are.equal(want["libm.so.6:frexp"].stats.hits, got["libm.so.6:frexp"].stats.hits)
    local argv = {"examples/threads", "10", "10", "4"}
    want = measure("ptrace", argv, {"libc.so.6:pthread_create"})
    got, out, code = measure("inproc", argv, {"libc.so.6:pthread_create"})
    assert.are.equal(0, code)
    assert.are.equal("calls = 40\n", out)
    assert.are.equal(4, got["libc.so.6:pthread_create"].stats.hits)
    assert.are.equal(want["libc.so.6:pthread_create"].stats.hits, got["libc.so.6:pthread_create"].stats.hits)
  end)

  it("refuses a function of a library loaded later by dlopen before the program runs, in one line naming "
    .. "--backend uprobe", function()
    if not need_agent(pending) then return end
    local exe = build("cc -O2 -o %s tests/fixtures/dl.c -ldl")
    local out, err, rc = support.sh(("%s stat --backend inproc -e task-clock -r libm.so.6:frexp %s"):format(P, exe))
    os.remove(exe)
    assert.are.equal(2, rc, err)
    assert.are.equal("", out)
    assert.are.equal("perfsh stat: region 'libm.so.6:frexp': the program does not link its library: one dlopen "
      .. "loads later is not mapped when the in-process agent patches; use --backend uprobe\n", err)
  end)

  it("lets glibc's backtrace() walk through measured functions to main", function()
    if not need_agent(pending) then return end
    local exe = build("cc -O2 -g -rdynamic -o %s tests/fixtures/backtrace.c")
    local got, out, code = measure("inproc", {exe}, {"mid", "deep"})
    os.remove(exe)
    assert.are.equal(0, code)
    assert.are.equal("frames=1 main=1\n", out)
    assert.are.same({1, 1}, {got.mid.stats.hits, got.deep.stats.hits})
  end)

  it("leaves every register a -fipa-ra caller keeps across the call as it was (tests/fixtures/keepregs.c)", function()
    if not need_agent(pending) then return end
    local exe = build("cc -O2 -g -o %s tests/fixtures/keepregs.c")
    local got, out, code = measure("inproc", {exe, "2000"}, {"keep"})
    os.remove(exe)
    assert.are.equal("kept 2000\n", out)
    assert.are.equal(0, code)
    assert.are.equal(2000, got.keep.stats.hits)
  end)

  it("says a program killed inside a measured call died in its region, the call incomplete, as ptrace does",
    function()
    if not need_agent(pending) then return end
    local function stat(backend)
      local out, err, rc = support.sh(("%s stat --backend %s -r step examples/crash"):format(P, backend))
      return rc, err:match("killed by SIGSEGV [^\n]*"), out:match("region step %([^\n]*")
    end
    local rc, died, region = stat("inproc")
    assert.are.equal(139, rc)
    assert.are.equal("killed by SIGSEGV in region step", died)
    assert.are.equal("region step (func, 4 hits, 1 incomplete (unwound or exited))", region)
    assert.are.same({rc, died, region}, {stat("ptrace")})
  end)

  it("opens no counter once the program locks itself with seccomp: it runs to its end, its earlier threads measured",
    function()
    if not need_agent(pending) then return end
    local exe = build("cc -O2 -g -pthread -o %s tests/fixtures/sandboxed.c")
    for _, how in ipairs{"prctl", "syscall"} do
      -- the filter kills the process at a perf_event_open: the new thread's first hit must open none
      local out, err, rc = support.sh(("%s stat --backend inproc -r work %s %s"):format(P, exe, how))
      assert.are.equal(0, rc, err)
      assert.truthy(out:find("sum 14850\n", 1, true), out)
      assert.truthy(out:find("region work (func, 200 hits)", 1, true), how .. ": " .. out)
      assert.truthy(err:find("locked itself with seccomp", 1, true), err)
    end
    os.remove(exe)
  end)

  it("records every Nth call under the live policy (t:markers{every = N}), the others counted, registers kept",
    function()
    if not need_agent(pending) then return end
    local exe = build("cc -O2 -g -o %s tests/fixtures/keepregs.c")
    local out = os.tmpname()
    local t <close> = perfsh.spawn{exe, "3000", backend = "inproc", events = {"task-clock"}, stdout = out}
    local keep = t:region{func = "keep"}
    t:markers{every = 10}
    assert.are.equal(0, t:run().code)
    os.remove(exe)
    assert.are.equal("kept 3000\n", support.take(out))
    assert.are.equal(300, keep:stats().hits)
    assert.are.equal(3000, keep:stats().entries)
  end)

  it("samples every Nth call with perfsh stat --every as the ptrace catcher does, every call counted", function()
    if not need_agent(pending) then return end
    local exe = build("cc -O2 -g -o %s tests/fixtures/keepregs.c")
    local function stat(backend)
      local out, err, rc = support.sh(("%s stat --backend %s --every 3 -r keep %s 3000"):format(P, backend, exe))
      assert.are.equal(0, rc, err)
      return out:match("region keep %(func, (%d+) hits, sampled from (%d+) calls%)")
    end
    local hits, calls = stat("inproc")
    local want = {stat("ptrace")}
    os.remove(exe)
    assert.are.equal("1000", hits)
    assert.are.equal("3000", calls)
    assert.are.same(want, {hits, calls})
  end)

  -- Line range @range of @argv under @backend: its stats (events task-clock, page-faults), the
  -- program's stdout and exit code.
  local function measure_range(backend, argv, range)
    local out = os.tmpname()
    local spec = {backend = backend, events = {"task-clock", "page-faults"}, stdout = out}
    for i, a in ipairs(argv) do spec[i] = a end
    local t <close> = perfsh.spawn(spec)
    local r = t:region{range = range}
    local code = t:run().code
    return r:stats(), support.take(out), code
  end

  it("measures a line range of examples/sum with the ptrace catcher's hit and page faults", function()
    if not need_agent(pending) then return end
    local plain = support.sh("examples/sum")
    local want = measure_range("ptrace", {"examples/sum"}, "sum.c:41-43")
    local got, out, code = measure_range("inproc", {"examples/sum"}, "sum.c:41-43")
    assert.are.equal(0, code)
    assert.are.equal(plain, out)
    assert.are.same({1, 1}, {want.hits, got.hits})
    assert.are.equal(want.entries, got.entries)
    -- the loop of lines 41-42 writes 10,000,000 numbers: 40 MB, one fault per 4 KiB page
    local pages = 10000000 * 4 // 4096
    for _, st in ipairs{want, got} do
      local faults = st["page-faults"].sum
      assert.is_true(faults >= pages * 0.99 and faults <= pages + 50, tostring(faults))
    end
    local ratio = got["task-clock"].sum / want["task-clock"].sum
    assert.is_true(ratio > 0.2 and ratio < 5, tostring(ratio))
  end)

  it("measures an address range (sum.c's lines 41 to 43 by their first addresses) as the line range", function()
    if not need_agent(pending) then return end
    local a = support.first_addr("examples/sum", "sum.c", 41)
    local b = support.first_addr("examples/sum", "sum.c", 43)
    local range = ("0x%x-0x%x"):format(a, b)
    local want = measure_range("ptrace", {"examples/sum"}, range)
    local got, _, code = measure_range("inproc", {"examples/sum"}, range)
    assert.are.equal(0, code)
    assert.are.same({1, 1}, {want.hits, got.hits})
    assert.is_true(math.abs(got["page-faults"].sum - want["page-faults"].sum) <= 10000000 * 4 // 4096 // 100)
  end)

  it("measures a line range run from 4 threads with the ptrace catcher's hits and nested entries", function()
    if not need_agent(pending) then return end
    local argv = {"examples/threads", "500", "100", "4"}
    local want = measure_range("ptrace", argv, "threads.c:33-34")
    local got, out, code = measure_range("inproc", argv, "threads.c:33-34")
    assert.are.equal(0, code)
    assert.are.equal("calls = 2000\n", out)
    assert.are.equal(2000, got.hits)
    assert.are.same({want.hits, want.entries}, {got.hits, got.entries})
  end)

  it("keeps the flags, the red zone and every register across a range's points in a leaf function", function()
    if not need_agent(pending) then return end
    local exe = build("cc -O2 -g -o %s tests/fixtures/flagsrange_main.c tests/fixtures/flagsrange.s")
    local want = measure_range("ptrace", {exe, "1000"}, "flagsrange.s:11-13")
    local got, out, code = measure_range("inproc", {exe, "1000"}, "flagsrange.s:11-13")
    os.remove(exe)
    assert.are.equal(0, code)
    assert.are.equal("505500000\n", out)
    assert.are.same({1000, 1000}, {want.hits, got.hits})
  end)

  it("ends the hits of a range open at a thread's end or the program's exit as incomplete, as under ptrace", function()
    if not need_agent(pending) then return end
    local argv = {"examples/threads", "300", "50", "3"}
    local want = measure_range("ptrace", argv, "threads.c:22-26") -- from work's loop past its return
    local got, out, code = measure_range("inproc", argv, "threads.c:22-26")
    assert.are.equal(0, code)
    assert.are.equal("calls = 900\n", out)
    assert.are.same({0, 3}, {got.hits, got.incomplete}) -- one per thread, open when it ends
    assert.are.same({want.hits, want.incomplete, want.entries}, {got.hits, got.incomplete, got.entries})
    want = measure_range("ptrace", {"examples/recursive", "7", "12"}, "recursive.c:25-30")
    got = measure_range("inproc", {"examples/recursive", "7", "12"}, "recursive.c:25-30")
    assert.are.same({0, 1}, {got.hits, got.incomplete}) -- open when main returns
    assert.are.same({want.hits, want.incomplete, want.entries}, {got.hits, got.incomplete, got.entries})
  end)

  it("counts several groups at each hit, with the ptrace catcher's values and each group's times", function()
    if not need_agent(pending) then return end
    local function run(backend)
      local t <close> = perfsh.spawn{"examples/sum", backend = backend, stdout = "/dev/null",
        groups = {{"task-clock"}, {"page-faults", "minor-faults"}}}
      local r = t:region{range = "sum.c:41-43"}
      assert.are.equal(0, t:run().code)
      local h = r:hits()()
      return r:stats(), h
    end
    local want = run("ptrace")
    local got, h = run("inproc")
    assert.are.same({1, 1}, {want.hits, got.hits})
    local pages = 10000000 * 4 // 4096
    for _, ev in ipairs{"page-faults", "minor-faults"} do
      assert.is_true(got[ev].sum >= pages * 0.99 and got[ev].sum <= pages + 50, ev .. " " .. got[ev].sum)
      assert.is_true(math.abs(got[ev].sum - want[ev].sum) <= pages // 100, ev)
    end
    -- 3 events, then the second group's (enabled, running) at the start and at the end
    assert.are.equal(5, #h.start)
    local first, second = h.enabled_end - h.enabled_start, h["end"][4] - h.start[4]
    assert.is_true(first > 0 and second > 0 and math.abs(second - first) < first / 10, first .. " " .. second)
  end)

  it("samples a line range every Nth start with perfsh stat --every, every start counted", function()
    if not need_agent(pending) then return end
    local out, err, rc = support.sh(("%s stat --backend inproc --every 3 -r threads.c:33-34 examples/threads 300 50 3")
      :format(P))
    assert.are.equal(0, rc, err)
    -- each of the 3 threads starts the range 300 times, and once more where thread_main returns
    -- inside it: every 3rd of its 301 starts recorded
    assert.truthy(out:find("region threads.c:33-34 (range, 300 hits, sampled from 903 calls)", 1, true), out)
  end)

  it("measures a function and a line range around its call in one run, nested", function()
    if not need_agent(pending) then return end
    local out = os.tmpname()
    local t <close> = perfsh.spawn{"examples/sum", backend = "inproc", events = {"task-clock"}, stdout = out}
    local sum = t:region{func = "sum"}
    local around = t:region{range = "sum.c:43-44"}
    assert.are.equal(0, t:run().code)
    assert.are.equal(support.sh("examples/sum"), support.take(out))
    assert.are.same({1, 1}, {sum:stats().hits, around:stats().hits})
    assert.is_true(around:stats()["task-clock"].sum >= sum:stats()["task-clock"].sum)
  end)

  it("leaves the program running to its normal end when perfsh is killed by SIGKILL", function()
    if not need_agent(pending) then return end
    local out = os.tmpname()
    local perfsh_pid, child = support.perfsh_background(
      ("%s stat --backend inproc --every-level -r walk examples/recursive 40000 10 >%s 2>/dev/null"):format(P, out))
    assert.truthy(child, "the program never started")
    os.execute("sleep 0.3")
    os.execute("kill -KILL " .. perfsh_pid)
    local gone = support.gone(child, 1200) -- up to a minute on a loaded machine
    assert.is_true(gone, "the program did not end")
    assert.are.equal("checksum = " .. 40000 * 11 * 12 // 2 .. "\n", support.take(out))
  end)
end)

describe("the in-process catcher refuses up front, in one line naming --backend uprobe", function()
  local function one_line(cmd)
    local out, err, rc = support.sh(cmd)
    assert.are_not.equal(0, rc)
    assert.are.equal("", out)
    local lines = support.lines(err)
    assert.are.equal(1, #lines, err)
    assert.truthy(lines[1]:find("--backend uprobe", 1, true), err)
    return lines[1]
  end

  -- one_line of perfsh stat --backend inproc -r @region on a program built by @cmd.
  local function one_line_built(cmd, region)
    local exe = build(cmd)
    local line = one_line(("%s stat --backend inproc -r %s %s"):format(P, region, exe))
    os.remove(exe)
    return line
  end

  -- Region @spec of program @exe, refused by t:try_region with the code needs_uprobe and a
  -- message naming --backend uprobe: the message.
  local function refused(exe, spec)
    local t <close> = perfsh.spawn{exe, backend = "inproc", events = {"task-clock"}, stdout = "/dev/null"}
    local r, why, code = t:try_region(spec)
    assert.is_nil(r)
    assert.are.equal(core.errors.needs_uprobe, code)
    assert.truthy(why:find("--backend uprobe", 1, true), why)
    return why
  end

  it("a line range whose start is where a branch lands inside the bytes a jmp would take", function()
    local line = one_line_built("cc -O2 -fno-align-loops -g -o %s tests/fixtures/rangebranch.c", "rangebranch.c:12-17")
    assert.truthy(line:find("region 'rangebranch.c:12-17': its start at spin+0x", 1, true), line)
    assert.truthy(line:find("lands inside the 5 bytes displaced for the patch", 1, true), line)
  end)

  it("a line range with the code needs_uprobe in Lua", function()
    if not need_agent(pending) then return end
    local exe = build("cc -O2 -fno-align-loops -g -o %s tests/fixtures/rangebranch.c")
    local why = refused(exe, {range = "rangebranch.c:12-17"})
    os.remove(exe)
    assert.truthy(why:find("its start at spin+0x", 1, true), why)
  end)

  it("a function whose entry a branch of its cold part jumps into (the relocation refuses it)", function()
    local line = one_line_built("cc -O2 -no-pie -g -o %s tests/fixtures/sitereloc.c", "er_hot")
    assert.truthy(line:find("lands inside the 6 bytes displaced", 1, true), line)
  end)

  it("sampling in time windows, with the code needs_uprobe", function()
    if not need_agent(pending) then return end
    local t <close> = perfsh.spawn{"examples/recursive", backend = "inproc", events = {"task-clock"},
      stdout = "/dev/null"}
    local r, why, code = t:try_region{func = "walk", sample = {window_ms = 5, period_ms = 100}}
    assert.is_nil(r)
    assert.are.equal(core.errors.needs_uprobe, code)
    assert.truthy(why:find("--backend uprobe", 1, true), why)
  end)

  it("a program with an unwinder of its own linked in (libgcc's, static), with the code needs_uprobe", function()
    if not need_agent(pending) then return end
    local exe = build("g++ -O2 -g -static-libgcc -static-libstdc++ -o %s tests/fixtures/exc.cpp")
    local t <close> = perfsh.spawn{exe, backend = "inproc", events = {"task-clock"}, stdout = "/dev/null"}
    local r, why, code = t:try_region{func = "thrower"}
    os.remove(exe)
    assert.is_nil(r)
    assert.are.equal(core.errors.needs_uprobe, code)
    assert.truthy(why:find("unwinder of its own", 1, true), why)
    assert.truthy(why:find("--backend uprobe", 1, true), why)
  end)

  it("a static program (no dynamic loader to preload the agent), with the code needs_uprobe", function()
    if not need_agent(pending) then return end
    local exe = os.tmpname()
    local _, err, rc = support.sh(("cc -O2 -static -o %s examples/recursive.c"):format(exe))
    if rc ~= 0 then
      os.remove(exe)
      pending("no static C library to link with: " .. err)
      return
    end
    local why = refused(exe, {func = "walk"})
    os.remove(exe)
    assert.truthy(why:find("static", 1, true), why)
  end)

  it("a program built with AddressSanitizer, whose runtime must be loaded first", function()
    if not need_agent(pending) then return end
    local exe = os.tmpname()
    local _, err, rc = support.sh(("cc -O1 -g -fsanitize=address -o %s examples/recursive.c"):format(exe))
    if rc ~= 0 then
      os.remove(exe)
      pending("no AddressSanitizer to build with: " .. err)
      return
    end
    local line = one_line(P .. " stat --backend inproc -r walk " .. exe)
    os.remove(exe)
    assert.truthy(line:find("sanitizer", 1, true), line)
  end)
end)
