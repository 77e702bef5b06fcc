-- Signals and deadlines: they never harm the target and never lose what was measured.
-- tests/run.sh runs this file once more with PERFSH_BACKEND=uprobe (the uprobe catcher).
-- Every wait polls a condition for up to 20 s; no test depends on a fixed sleep being long
-- enough, and the only time bound (a deadline) allows more than 4x its length.
local support = dofile("tests/support.lua")
local P = support.perfsh:match("^/") and support.perfsh or support.abspath((support.perfsh:gsub("^%./", "")))
local q = support.q

local dir, napper, deaf

-- sh prelude: waitfor 'CONDITION' polls it every 0.1 s for at most 20 s.
local WAITFOR = [[
waitfor() { i=0; while ! eval "$1"; do i=$((i+1)); [ $i -gt 200 ] && return 1; sleep 0.1; done; }
]]

local function read(path)
  local f = io.open(path)
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

local function shscript(body)
  return support.sh(WAITFOR .. body)
end

-- The sum napper prints after K naps, from a run of its own.
local function expected_sum(k)
  local out = support.sh(("%s 0 %d"):format(napper, k))
  return out:match("sum = (%d+)")
end

-- perfsh attaches to a process it did not start (a sibling): Yama's ptrace_scope 1 allows
-- that only to root (CAP_SYS_PTRACE).
local function can_attach(pending)
  local f = io.open("/proc/sys/kernel/yama/ptrace_scope")
  local scope = f and tonumber(f:read("l")) or 0
  if f then f:close() end
  local uid = support.sh("id -u"):match("%d+")
  if scope == 0 or uid == "0" then return true end
  pending(("kernel.yama.ptrace_scope is %d and this is not root: perfsh cannot attach to a "
    .. "process it did not start"):format(scope))
  return false
end

setup(function()
  dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. q(dir)))
  napper = dir .. "/napper"
  local _, err, rc = support.sh(("cc -O2 -g -o %s tests/fixtures/napper.c"):format(q(napper)))
  assert(rc == 0, err)
  deaf = dir .. "/deaf"
  _, err, rc = support.sh(("cc -O2 -o %s tests/fixtures/deaf.c"):format(q(deaf)))
  assert(rc == 0, err)
end)

teardown(function()
  os.execute("rm -rf " .. q(dir))
end)

describe("an attached process", function()
  -- napper naps until its mark file is removed; perfsh attaches, gets SIG once the process
  -- is traced, and must leave it running with its code bytes and its output unchanged.
  for _, case in ipairs{{"TERM", 143}, {"HUP", 129}, {"INT", 130}} do
    local sig, code = case[1], case[2]
    it("survives SIG" .. sig .. " to perfsh stat -p, detached with its code restored", function()
      if not can_attach(pending) then return end
      local mark = dir .. "/mark-" .. sig
      local out, err, rc = shscript(([=[
        %s 2 -1 %s > %s/nap.out & T=$!
        waitfor '[ -e %s ]' || { kill $T; echo 'no mark'; exit 1; }
        %s stat -r nap -p $T > %s/st.out 2> %s/st.err & S=$!
        waitfor 'grep -q "^TracerPid:[[:space:]]*[1-9]" /proc/$T/status' || echo 'never traced'
        sleep 0.5
        kill -%s $S; wait $S; echo "perfsh=$?"
        kill -0 $T && echo alive
        rm -f %s; wait $T; echo "target=$?"
      ]=]):format(q(napper), q(mark), q(dir), mark, P, q(dir), q(dir), sig, q(mark)))
      assert.are.equal(0, rc, err)
      assert.truthy(out:find("perfsh=" .. code, 1, true), out .. read(dir .. "/st.err"))
      assert.truthy(out:find("alive", 1, true), out)
      assert.truthy(out:find("target=0", 1, true), out)
      local nap = read(dir .. "/nap.out")
      local k, sum, how = nap:match("^naps = (%d+) sum = (%d+) code (%a+)\n$")
      assert.truthy(k, nap)
      assert.are.equal("intact", how)
      assert.are.equal(expected_sum(tonumber(k)), sum)
      assert.truthy(read(dir .. "/st.err"):find("perfsh stat: SIG" .. sig .. ": stopped", 1, true))
      local st = read(dir .. "/st.out")
      assert.truthy(st:find("stopped by SIG" .. sig, 1, true), st)
      assert.truthy(st:match("region nap %(func, %d+ hits?"), st)
    end)
  end

  it("is detached unharmed when the script fails mid-run", function()
    if not can_attach(pending) then return end
    local mark = dir .. "/mark-err"
    local script = dir .. "/fail.lua"
    local f = assert(io.open(script, "w"))
    f:write([[
local t = perfsh.attach(tonumber(arg[1]))
t:region{func = "nap"}
t:run{["until"] = function() error("boom in until") end}
]])
    f:close()
    local out, err, rc = shscript(([=[
      %s 2 -1 %s > %s/nap.out & T=$!
      waitfor '[ -e %s ]' || { kill $T; exit 1; }
      %s %s $T 2> %s/err.out; echo "perfsh=$?"
      kill -0 $T && echo alive
      rm -f %s; wait $T; echo "target=$?"
    ]=]):format(q(napper), q(mark), q(dir), mark, P, q(script), q(dir), q(mark)))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("perfsh=1", 1, true), out)
    assert.truthy(read(dir .. "/err.out"):find("boom in until", 1, true))
    assert.truthy(out:find("alive", 1, true), out)
    assert.truthy(out:find("target=0", 1, true), out)
    local k, sum, how = read(dir .. "/nap.out"):match("^naps = (%d+) sum = (%d+) code (%a+)\n$")
    assert.are.equal("intact", how)
    assert.are.equal(expected_sum(tonumber(k)), sum)
  end)
