-- The uprobe catcher's cost per thread: every thread's probes are perf events on one tracefs
-- uprobe event per site (core/catch/uprobe/uprobe_defs.h), so closing a thread's is cheap. What
-- must hold whatever the cost: every thread's hits recorded, the attached target unharmed and
-- left without a probe in its code, no trace event and no perfsh thread left behind.
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")
local P = support.perfsh

local need_uprobes = support.need_uprobes
local TRACEFS = "/sys/kernel/tracing/uprobe_events"

-- The uprobe_events lines of perfsh process @pid's trace events.
local function trace_events_of(pid)
  local f = io.open(TRACEFS)
  if not f then return {} end
  local found = {}
  for line in f:lines() do
    if line:find("^[pr]:perfsh_" .. pid .. "/") then found[#found + 1] = line end
  end
  f:close()
  return found
end

-- The same once perfsh @pid's keeper had time to delete them (it does after its last close, which
-- waits for the kernel's grace periods: up to 5 s on a loaded machine).
local function trace_events_left(pid)
  for _ = 1, 500 do
    if #trace_events_of(pid) == 0 then break end
    os.execute("sleep 0.01")
  end
  return trace_events_of(pid)
end

-- A reader of the first byte of function @sym of the program @path in process @pid's memory (its
-- file offset from nm: the examples' text is mapped at the offset it has in the file), and that
-- byte in the file. The reader returns nil once the process is gone.
local function first_byte(path, sym, pid)
  local nm = io.popen("nm " .. path)
  local off
  for line in nm:lines() do
    local a, name = line:match("^(%x+) [Tt] (%S+)$")
    if name == sym then off = tonumber(a, 16) end
  end
  nm:close()
  assert(off, sym .. " not in " .. path)
  local abs = support.abspath(path)
  local base
  for line in io.lines("/proc/" .. pid .. "/maps") do
    local s, o, file = line:match("^(%x+)%-%x+ %S+ (%x+) %S+ %S+%s+(.*)$")
    if file == abs and tonumber(o, 16) == 0 then base = tonumber(s, 16) break end
  end
  assert(base, path .. " is not mapped in " .. pid)
  local f = assert(io.open(path, "rb"))
  f:seek("set", off)
  local in_file = f:read(1):byte()
  f:close()
  return function()
    local m = io.open("/proc/" .. pid .. "/mem", "rb")
    if not m then return nil end
    m:seek("set", base + off)
    local b = m:read(1)
    m:close()
    return b and b:byte()
  end, in_file
end

-- This process's id (/proc/self read by the process itself).
local function self_pid()
  local f = assert(io.open("/proc/self/stat"))
  local pid = f:read("n")
  f:close()
  return math.tointeger(pid)
end

describe("uprobe catcher, threads", function()
  it("16 threads of one call each: every thread's hit recorded, no trace event left", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh("sh -c 'echo $$ >&2; exec " .. P
      .. " stat --backend uprobe --per-thread -r work -e task-clock examples/threads 1 100 16'")
    assert.are.equal(0, rc, err)
    local pid = assert(math.tointeger(tonumber(err:match("^(%d+)\n"))), err)
    assert.truthy(out:find("^calls = 16\n"), out)
    local tids = {}
    for tid, hits in out:gmatch("\nregion work, thread (%d+) %((%d+) hits?") do
      assert.are.equal("1", hits, out)
      tids[#tids + 1] = tid
    end
    assert.are.equal(16, #tids, out)
    assert.are.same({}, trace_events_left(pid))
  end)

  it("attach and detach: one trace event per probe for every thread; the probes are in the target's "
    .. "code while attached, gone after; the target runs to its end with the right output", function()
    if not need_uprobes(pending) then return end
    -- 4 threads, 12000 calls of ~1 ms each: it outlives perfsh's start and the attach on a loaded machine
    local target, tpid = support.background("examples/threads", "3000 1000000 4")
    local in_memory, in_file = first_byte("examples/threads", "work", tpid)
    local run = io.popen("sh -c 'echo $$; exec " .. P .. " stat --backend uprobe -p " .. tpid
      .. " --seconds 1 -r work -e task-clock 2>&1'")
    local ppid = math.tointeger(tonumber(run:read("l")))
    local armed, defined
    repeat -- until perfsh has probed it
      local b = in_memory()
      if b ~= in_file then armed, defined = b, trace_events_of(ppid) end
      os.execute("sleep 0.005")
    until armed or not b
    local out = run:read("a")
    local ok = run:close()
    assert.is_true(ok, out)
    assert.are.equal(0xcc, armed, "no probe seen in the target while perfsh was attached")
    -- the 5 threads' probes are perf events on two trace events: the entry's and its returns'
    -- (work is a leaf: a uretprobe at its entry catches them, core/catch/uprobe/upsites.c)
    assert.are.equal(2, #defined, table.concat(defined, "\n"))
    table.sort(defined)
    local at = " " .. support.abspath("examples/threads"):gsub("%p", "%%%0") .. ":(0x%x+)$"
    assert.truthy(defined[1]:find("^p:perfsh_%d+/%S+" .. at), defined[1])
    assert.truthy(defined[2]:find("^r:perfsh_%d+/%S+" .. at), defined[2])
    assert.are.equal(defined[1]:match(at), defined[2]:match(at))
    assert.truthy(out:find("caught by uprobe", 1, true), out)
    local hits = tonumber(out:match("region work %(func, (%d+) hits"))
    assert.truthy(hits and hits > 0, out)
    assert.are.equal(in_file, in_memory(), "the target died at the detach, or a probe is left in its code")
    assert.are.same({}, trace_events_left(ppid))
    assert.are.equal("calls = 12000\n", target:read("a"))
    assert.is_true(target:close())
  end)

  it("perfsh killed while attached: the target lives on without a probe, and its trace events are "
    .. "deleted", function()
    if not need_uprobes(pending) then return end
    local target, tpid = support.background("examples/threads", "3000 1000000 4")
    local in_memory, in_file = first_byte("examples/threads", "work", tpid)
    local run = io.popen("sh -c 'echo $$; exec " .. P .. " stat --backend uprobe -p " .. tpid
      .. " --seconds 30 -r work -e task-clock >/dev/null 2>&1'")
    local ppid = math.tointeger(tonumber(run:read("l")))
    local armed
    repeat
      local b = in_memory()
      armed = b ~= in_file and b
      os.execute("sleep 0.005")
    until armed or not b
    assert.are.equal(0xcc, armed, "no probe seen in the target while perfsh was attached")
    os.execute("kill -KILL " .. ppid)
    run:close()
    assert.are.equal(in_file, in_memory(), "the target died with perfsh, or a probe is left in its code")
    assert.are.same({}, trace_events_left(ppid)) -- by perfsh's keeper, which saw it die
    assert.are.equal("calls = 12000\n", target:read("a"))
    assert.is_true(target:close())
  end)

  it("perfsh.attach and detach leave no perfsh thread behind", function()
    if not need_uprobes(pending) then return end
    local task_dir = "/proc/" .. self_pid() .. "/task"
    local function nthreads()
      local n, d = 0, io.popen("ls " .. task_dir)
      for _ in d:lines() do n = n + 1 end
      d:close()
      return n
    end
    local target, tpid = support.background("examples/threads", "3000 1000000 4")
    local before = nthreads()
    do
      local t <close> = perfsh.attach(tpid, {events = {"task-clock"}, backend = "uprobe", stdout = "/dev/null"})
      local r = t:region{func = "work"}
      t:run{seconds = 0.3}
      t:detach()
      assert.is_true(r:stats().hits > 0)
    end
    local after = nthreads()
    for _ = 1, 100 do -- a closing thread ends by itself, within the kernel's grace periods
      if after <= before then break end
      os.execute("sleep 0.02")
      after = nthreads()
    end
    assert.are.equal(before, after)
    assert.are.equal("calls = 12000\n", target:read("a"))
    assert.is_true(target:close())
  end)

  it("where no tracefs is mounted, defines its events through a private mount and leaves the machine's mounts "
    .. "as they were", function()
    if not need_uprobes(pending) then return end
    if select(3, support.sh("unshare -m --propagation private true")) ~= 0 then
      pending("unshare -m does not work here (a mount namespace to take tracefs away in)")
      return
    end
    -- in a mount namespace of its own, every tracefs unmounted; then perfsh runs, and the
    -- namespace's mounts are read again
    local script = "for m in $(grep ' tracefs ' /proc/mounts | cut -d' ' -f2); do umount $m; done; "
      .. "echo before=$(grep -c ' tracefs ' /proc/mounts); "
      .. P .. " stat --backend uprobe -r work -e task-clock examples/threads 10 100 16 2>&1; "
      .. "echo after=$(grep -c ' tracefs ' /proc/mounts)"
    local out, err, rc = support.sh("unshare -m --propagation private sh -c " .. support.q(script))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("before=0\n", 1, true), out)
    assert.truthy(out:find("after=0\n", 1, true), out)
    assert.truthy(out:find("caught by uprobe", 1, true), out)
    assert.truthy(out:find("region work (func, 160 hits)", 1, true), out)
    local left = support.sh("ls /tmp | grep -c '^perfsh-tracefs-' || true")
    assert.are.equal("0\n", left)
  end)
end)
