-- The in-process catcher attached to a running process (--backend inproc -p PID): perfsh loads
-- the agent into it from a ptrace stop, the agent patches the function entries while every
-- thread is held, the program runs on untraced, and the detach (or perfsh's death, SIGKILL
-- included) puts the original bytes back while the program's threads run. The target,
-- tests/fixtures/attach_threads.c, checks every result of the measured function in its 4
-- threads: its output says how many were wrong.
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")
local P = support.perfsh

local SPIN = 4000
local RIGHT = "thread 0: 0 wrong\nthread 1: 0 wrong\nthread 2: 0 wrong\nthread 3: 0 wrong\n"

local need_agent = support.need_agent

-- The fixture built with @flags (a temporary file), asserted to build.
local function build(flags)
  local exe = os.tmpname()
  local _, err, rc = support.sh(("cc -O2 -g -pthread %s -o %s tests/fixtures/attach_threads.c"):format(flags or "",
    exe))
  assert.are.equal(0, rc, err)
  return exe
end

-- Start @exe (@spin: its SPIN, default SPIN) with its stdin a pipe of ours; return once its 4
-- threads run: {pid, pipe, out, err}.
local function start(exe, spin)
  local tg = {out = os.tmpname(), err = os.tmpname(), pidf = os.tmpname()}
  tg.pipe = io.popen(("sh -c 'echo $$ > %s; exec %s %d > %s 2> %s'"):format(tg.pidf, exe, spin or SPIN, tg.out,
    tg.err), "w")
  for _ = 1, 200 do
    if (support.read_if(tg.err) or ""):find("running") then break end
    os.execute("sleep 0.05")
  end
  tg.pid = math.tointeger(tonumber(support.take(tg.pidf)))
  assert.truthy((support.read_if(tg.err) or ""):find("running"), "the fixture did not start")
  return tg
end

-- End the fixture (its input closed): its stdout, and the calls its threads made.
local function stop(tg)
  tg.pipe:close()
  local calls = 0
  for n in support.take(tg.err):gmatch("thread %d: (%d+) calls") do calls = calls + tonumber(n) end
  return support.take(tg.out), calls
end

-- The first 16 bytes of function @fn of @exe in process @pid (/proc/PID/mem) and in the file.
local function site(pid, exe, fn)
  local vaddr = tonumber(support.sh("nm " .. exe):match("(%x+) T " .. fn .. "\n"), 16)
  local off
  for line in support.sh("readelf -lW " .. exe):gmatch("[^\n]+") do
    local o, v, fsz = line:match("^%s*LOAD%s+0x(%x+)%s+0x(%x+)%s+0x%x+%s+0x(%x+)")
    if o and vaddr >= tonumber(v, 16) and vaddr < tonumber(v, 16) + tonumber(fsz, 16) then
      off = vaddr - tonumber(v, 16) + tonumber(o, 16)
    end
  end
  local base = 0
  if support.sh("readelf -hW " .. exe):find("DYN", 1, true) then -- PIE: where its first page is mapped
    for line in io.lines("/proc/" .. pid .. "/maps") do
      local lo, o, path = line:match("^(%x+)%-%x+ %S+ (%x+) %S+ %S+%s+(.*)$")
      if path == exe and tonumber(o, 16) == 0 then
        base = tonumber(lo, 16)
        break
      end
    end
  end
  local m = assert(io.open("/proc/" .. pid .. "/mem", "rb"))
  m:setvbuf("no")
  m:seek("set", base + vaddr)
  local live = m:read(16)
  m:close()
  local f = assert(io.open(exe, "rb"))
  f:seek("set", off)
  local file = f:read(16)
  f:close()
  return live, file
end

-- Whether process @pid has a thread named @name.
local function has_thread(pid, name)
  local out = support.sh(("cat /proc/%d/task/*/comm"):format(pid))
  return out:find(name, 1, true) ~= nil
end

-- Wait up to @tries x 50 ms for @cond().
local function wait_for(cond, tries)
  for _ = 1, tries or 100 do
    if cond() then return true end
    os.execute("sleep 0.05")
  end
  return cond()