end)

describe("--seconds", function()
  local function timed(cmd)
    local out, err, rc = support.sh(("s=$(date +%%s%%N); %s; echo \"rc=$? ms=$((($(date +%%s%%N) - s) / 1000000))\"")
      :format(cmd))
    return out, err, rc, tonumber(out:match("ms=(%d+)"))
  end

  it("ends on time on an attached process blocked in sleep(), which goes on", function()
    if not can_attach(pending) then return end
    local mark = dir .. "/mark-sleep"
    local out, err, rc = shscript(([=[
      %s 100000 1 %s > /dev/null & T=$!
      waitfor '[ -e %s ]' || { kill $T; exit 1; }
      s=$(date +%%s%%N)
      timeout 20 %s stat -r nap --seconds 1 -p $T > %s/st.out; echo "perfsh=$?"
      echo "ms=$((($(date +%%s%%N) - s) / 1000000))"
      kill -0 $T && echo alive
      kill $T
    ]=]):format(q(napper), q(mark), mark, P, q(dir)))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("perfsh=0", 1, true), out)
    assert.truthy(out:find("alive", 1, true), out)
    local ms = tonumber(out:match("ms=(%d+)"))
    assert.truthy(ms >= 1000 and ms < 4500, out)
    assert.truthy(read(dir .. "/st.out"):find("region nap (func, 0 hits)", 1, true))
  end)

  it("ends on time while a spawned program is inside one long call", function()
    local out, err, _, ms = timed(("%s stat -r nap --seconds 1 %s 100000 1"):format(P, q(napper)))
    assert.truthy(out:find("rc=0", 1, true), out .. err)
    assert.truthy(ms >= 1000 and ms < 4500, out)
  end)
end)

describe("--save", function()
  -- the file holds exactly the hits printed: perfsh report prints the same CSV
  local function check_saved(sig, use_timeout)
    local mark, snap = dir .. "/mark-save" .. sig, dir .. "/s-" .. sig .. ".psnap"
    os.remove(snap)
    local run = use_timeout
      and ("timeout -s %s 3 %s stat --csv -r nap --save %s %s 2 -1 %s > %s/st.out 2> %s/st.err; echo \"perfsh=$?\"")
        :format(sig, P, q(snap), q(napper), q(mark), q(dir), q(dir))
      or ([=[
        %s stat --csv -r nap --save %s %s 2 -1 %s > %s/st.out 2> %s/st.err & S=$!
        waitfor '[ -e %s ]' || echo 'no mark'
        sleep 0.5
        kill -%s $S; wait $S; echo "perfsh=$?"
      ]=]):format(P, q(snap), q(napper), q(mark), q(dir), q(dir), mark, sig)
    local out, err, rc = shscript(run .. "\nrm -f " .. q(mark))
    assert.are.equal(0, rc, err)
    local code = use_timeout and 124 or sig == "INT" and 130 or 143
    assert.truthy(out:find("perfsh=" .. code, 1, true), out .. read(dir .. "/st.err"))
    local printed = read(dir .. "/st.out")
    assert.truthy(printed:find("^region,event,hits,"), printed .. read(dir .. "/st.err"))
    local rep, rerr, rrc = support.sh(("%s report --csv %s"):format(P, q(snap)))
    assert.are.equal(0, rrc, rerr)
    assert.are.equal(printed, rep)
    assert.truthy(read(dir .. "/st.err"):find("perfsh stat: SIG" .. sig .. ": stopped", 1, true))
  end

  it("leaves a complete file on SIGINT", function() check_saved("INT") end)
  it("leaves a complete file on SIGTERM", function() check_saved("TERM") end)
  it("leaves a complete file when timeout ends the run", function() check_saved("TERM", true) end)
end)

