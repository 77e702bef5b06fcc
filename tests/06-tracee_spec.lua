-- Regions in unmodified binaries: functions, recursion, threads, line ranges, crashes.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")

local events, line_of = support.events, support.line_of

describe("a function region", function()
  it("records one hit of sum in a PIE binary", function()
    local t <close> = perfsh.spawn{"examples/sum", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "sum"}
    local st = assert(t:run())
    assert.is_true(st.exited)
    assert.are.equal(0, st.code)
    local s = r:stats()
    assert.are.equal(1, s.hits)
    assert.are.equal(1, r:info().entries)
    assert.is_true(s.time_ns.sum > 0)
    assert.are.equal(s["task-clock"].sum, s.time_ns.sum) -- time_enabled is the on-CPU time
  end)

  it("works the same in a non-PIE binary", function()
    local t <close> = perfsh.spawn{"examples/sum-nopie", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "sum"}
    assert.are.equal(0, t:run().code)
    assert.are.equal(1, r:stats().hits)
    assert.is_true(r:info().addr < 0x1000000) -- linked at a fixed low address
  end)

  it("counts the instructions of sum exactly (22,500,009 per callgrind, within 0.5%)", function()
    if not support.need_pmu(pending) then return end
    for _, exe in ipairs{"examples/sum", "examples/sum-nopie"} do
      local t <close> = perfsh.spawn{exe, events = {"instructions"}}
      local r = t:region{func = "sum"}
      t:run()
      local got = r:stats().instructions.sum
      assert.is_true(math.abs(got - 22500009) <= 22500009 * 0.005, exe .. ": " .. got)
    end
  end)

  it("counts 3n+6 instructions of spin(n) per hit, within 0.5%", function()
    if not support.need_pmu(pending) then return end
    local t <close> = perfsh.spawn{"examples/loop", "100000", "7", events = {"instructions"}}
    local r = t:region{func = "spin"}
    t:run()
    local n = 0
    for h in r:hits() do
      n = n + 1
      assert.is_true(math.abs(h.instructions - 300006) <= 300006 * 0.005, "hit " .. h.hit .. ": " .. h.instructions)
    end
    assert.are.equal(7, n)
  end)

  it("attributes a counter to each hit exactly (page faults of touch_pages, any machine)", function()
    local t <close> = perfsh.spawn{"examples/attribute", "60", "pages", events = {"page-faults"},
      stdout = "/dev/null"}
    local r = t:region{func = "touch_pages", args = {"a", "b", "c"}}
    assert.are.equal(0, t:run().code)
    local n = 0
    for h in r:hits() do
      n = n + 1
      support.assert_touch_pages(h)
    end
    assert.are.equal(60, n)
  end)

  it("keeps outermost calls of a recursion only, by default", function()
    local t <close> = perfsh.spawn{"examples/recursive", "5", "10", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "walk"}
    t:run()
    local s = r:stats()
    assert.are.equal(5, s.hits)
    assert.are.equal(55, r:info().entries)
    for h in r:hits() do assert.are.equal(0, h.depth) end
  end)

  it("records every level of a recursion on request", function()
    local t <close> = perfsh.spawn{"examples/recursive", "5", "10", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "walk", every_level = true}
    t:run()
    assert.are.equal(55, r:stats().hits)
    local per_depth = {}
    for h in r:hits() do per_depth[h.depth] = (per_depth[h.depth] or 0) + 1 end
    for d = 0, 10 do assert.are.equal(5, per_depth[d], "depth " .. d) end
  end)

  it("records every call of two threads in the same function at once", function()
    local t <close> = perfsh.spawn{"examples/threads", "500", "2000", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "work"}
    assert.are.equal(0, t:run().code)
    local per_tid, n = {}, 0
    for h in r:hits() do
      per_tid[h.tid] = (per_tid[h.tid] or 0) + 1
      n = n + 1
      assert.is_false(h.unwound)
    end
    assert.are.equal(1000, n)
    local tids = {}
    for tid, c in pairs(per_tid) do
      tids[#tids + 1] = tid
      assert.are.equal(500, c)
    end
    assert.are.equal(2, #tids)
    assert.are.equal(1000, r:info().entries)
  end)

  it("makes each inlined copy of a function a region of its own", function()
    local t <close> = perfsh.spawn{"examples/inlined", "30", "50", events = events(), stdout = "/dev/null"}
    local first = t:region{func = "mix"}
    assert.are.equal(0, t:run().code)
    assert.are.equal(2, #t.regions)
    assert.are.equal(first, t.regions[1])
    local hits = {}
    for _, r in ipairs(t.regions) do
      assert.truthy(r.name:match("^mix@inline#%d+ in main$"), r.name)
      hits[#hits + 1] = r:stats().hits
    end
    table.sort(hits)
    assert.are.same({30, 50}, hits)
  end)

  it("arms a C++ method by its demangled name", function()
    local t <close> = perfsh.spawn{"examples/cxx", "25", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "geo::Shape::area"}
    t:run()
    assert.are.equal(25, r:stats().hits)
  end)

  it("arms a function of a shared library once it is mapped", function()
    local t <close> = perfsh.spawn{"examples/threads", "10", "10", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "libc.so.6:pthread_create"}
    assert.is_true(r:info().pending)
    assert.are.equal(0, t:run().code)
    assert.is_false(r:info().pending)
    assert.are.equal(2, r:stats().hits)
  end)

  it("arms a function of a library loaded later with dlopen", function()
    local exe = os.tmpname()
    local _, err, rc = support.sh(("cc -O2 -o %s tests/fixtures/dl.c -ldl"):format(exe))
    assert.are.equal(0, rc, err)
    local t <close> = perfsh.spawn{exe, events = events(), stdout = "/dev/null"}
    local r = t:region{func = "libm.so.6:frexp"}
    assert.is_true(r:info().pending)
    assert.are.equal(0, t:run().code)
    assert.is_false(r:info().pending)
    assert.are.equal(5, r:stats().hits)
    os.remove(exe)
  end)

  it("refuses an IFUNC (its symbol is the resolver) with the reason", function()
    local t <close> = perfsh.spawn{"examples/sum", events = events(), stdout = "/dev/null", stderr = "/dev/null"}
    local r = t:region{func = "libc.so.6:memcpy"}
    t:run()
    local info = r:info()
    assert.is_true(info.dropped)
    assert.truthy(info.why:find("memcpy is an IFUNC: the loader picks one of its implementations", 1, true), info.why)
  end)

  it("fails on an unknown function with the closest names", function()
    local t <close> = perfsh.spawn{"examples/sum", events = events(), stdout = "/dev/null"}
    assert.has.error(function() t:region{func = "summ"} end,
      "no function 'summ' in " .. support.abspath("examples/sum") .. "; did you mean 'sum', 'main' or '_init'?")
  end)

  it("says a stripped binary is stripped", function()
    local t <close> = perfsh.spawn{"examples/sum-stripped", events = events(), stdout = "/dev/null"}
    assert.has.error(function() t:region{func = "sum"} end, support.abspath("examples/sum-stripped")
      .. " is stripped (no .symtab): rebuild it without -s (with -g for line regions), or give the function's"
      .. " address, -r 0xADDR (as nm prints it on an unstripped build)")
  end)
end)

describe("a library loaded later with dlopen, under the uprobe catcher", function()
  local dir = os.tmpname()
  os.remove(dir)
  local exe, runpath, copy = dir .. "/dl", dir .. "/dl-runpath", dir .. "/libm.so.6"
  local P = support.perfsh

  setup(function()
    assert(os.execute("mkdir -p " .. support.q(dir)))
    local _, err, rc = support.sh(("cc -O2 -o %s tests/fixtures/dl.c -ldl"):format(support.q(exe)))
    assert.are.equal(0, rc, err)
    -- a copy of libm, which only the program with a RUNPATH there loads
    _, err, rc = support.sh(('cp -L "$(cc -print-file-name=libm.so.6)" %s'):format(support.q(copy)))
    assert.are.equal(0, rc, err)
    _, err, rc = support.sh(("cc -O2 -o %s tests/fixtures/dl.c -ldl -Wl,-rpath,%s -Wl,--enable-new-dtags")
      :format(support.q(runpath), support.q(dir)))
    assert.are.equal(0, rc, err)
  end)
  teardown(function() os.execute("rm -rf " .. support.q(dir)) end)

  it("is probed in the file its loader will map: every hit caught, and the program never stops for one", function()
    if not support.need_uprobes(pending) then return end
    local t <close> = perfsh.spawn{exe, events = events(), backend = "uprobe", stdout = "/dev/null"}
    local r = t:region{func = "libm.so.6:frexp"}
    assert.is_true(r:info().pending)
    assert.are.equal(0, t:run().code)
    assert.are.equal("uprobe", t.catcher)
    local info = r:info()
    assert.is_false(info.pending)
    assert.is_true(info.addr > 0, "the entry where libm was mapped")
    assert.are.equal(5, r:stats().hits)
    assert.are.equal(5, info.entries)
    assert.is_true(t:info().stops <= 2, "stops " .. t:info().stops) -- its exec, never a hit
  end)

  it("is found where its loader finds it: the program's RUNPATH before the system's directories", function()
    if not support.need_uprobes(pending) then return end
    -- probed in the system's libm, the hits would be 0 and the region dropped (the copy is mapped)
    local t <close> = perfsh.spawn{runpath, events = events(), backend = "uprobe", stdout = "/dev/null"}
    local r = t:region{func = "libm.so.6:frexp"}
    assert.are.equal(0, t:run().code)
    assert.are.equal(5, r:stats().hits)
    assert.is_false(r:info().pending)
    assert.is_false(r:info().dropped)
  end)

  it("is found with the program's own environment (LD_LIBRARY_PATH), when perfsh attaches to it", function()
    if not support.need_uprobes(pending) then return end
    local go, out = dir .. "/go", dir .. "/attach.out"
    os.remove(go)
    -- perfsh's environment has no LD_LIBRARY_PATH: the program's finds the copy
    local text, err, rc = support.sh(([=[
      LD_LIBRARY_PATH=%s %s %s > /dev/null & T=$!
      env -u LD_LIBRARY_PATH %s stat --backend uprobe -p $T -r libm.so.6:frexp -e task-clock > %s 2>&1 & S=$!
      for i in $(seq 200); do grep -q "^TracerPid:[[:space:]]*[1-9]" /proc/$T/status && break; sleep 0.05; done
      touch %s
      wait $S; echo "perfsh=$?"
      wait $T; echo "target=$?"
    ]=]):format(support.q(dir), support.q(exe), support.q(go), P, support.q(out), support.q(go)))
    assert.are.equal(0, rc, err)
    assert.truthy(text:find("perfsh=0\ntarget=0", 1, true), text)
    local st = support.read_if(out) or ""
    assert.truthy(st:find("caught by uprobe", 1, true), st)
    assert.truthy(st:find("region libm.so.6:frexp (func, 5 hits)", 1, true), st)
  end)

  it("is caught by uprobe by default (no --backend)", function()
    if not support.need_uprobes(pending) then return end
    local out, err, rc = support.sh(("env -u PERFSH_BACKEND %s stat -r libm.so.6:frexp -e task-clock %s")
      :format(P, exe))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("caught by uprobe", 1, true), out)
    assert.truthy(out:find("region libm.so.6:frexp (func, 5 hits)", 1, true), out)
    assert.falsy(err:find("ptrace", 1, true), err)
  end)

  it("stays pending where the program never maps its library, as under ptrace", function()
    if not support.need_uprobes(pending) then return end
    for _, backend in ipairs{"uprobe", "ptrace"} do
      local t <close> = perfsh.spawn{"examples/sum", events = events(), backend = backend, stdout = "/dev/null"}
      local r = t:region{func = "libm.so.6:frexp"}
      assert.is_true(r:info().pending)
      assert.are.equal(0, t:run().code)
      assert.is_true(r:info().pending, backend)
      assert.are.equal(0, r:stats().hits)
    end
  end)

  it("is dropped with the reason where the program maps another file of that name", function()
    if not support.need_uprobes(pending) then return end
    local t <close> = perfsh.spawn{exe, events = events(), backend = "uprobe", stdout = "/dev/null",
      stderr = "/dev/null"}
    local r = t:region{func = copy .. ":frexp"}
    assert.is_true(r:info().pending)
    assert.are.equal(0, t:run().code)
    local info = r:info()
    assert.is_false(info.pending)
    assert.is_true(info.dropped)
    assert.are.equal(0, r:stats().hits)
    local mapped = info.why:match("^the program mapped (%S+), not ")
    assert.truthy(mapped, info.why)
    assert.are.equal(("the program mapped %s, not %s where it was probed: its hits were not caught; name that file "
      .. "(%s:FUNCTION), or use --backend ptrace"):format(mapped, copy, mapped), info.why)
  end)

  it("refuses a library name its loader finds no file for, in one line that says what to do", function()
    if not support.need_uprobes(pending) then return end
    for _, how in ipairs{"--backend uprobe", ""} do
      local out, err, rc = support.sh(("env -u PERFSH_BACKEND %s stat %s -r libnothere.so.1:f -e task-clock %s")
        :format(P, how, exe))
      assert.are.same({2, ""}, {rc, out})
      assert.are.equal(("perfsh stat: region 'libnothere.so.1:f': %s loads no library 'libnothere.so.1' at start, "
        .. "and its loader finds no file of that name to load later; name the library by its path "
        .. "(/DIR/FILE.so:FUNCTION), or use --backend ptrace, which arms it once the program maps it\n"):format(exe),
        err)
    end
  end)
end)

describe("t:run()", function()
  it("pauses after N hits, after a time, or when a predicate holds, then goes on", function()
    local t <close> = perfsh.spawn{"examples/threads", "200", "100", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "work"}
    local st, how = t:run{hits = 10}
    assert.is_nil(st)
    assert.are.equal("paused", how)
    local n = r:stats().hits
    assert.is_true(n >= 10 and n < 400)
    local _
    _, how = t:run{["until"] = function() return r:stats().hits >= 50 end}
    assert.are.equal("paused", how)
    n = r:stats().hits
    assert.is_true(n >= 50 and n < 400)
    st = t:run()
    assert.are.equal(0, st.code)
    assert.are.equal(400, r:stats().hits)
  end)
end)

describe("a line range", function()
  it("has one hit per repetition of the loop, and the program's result is unchanged", function()
    local b, e = line_of("examples/loop.c", "/* LOOP-BEGIN */"), line_of("examples/loop.c", "/* LOOP-END */")
    local out = os.tmpname()
    local t <close> = perfsh.spawn{"examples/loop", "20000", "6", events = events(), stdout = out}
    local r = t:region{range = ("loop.c:%d-loop.c:%d"):format(b, e)}
    assert.are.equal(0, t:run().code)
    local f = assert(io.open(out))
    assert.are.equal("total = 120000\n", f:read("a"))
    f:close()
    os.remove(out)
    assert.are.equal(6, r:stats().hits)
    if core.pmu_present() then
      for h in r:hits() do -- spin(20000) is 60006 instructions; main adds a handful
        assert.is_true(h.instructions >= 60006 and h.instructions <= 60006 + 20, tostring(h.instructions))
      end
    end
  end)

  it("accepts from/to and reports a bad line", function()
    local t <close> = perfsh.spawn{"examples/loop", "10", "2", events = events(), stdout = "/dev/null"}
    assert.has.error(function() t:region{from = "loop.c:9999", to = "loop.c:10000"} end)
    local ok, err = pcall(t.region, t, {from = "nosuch.c:3", to = "nosuch.c:5"})
    assert.is_false(ok)
    assert.truthy(err:find("nosuch.c", 1, true))
  end)
end)

describe("the target's end", function()
  it("reports a crash inside a region by signal name and keeps the earlier hits", function()
    local t <close> = perfsh.spawn{"examples/crash", events = events(), stderr = "/dev/null"}
    local r = t:region{func = "step"}
    local st = t:run()
    assert.is_false(st.exited)
    assert.are.equal("SIGSEGV", st.signal)
    local s = r:stats()
    assert.are.equal(4, s.hits)
    assert.are.equal(1, s.incomplete)
    local complete = 0
    for h in r:hits() do if not (h.unwound or h.exited) then complete = complete + 1 end end
    assert.are.equal(4, complete)
  end)

  it("detaches from an attached process, which then finishes as if never traced", function()
    local u = io.popen("examples/threads 20000 20000")
    local untraced = u:read("a")
    u:close()
    local p, pid = support.background("examples/threads", "20000 20000")
    local t <close> = perfsh.attach(pid, {events = events(), stdout = "/dev/null"})
    local r = t:region{func = "work"}
    local _, how = t:run{hits = 50}
    assert.are.equal("paused", how)
    t:detach()
    assert.is_true(r:stats().hits >= 50)
    t:close()
    local rest = p:read("a")
    assert.is_true(p:close())
    assert.are.equal(untraced, rest)
  end)
end)

describe("signals", function()
  it("delivers the target's own signals unchanged", function()
    local out = os.tmpname()
    local t <close> = perfsh.spawn{"sh", "-c", "trap 'echo got' USR1; kill -USR1 $$; echo done", stdout = out}
    assert.are.equal(0, t:run().code)
    local f = io.open(out)
    assert.are.equal("got\ndone\n", f:read("a"))
    f:close()
    os.remove(out)
    local k <close> = perfsh.spawn{"sh", "-c", "kill -TERM $$"}
    local st = k:run()
    assert.are.equal("SIGTERM", st.signal)
  end)
end)

describe("fork and exec", function()
  it("releases forked children by default and follows them on request", function()
    local t <close> = perfsh.spawn{"examples/forker", events = events(), stderr = "/dev/null"}
    local r = t:region{func = "task"}
    assert.are.equal(0, t:run().code)
    assert.are.equal(1, r:stats().hits)
    local f <close> = perfsh.spawn{"examples/forker", events = events(), stderr = "/dev/null", follow_fork = true}
    local rf = f:region{func = "task"}
    assert.are.equal(0, f:run().code)
    local tids = {}
    for h in rf:hits() do tids[#tids + 1] = h.tid end
    assert.are.equal(2, #tids)
    assert.are_not.equal(tids[1], tids[2])
  end)

  it("re-arms regions in the new image after exec", function()
    local out = os.tmpname()
    local t <close> = perfsh.spawn{"examples/reexec", events = events(), stdout = out}
    local r = t:region{func = "work"}
    assert.are.equal(0, t:run().code)
    assert.are.equal(2, r:stats().hits)
    local f = io.open(out)
    assert.are.equal("work 1\nwork 2\n", f:read("a"))
    f:close()
    os.remove(out)
  end)

  it("drops a region the new image lacks, and says why", function()
    local t <close> = perfsh.spawn{"examples/reexec", "true", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "work"}
    local saved = io.stderr
    assert.are.equal(0, t:run().code)
    assert.are.equal(1, r:stats().hits)
    local info = r:info()
    assert.is_true(info.dropped)
    assert.truthy(info.why:find("after exec of", 1, true))
    assert.truthy(saved)
  end)
end)

describe("perfsh killed by SIGKILL", function()
  it("takes its tracee with it", function()
    local perfsh_pid, child = support.perfsh_background(support.perfsh
      .. " stat -r work examples/threads 100000 100000 >/dev/null 2>&1")
    assert.truthy(child, "the tracee never started")
    os.execute("sleep 0.2")
    os.execute("kill -KILL " .. perfsh_pid)
    local gone = support.gone(child)
    assert.is_true(gone, "tracee " .. child .. " outlived perfsh")
  end)
end)