end

-- Where ptrace is refused here, the test is pending with the reason; true when it is.
local function refused_here(pending, err)
  if err:find("not permitted", 1, true) or err:find("ptrace_scope", 1, true) then
    pending("ptrace is not permitted here: " .. err)
    return true
  end
  return false
end

describe("the in-process catcher attached to a running process", function()
  local exe
  setup(function() exe = build() end)
  teardown(function() os.remove(exe) end)

  it("measures 4 running threads for 2 s and detaches: the file's bytes at the site, the output untouched", function()
    if not need_agent(pending) then return end
    local plain = stop(start(exe))
    assert.are.equal(RIGHT, plain)
    local tg = start(exe)
    local live, file = site(tg.pid, exe, "step")
    assert.are.equal(file, live)
    local out, err, rc = support.sh(("%s stat --backend inproc -p %d -r step --seconds 2 -e task-clock"):format(P,
      tg.pid))
    if rc ~= 0 and refused_here(pending, err) then return stop(tg) end
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("caught by inproc", 1, true), out)
    local hits = tonumber(out:match("region step %(func, (%d+) hits"))
    assert.is_true(hits > 0, out)
    live = site(tg.pid, exe, "step")
    assert.are.equal(file, live)
    assert.is_false(has_thread(tg.pid, "perfsh-agent")) -- the watcher ended with the detach
    -- a second attach is refused in one line: the agent measures for one perfsh
    local _, err2, rc2 = support.sh(("%s stat --backend inproc -p %d -r step --seconds 1 -e task-clock"):format(P,
      tg.pid))
    assert.are_not.equal(0, rc2)
    assert.are.equal(1, #support.lines(err2), err2)
    assert.truthy(err2:find("^perfsh stat: %-%-backend inproc: process %d+ has perfsh's agent loaded already"), err2)
    assert.truthy(err2:find("use --backend uprobe", 1, true), err2)
    local got, calls = stop(tg)
    assert.are.equal(plain, got)
    assert.is_true(calls > hits)
  end)

  it("gives per-hit records of each thread through perfsh.attach, and t:detach() puts the bytes back", function()
    if not need_agent(pending) then return end
    local tg = start(exe)
    local ok, t = pcall(perfsh.attach, tg.pid, {backend = "inproc", events = {"task-clock"}})
    if not ok and refused_here(pending, tostring(t)) then return stop(tg) end
    assert.is_true(ok, t)
    assert.are.equal("inproc", t.catcher)
    local r = t:region{func = "step", args = {"x", "t", "n"}}
    t:run{seconds = 2}
    t:detach()
    local live, file = site(tg.pid, exe, "step")
    assert.are.equal(file, live)
    local tids, n = {}, 0
    for h in r:hits() do
      n = n + 1
      assert.are.equal(SPIN, h.n)
      assert.is_true(h.t >= 0 and h.t <= 3)
      assert.is_true(h["task-clock"] > 0 and h.time_ns > 0 and h.wall_ns >= h.time_ns)
      tids[h.tid] = h.t
    end
    assert.is_true(n > 0)
    assert.are.equal(n, r:stats().hits)
    local threads = 0
    for _ in pairs(tids) do threads = threads + 1 end
    assert.are.equal(4, threads) -- each of the 4 threads, its own second argument each time
    t:close()
    assert.are.equal(RIGHT, (stop(tg)))
  end)

  it("patches and unpatches while the threads call the function millions of times a second", function()
    if not need_agent(pending) then return end
    -- step(x, t, 1): the threads are often inside its first bytes (tried again) and meet the
    -- int3 of the unpatch (sent on to the copies); --every keeps the records few
    local tg = start(exe, 1)
    local out, err, rc = support.sh(("%s stat --backend inproc -p %d -r step --every 100000 --seconds 1 -e task-clock")
      :format(P, tg.pid))
    if rc ~= 0 and refused_here(pending, err) then return stop(tg) end
    assert.are.equal(0, rc, err)
    local hits, calls = out:match("region step %(func, (%d+) hits, sampled from (%d+) calls%)")
    assert.is_true(tonumber(hits) > 0 and tonumber(calls) >= 100000 * tonumber(hits), out)
    local live, file = site(tg.pid, exe, "step")
    assert.are.equal(file, live)
    local got, made = stop(tg)
    assert.are.equal(RIGHT, got)
    assert.is_true(made > tonumber(calls))
  end)

  it("puts the bytes back itself when perfsh is killed (SIGKILL) while it measures", function()
    if not need_agent(pending) then return end
    local tg = start(exe)
    local errf = os.tmpname()
    local p = io.popen(("%s stat --backend inproc -p %d -r step --seconds 60 -e task-clock >/dev/null 2>%s & echo $!")
      :format(P, tg.pid, errf))
    local perfsh_pid = p:read("l")
    p:close()
    local function patched()
      local live, file = site(tg.pid, exe, "step")
      return live ~= file
    end
    if not wait_for(function() return patched() or support.gone(perfsh_pid, 1) end, 400) or not patched() then
      local err = support.take(errf)
      if refused_here(pending, err) then return stop(tg) end
      os.execute("kill -9 " .. perfsh_pid)
      stop(tg)
      error("the site was never patched: " .. err)
    end
    assert.is_true(has_thread(tg.pid, "perfsh-agent"))
    os.execute("kill -9 " .. perfsh_pid)
    assert.is_true(support.gone(perfsh_pid))
    assert.is_true(wait_for(function() return not patched() end, 40)) -- within 2 s
    assert.is_true(wait_for(function() return not has_thread(tg.pid, "perfsh-agent") end, 40))
    os.remove(errf)
    local got, calls = stop(tg)
    assert.are.equal(RIGHT, got)
    assert.is_true(calls > 0)
  end)

  it("refuses, with a note, a site a thread stays inside at each try of the patch, the program untouched", function()
    if not need_agent(pending) then return end
    local inside = os.tmpname()
    local _, berr, brc = support.sh(("cc -O2 -g -o %s tests/fixtures/inside.c"):format(inside))
    assert.are.equal(0, brc, berr)
    local out, errf = os.tmpname(), os.tmpname()
    local p = io.popen(("%s >%s 2>%s & echo $!"):format(inside, out, errf))
    local pid = math.tointeger(tonumber(p:read("l")))
    p:close()
    assert.is_true(wait_for(function() return (support.read_if(errf) or ""):find("filling") ~= nil end))
    local sout, err, rc = support.sh(("%s stat --backend inproc -p %d -r fill --seconds 1 -e task-clock"):format(P,
      pid))
    local live, file = site(pid, inside, "fill")
    os.execute("kill -USR1 " .. pid)
    assert.is_true(support.gone(pid))
    if rc ~= 0 and refused_here(pending, err) then return end
    assert.are.equal(0, rc, err)
    assert.truthy(sout:find("region fill (func, 0 hits)", 1, true), sout)
    assert.truthy(err:find("region 'fill' is not measured: the agent refused it (a thread was inside its first "
      .. "instructions at each try of the patch); use --backend uprobe", 1, true), err)
    assert.are.equal(file, live) -- never patched
    assert.are.equal("done\n", support.take(out))
    os.remove(errf)
    os.remove(inside)
  end)

  it("refuses a static program in one line, the program untouched", function()
    if not need_agent(pending) then return end
    local static = build("-static")
    local tg = start(static)
    local _, err, rc = support.sh(("%s stat --backend inproc -p %d -r step --seconds 1 -e task-clock"):format(P,
      tg.pid))
    assert.are_not.equal(0, rc)
    assert.are.equal(1, #support.lines(err), err)
    assert.truthy(err:find("^perfsh stat: %-%-backend inproc: cannot load a library into process %d+: it has no "
      .. "libc.so.6 mapped"), err)
    assert.truthy(err:find("use --backend uprobe", 1, true), err)
    assert.are.equal(RIGHT, (stop(tg)))
    os.remove(static)
  end)
end)