describe("perfsh count", function()
  it("passes SIGTERM on to the command and reports it", function()
    local mark = dir .. "/mark-count"
    local out, err, rc = shscript(([=[
      %s count --csv %s 2 -1 %s > %s/c.out 2> %s/c.err & S=$!
      waitfor '[ -e %s ]' || echo 'no mark'
      kill -TERM $S; wait $S; echo "perfsh=$?"
      rm -f %s
    ]=]):format(P, q(napper), q(mark), q(dir), q(dir), mark, q(mark)))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("perfsh=143", 1, true), out .. read(dir .. "/c.err"))
    assert.truthy(read(dir .. "/c.out"):find("^event,value,scaling\ntask%-clock,%d+,"))
    assert.truthy(read(dir .. "/c.err"):find("killed by SIGTERM", 1, true))
  end)
end)

describe("every recipe started with SIGINT, SIGTERM and SIGHUP ignored and blocked", function()
  -- deaf leaves the three ignored and blocked, as a script's "perfsh count ... &" leaves SIGINT
  -- ignored; each recipe must still end promptly on each of them, with what it measured printed,
  -- 128 + the signal, and the program it started gone.
  local function stop(sig, recipe)
    local mark = dir .. "/mark-deaf"
    local out, err, rc = shscript(([=[
      rm -f %s
      %s %s %s > %s/d.out 2> %s/d.err & S=$!
      waitfor '[ -e %s ]' || echo 'no mark'
      sleep 0.3
      C=$(pgrep -P $S | head -n 1)
      s=$(date +%%s%%N)
      kill -%s $S
      ( sleep 15; kill -KILL $S 2>/dev/null ) & W=$!
      wait $S; echo "perfsh=$?"
      echo "ms=$((($(date +%%s%%N) - s) / 1000000))"
      kill $W 2>/dev/null
      waitfor '[ ! -e /proc/$C ] || grep -q "^State:.*Z" /proc/$C/status' || echo "left running"
      rm -f %s
    ]=]):format(q(mark), q(deaf), P, recipe:gsub("MARK", mark), q(dir), q(dir), mark, sig, q(mark)))
    assert.are.equal(0, rc, err)
    local code = ({INT = 130, TERM = 143, HUP = 129})[sig]
    local derr = read(dir .. "/d.err")
    assert.truthy(out:find("perfsh=" .. code, 1, true), out .. derr)
    assert.is_nil(out:find("left running", 1, true), out)
    assert.is_nil(out:find("no mark", 1, true), out .. derr)
    local ms = tonumber(out:match("ms=(%d+)"))
    assert.truthy(ms < 5000, out)
    return read(dir .. "/d.out"), derr
  end
  local nap = q(napper) .. " 2 -1 MARK"

  for _, sig in ipairs{"INT", "TERM", "HUP"} do
    it("stat ends on SIG" .. sig .. " and prints its hits", function()
      local out, err = stop(sig, "stat -r nap " .. nap)
      assert.truthy(out:find("stopped by SIG" .. sig, 1, true), out)
      local hits = tonumber(out:match("region nap %(func, (%d+) hits?"))
      assert.truthy(hits and hits > 0, out)
      assert.truthy(err:find("perfsh stat: SIG" .. sig .. ": stopped", 1, true), err)
    end)

    it("tail ends on SIG" .. sig .. " and prints its count", function()
      local out, err = stop(sig, "tail -r nap --threshold-us 0 " .. nap)
      local hits, logged = err:match("perfsh tail: nap: (%d+) hits, (%d+) logged as slow")
      assert.truthy(hits and tonumber(hits) > 0, err)
      assert.are.equal(tonumber(logged), #support.lines(out))
      assert.truthy(err:find("perfsh tail: SIG" .. sig .. ": stopped", 1, true), err)
    end)

    it("attribute ends on SIG" .. sig .. " and prints the fit of the calls so far", function()
      local out, err = stop(sig, "attribute -r nap --args I -e task-clock " .. nap)
      local calls = tonumber(out:match("task%-clock over (%d+) calls of nap"))
      assert.truthy(calls and calls > 0, out .. err)
      assert.truthy(err:find("perfsh attribute: SIG" .. sig .. ": stopped", 1, true), err)
    end)

    it("check ends on SIG" .. sig .. ", comparing nothing and writing no baseline", function()
      local base = dir .. "/deaf.json"
      local _, err = stop(sig, ("check -r nap --engine counters --runs 3 --save-baseline %s "):format(q(base)) .. nap)
      assert.truthy(err:find("perfsh check: SIG" .. sig .. ": stopped before the runs were done", 1, true), err)
      assert.is_nil(io.open(base))
    end)

    it("count ends on SIG" .. sig .. " when its command ignores it, killing the command", function()
      local out, err = stop(sig, ([[count --csv -e task-clock sh -c "trap '' INT TERM HUP; exec %s"]]):format(nap))
      assert.truthy(out:match("^event,value,scaling\ntask%-clock,%d+,"), out .. err)
      assert.truthy(err:find("perfsh count: SIG" .. sig .. ": the command did not end on it", 1, true), err)
      assert.truthy(err:find("killed by SIGKILL", 1, true), err)
    end)
  end
end)

describe("a target killed by a signal", function()
  local function step_rows(csv)
    local n = 0
    for hits in csv:gmatch("\nstep,[%w%-_]+,(%d+),") do
      assert.are.equal("4", hits)
      n = n + 1
    end
    return n
  end

  it("is named on stderr with its region by stat --csv", function()
    local out, err, rc = support.sh(P .. " stat --csv -r step -e task-clock examples/crash")
    assert.are.equal(139, rc)
    assert.truthy(err:find("perfsh stat: [^\n]*examples/crash killed by SIGSEGV in region step\n"), err)
    assert.are.equal(2, step_rows(out))
  end)

  it("is named on stderr by stat --csv -o FILE, and the file holds the hits", function()
    local file = dir .. "/crash.csv"
    local _, err, rc = support.sh(("%s stat --csv -o %s -r step -e task-clock examples/crash"):format(P, q(file)))
    assert.are.equal(139, rc)
    assert.truthy(err:find("killed by SIGSEGV in region step", 1, true), err)
    assert.are.equal(2, step_rows(read(file)))
  end)

  it("is named on stderr by count --csv", function()
    local out, err, rc = support.sh(P .. " count --csv examples/crash")
    assert.are.equal(139, rc)
    assert.truthy(err:find("perfsh count: examples/crash killed by SIGSEGV", 1, true), err)
    assert.truthy(out:find("^event,value,scaling\n"))
  end)
end)

describe("the REPL", function()
  it("pauses t:run() on Ctrl-C, and t:run() resumes the program", function()
    -- through a pseudo-terminal (script(1)): Ctrl-C reaches perfsh and the spawned program
    -- (one process group). script runs $SHELL -c CMD; "exec" makes perfsh replace that shell,
    -- which would otherwise die of the Ctrl-C while it waits (dash does: script exits 130).
    -- The Lua side creates a file just before t:run(); the driver waits for it, then for the
    -- program's next naps, before it types Ctrl-C.
    local started, out = dir .. "/running", dir .. "/repl.out"
    os.remove(started)
    local driver = ([=[
      {
        echo 't = perfsh.spawn{%q, "5", "-1", %q, stdout = "/dev/null"}; r = t:region{func = "nap"}'
        echo 'io.open(%q, "w"):close(); print("RUN1", t:run())'
        waitfor '[ -e %s ]' || echo 'print("NO START")'
        sleep 0.5
        printf '\003'
        waitfor 'grep -q "RUN1.nil" %s' || true
        echo 'print("RUN2", (t:run{hits = 5}), t:status() == nil, r:stats().hits >= 5)'
        waitfor 'grep -q "RUN2.nil" %s' || true
        echo 't:close(); print("DONE")'
        waitfor 'grep -q "^DONE" %s' || true
        # Ctrl-D until perfsh leaves: one typed before its line editor has the terminal is lost
        i=0; while [ $i -lt 100 ]; do printf '\004' || break; sleep 0.1; i=$((i+1)); done
      } | SHELL=/bin/sh script -qfec "exec "%s /dev/null > %s
      echo "script=$?"
    ]=]):format(napper, dir .. "/mark-repl", started, started, out, out, out, q(P), q(out))
    local res, err, rc = shscript(driver)
    local got = read(out):gsub("\r", "")
    assert.are.equal(0, rc, err)
    assert.truthy(res:find("script=0", 1, true), res .. got)
    assert.truthy(got:find("\n[^\n]*RUN1\tnil\tpaused\n"), got)
    assert.falsy(got:find("interrupted!", 1, true), got)
    assert.truthy(got:find("\nRUN2\tnil\ttrue\ttrue\n"), got)
    assert.truthy(got:find("\nDONE\n"), got)
    os.remove(dir .. "/mark-repl")
  end)
end)
