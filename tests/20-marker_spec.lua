-- The marker library (marker/, perfsh/marker.h): regions marked in the source of examples/marker_loop,
-- recorded in the process and written as a .psnap file that perfsh.load and perfsh report read.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")
local P = support.perfsh

local EX, OFF = "examples/marker_loop", "examples/marker_loop-off"

local function tmpfile()
  local f = os.tmpname()
  os.remove(f)
  return f .. ".psnap"
end

-- Run marker_loop with @env ("VAR=x ...") and @args; returns the loaded file (nil if none), stdout, stderr, rc.
local function run(env, args)
  local path = tmpfile()
  local out, err, rc = support.sh(("env PERFSH_OUT=%s %s %s %s"):format(path, env or "", EX, args))
  local f = io.open(path) and perfsh.load(path) or nil
  os.remove(path)
  return f, out, err, rc
end

local function region(f, name)
  for _, r in ipairs(f.regions) do
    if r.name == name then return r end
  end
  error("no region " .. name)
end

local by_thread = support.by_thread

describe("marker library", function()
  it("records every hit of a loop of known size, with its counters and fields", function()
    local f, out, err, rc = run("", "100000 10 1")
    assert.are.equal(0, rc, err)
    assert.are.equal("threads 1 reps 10\n", out)
    assert.are.equal("", err)
    assert.is_true(f.info.complete)
    assert.are.equal(11, f.info.records)
    local loop, thread = region(f, "loop"), region(f, "thread")
    assert.are.equal("marker", loop.kind)
    assert.are.equal("10", f.meta["entries." .. loop.id])
    assert.are.equal("0", f.meta["marker.lost"])
    assert.are.equal("0", f.meta["marker.unmatched"])
    assert.are.equal("read", f.meta["marker.read"]) -- rdpmc has no software-event counter to read
    local hits = loop:list()
    assert.are.equal(10, #hits)
    local pmu = core.pmu_present()
    for i, h in ipairs(hits) do
      assert.are.equal(i - 1, h.hit)
      assert.are.same({i - 1, 0, 0, 0}, h.args)
      assert.are.equal(1, h.depth)
      assert.is_false(h.sampled)
      if pmu then
        assert.is_true(h.instructions >= 100000, "instructions " .. h.instructions)
      else
        assert.is_true(h["task-clock"] > 0)
        assert.is_true(h["page-faults"] >= 0)
      end
      assert.is_true(h.time_ns > 0 and h.wall_ns >= h.time_ns / 2)
    end
    local th = thread:list()
    assert.are.equal(1, #th)
    assert.are.equal(0, th[1].depth)
    assert.is_true(th[1].t_start <= hits[1].t_start and th[1].t_end >= hits[10].t_end)
    f:close()
  end)

  it("keeps 4 threads' records apart, none lost: per-thread sequence numbers follow each other", function()
    -- 5001 records a thread: each thread's buffer (2048 records) fills and is written twice while the others run
    local f, _, err, rc = run("", "1000 5000 4")
    assert.are.equal(0, rc, err)
    assert.is_true(f.info.complete)
    assert.are.equal(4 * 5001, f.info.records)
    assert.are.equal("0", f.meta["marker.lost"])
    assert.are.equal("4", f.meta["marker.threads"])
    local loop, thread = region(f, "loop"), region(f, "thread")
    local n = 0
    for tid, recs in pairs(by_thread(f)) do
      n = n + 1
      assert.are.equal(5001, #recs)
      local loops, outer = 0, nil
      for i, h in ipairs(recs) do
        assert.are.equal(tid, h.tid)
        assert.are.equal(i - 1, h.seq) -- strictly increasing, none missing
        if h.region == loop.id then
          assert.are.equal(loops, h.hit)
          assert.are.equal(loops, h.args[1])
          loops = loops + 1
        else
          assert.are.equal(thread.id, h.region)
          outer = h
        end
      end
      assert.are.equal(5000, loops)
      -- the thread's outer hit encloses its own loops only
      assert.is_true(outer.t_start <= recs[1].t_start and outer.t_end >= recs[#recs - 1].t_end)
    end
    assert.are.equal(4, n)
    f:close()
  end)

  it("samples hits with the probability PERFSH_SAMPLE gives, within 5 sigma", function()
    local reps, p = 20000, 0.1
    local f, _, err, rc = run("PERFSH_SAMPLE=" .. p, "0 " .. reps .. " 1")
    assert.are.equal(0, rc, err)
    local loop = region(f, "loop")
    local k = 0
    for h in loop:hits() do
      k = k + 1
      assert.is_true(h.sampled)
    end
    local mean, sigma = reps * p, math.sqrt(reps * p * (1 - p))
    assert.is_true(math.abs(k - mean) <= 5 * sigma, ("%d sampled of %d"):format(k, reps))
    assert.are.equal(tostring(reps), f.meta["entries." .. loop.id])
    assert.are.equal("1", f.meta["sampled." .. loop.id])
    local st = loop:stats()
    assert.is_true(st.sampled)
    assert.are.equal(reps, st.entries)
    f:close()
  end)

  it("records every Nth hit of each thread with PERFSH_EVERY", function()
    -- each thread begins 1001 times (its outer region, then 1000 loops): hits 7, 14 ... 1001 recorded
    local f, _, err, rc = run("PERFSH_EVERY=7", "0 1000 4")
    assert.are.equal(0, rc, err)
    assert.are.equal(4 * 143, f.info.records)
    for _, recs in pairs(by_thread(f)) do assert.are.equal(143, #recs) end
    assert.are.equal("every 7", f.meta["marker.sample"])
    f:close()
  end)

  it("keeps only the hits slower than PERFSH_SLOW_US", function()
    -- 20 reps, every 5th sleeps 30 ms in its region: those 4 are kept, and only hits as slow as 10 ms
    local f, _, err, rc = run("PERFSH_SLOW_US=10000", "0 20 1 5")
    assert.are.equal(0, rc, err)
    local loop, slow = region(f, "loop"), 0
    for h in loop:hits() do
      assert.is_true(h.wall_ns >= 10000000, h.wall_ns)
      if h.args[2] == 1 then
        slow = slow + 1
        assert.are.equal(0, h.args[1] % 5)
      end
    end
    assert.are.equal(4, slow)
    -- kept + faster ones = every begin (outer region included)
    assert.are.equal(21, f.info.records + tonumber(f.meta["marker.fast"]))
    assert.are.equal("10000", f.meta["marker.slow_us"])
    f:close()
  end)

  it("prints one warning line on bad input and runs on with markers off", function()
    for _, case in ipairs{
      {"PERFSH_EVENTS=nosuch", "perfsh marker: PERFSH_EVENTS: unknown event 'nosuch'"},
      {"PERFSH_SAMPLE=2", "perfsh marker: PERFSH_SAMPLE=2: give a probability in (0, 1], e.g. 0.01; markers are off"},
      {"PERFSH_EVERY=x", "perfsh marker: PERFSH_EVERY=x: give a count >= 1 (record every Nth hit); markers are off"},
      {"PERFSH_SLOW_US=-1", "perfsh marker: PERFSH_SLOW_US=-1: give microseconds >= 0; markers are off"},
    } do
      local f, out, err, rc = run(case[1], "1000 10 2")
      assert.are.equal(0, rc, err)
      assert.are.equal("threads 2 reps 10\n", out)
      assert.are.equal(1, select(2, err:gsub("\n", "")), err)
      assert.are.equal(case[2], err:sub(1, #case[2]))
      assert.is_nil(f)
    end
    local out, err, rc = support.sh("env PERFSH_OUT=/nonexistent/dir/x.psnap " .. EX .. " 1000 10 1")
    assert.are.equal(0, rc, err)
    assert.are.equal("threads 1 reps 10\n", out)
    assert.are.equal("perfsh marker: PERFSH_OUT: /nonexistent/dir/x.psnap: open: No such file or directory; "
      .. "markers are off\n", err)
  end)

  it("names the file after the process with %p in PERFSH_OUT", function()
    local dir = os.tmpname()
    os.remove(dir)
    local out, err, rc = support.sh(("mkdir %s && cd %s && PERFSH_OUT=run-%%p.psnap %s/%s 1000 3 1 & "
      .. "echo pid $!; wait"):format(dir, dir, support.abspath(""), EX))
    assert.are.equal(0, rc, err)
    local pid = out:match("pid (%d+)")
    local f = perfsh.load(("%s/run-%s.psnap"):format(dir, pid))
    assert.are.equal(4, f.info.records)
    assert.are.equal(pid, f.meta.pid)
    f:close()
    support.sh("rm -rf " .. dir)
  end)

  it("counts and reports the records lost when the file cannot grow, and the program runs on", function()
    -- a 512 KiB file size limit (SIGXFSZ ignored: write(2) fails with EFBIG) for about 15 MB of records
    local path = tmpfile()
    local out, err, rc = support.sh(("trap '' XFSZ; ulimit -f 512; PERFSH_OUT=%s %s 0 100000 1"):format(path, EX))
    assert.are.equal(0, rc, err)
    assert.are.equal("threads 1 reps 100000\n", out)
    local lines = support.lines(err)
    assert.are.equal(2, #lines, err)
    assert.are.equal(("perfsh marker: %s: write: File too large; records from now on are lost (counted)"):format(path),
      lines[1])
    local lost = tonumber(lines[2]:match("^perfsh marker: (%d+) records lost"))
    assert.is_true(lost and lost > 50000, lines[2])
    local f = perfsh.load(path, {quiet = true})
    assert.is_true(f.info.records > 0 and f.info.records < 100001 - lost + 1)
    assert.is_false(f.info.complete)
    f:close()
    os.remove(path)
  end)

  it("is not killed by SIGPIPE when PERFSH_OUT is a pipe whose reader goes", function()
    local dir = os.tmpname()
    os.remove(dir)
    -- the reader takes the file's first bytes (written at start-up) and goes; 30 reps of 30 ms later the
    -- program's own thread writes the records at exit
    local out, err, rc = support.sh(("mkdir %s && cd %s && { PERFSH_OUT=/dev/fd/3 %s/%s 0 30 1 1 3>&1 >out; "
      .. "echo $? >status; } | head -c 100 >/dev/null; cat status out"):format(dir, dir, support.abspath(""), EX))
    assert.are.equal(0, rc, err)
    assert.are.equal("0\nthreads 1 reps 30\n", out)
    assert.are.equal("perfsh marker: /dev/fd/3: write: Broken pipe; the file is incomplete\n", err)
    support.sh("rm -rf " .. dir)
  end)

  it("records nothing and writes nothing without PERFSH_OUT", function()
    local out, err, rc = support.sh("env -u PERFSH_OUT " .. EX .. " 1000 10 1")
    assert.are.equal(0, rc, err)
    assert.are.equal("threads 1 reps 10\n", out)
    assert.are.equal("", err)
  end)

  it("makes each macro site an SDT probe on a 5-byte NOP", function()
    local out, err, rc = support.sh(P .. " --list sdt " .. EX)
    assert.are.equal(0, rc, err)
    local names = {}
    for name in out:gmatch("perfsh:(%S+)") do names[#names + 1] = name end
    table.sort(names)
    assert.are.same({"loop_begin", "loop_end", "thread_begin", "thread_end"}, names)
    local fh = assert(io.open(EX, "rb"))
    for _, p in ipairs(assert(perfsh.sdt(EX))) do
      assert.are.equal("perfsh", p.provider)
      fh:seek("set", p.offset)
      assert.are.equal("\x0f\x1f\x44\x00\x00", fh:read(5), p.name)
    end
    fh:close()
  end)

  it("compiles to nothing under -DPERFSH_MARKER_OFF: no probe, no call", function()
    assert.are.same({}, assert(perfsh.sdt(OFF)))
    local syms = support.sh("nm " .. OFF)
    assert.is_nil(syms:find("ps_marker", 1, true))
    local path = tmpfile()
    local out, err, rc = support.sh(("env PERFSH_OUT=%s %s 1000 10 1"):format(path, OFF))
    assert.are.equal(0, rc, err)
    assert.are.equal("threads 1 reps 10\n", out)
    assert.is_nil(io.open(path))
  end)
end)

describe("marker library: the file at a signal", function()
  -- marker_loop forever; SIGTERM once the file has records (20 s at most); returns the file, stdout, status
  local function killed(extra)
    local path = tmpfile()
    local out, err = support.sh(("env PERFSH_OUT=%s %s 100000 100000000 1 0 %s & pid=$!; i=0; "
      .. "while [ $(stat -c %%s %s 2>/dev/null || echo 0) -lt 100000 ] && [ $i -lt 2000 ]; do "
      .. "sleep 0.01; i=$((i+1)); done; "
      .. "kill -TERM $pid; wait $pid; echo status $?"):format(path, EX, extra, path))
    local f = perfsh.load(path)
    os.remove(path)
    return f, out, err
  end

  it("writes what was buffered and closes the file on SIGTERM, then dies of it", function()
    local f, out = killed("")
    assert.are.equal("status 143\n", out)
    assert.is_true(f.info.complete)
    local loop = region(f, "loop")
    local n = 0
    for h in f:hits() do
      assert.are.equal(loop.id, h.region)
      assert.are.equal(n, h.seq)
      n = n + 1
    end
    assert.is_true(n >= 2048, n)
    f:close()
  end)

  it("says in one line that the file could not be finished when SIGTERM comes and it cannot be written", function()
    -- the reader takes the file's first bytes (written at start-up) and goes; the records of 30 ms
    -- reps stay buffered, so the first write that fails is the handler's: it must say so with
    -- nothing a signal handler may not call, then the program dies of the signal
    local dir = os.tmpname()
    os.remove(dir)
    local out, err, rc = support.sh(("mkdir %s && cd %s && { PERFSH_OUT=/dev/fd/3 %s/%s 0 1000 1 1 3>&1 >out "
      .. "2>err & echo $! >pid; wait $!; echo $? >status; } | { head -c 100 >/dev/null; exec 0<&-; "
      .. "while [ ! -s pid ]; do sleep 0.01; done; sleep 0.5; kill -TERM $(cat pid); }; cat status out err")
      :format(dir, dir, support.abspath(""), EX))
    support.sh("rm -rf " .. dir)
    assert.are.equal(0, rc, err)
    assert.are.equal("143\nperfsh marker: /dev/fd/3: write: Broken pipe; the file is incomplete\n", out)
  end)

  it("chains to the program's own SIGTERM handler; the file is closed at its exit", function()
    local f, out = killed("term")
    assert.are.equal("threads 1 reps 100000000\nstopped by SIGTERM\nstatus 0\n", out)
    assert.is_true(f.info.complete)
    assert.are.equal("0", f.meta["marker.lost"])
    assert.are.equal(1, #region(f, "thread"):list())
    assert.are.equal(tonumber(f.meta["entries." .. region(f, "loop").id]), #region(f, "loop"):list())
    f:close()
  end)
end)

describe("marker library: make install", function()
  it("installs the header, the libraries and perfsh-marker.pc, which build a program outside the tree", function()
    if support.build ~= "build" then
      pending("a sanitizer build: the installed library is ASan-linked")
      return
    end
    local dir = os.tmpname()
    os.remove(dir)
    local _, err, rc = support.sh(("make -s install DESTDIR=%s PREFIX=/usr"):format(dir))
    assert.are.equal(0, rc, err)
    for _, f in ipairs{"/usr/include/perfsh/marker.h", "/usr/lib/libperfsh-marker.a", "/usr/lib/libperfsh-marker.so",
      "/usr/lib/pkgconfig/perfsh-marker.pc"} do
      assert.truthy(io.open(dir .. f), "missing " .. f)
    end
    local src = dir .. "/prog.c"
    local fh = assert(io.open(src, "w"))
    fh:write([[
#include <stdio.h>
#include <perfsh/marker.h>
int main(void)
{
	int id = ps_marker_region("work");
	for (int i = 0; i < 5; i++) {
		ps_marker_begin(id);
		ps_marker_field(0, (uint64_t)i);
		ps_marker_end(id);
		PS_MARK_BEGIN(macro);
		PS_MARK_END(macro);
	}
	printf("%d\n", ps_marker_enabled());
	return 0;
}
]])
    fh:close()
    local pc = ("PKG_CONFIG_PATH=%s/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=%s"):format(dir, dir)
    local out
    out, err, rc = support.sh(("cd %s && %s pkg-config --cflags --libs perfsh-marker"):format(dir, pc))
    assert.are.equal(0, rc, err)
    assert.are.equal(("-I%s/usr/include -L%s/usr/lib -lperfsh-marker"):format(dir, dir), out:match("^(.-)%s*$"))
    _, err, rc = support.sh(("cd %s && cc -o prog prog.c $(%s pkg-config --cflags --libs perfsh-marker)")
      :format(dir, pc))
    assert.are.equal(0, rc, err)
    out, err, rc = support.sh(("cd %s && LD_LIBRARY_PATH=%s/usr/lib PERFSH_OUT=%s/p.psnap ./prog")
      :format(dir, dir, dir))
    assert.are.equal(0, rc, err)
    assert.are.equal("1\n", out)
    local f = perfsh.load(dir .. "/p.psnap")
    assert.are.equal(10, f.info.records)
    assert.are.equal(5, #region(f, "work"):list())
    assert.are.equal(5, #region(f, "macro"):list())
    f:close()
    -- the static library, with the private libraries pkg-config --static names
    _, err, rc = support.sh(("cd %s && cc -o prog-static prog.c %s/usr/lib/libperfsh-marker.a "
      .. "$(%s pkg-config --cflags --static --libs-only-l perfsh-marker | sed 's/-lperfsh-marker//')")
      :format(dir, dir, pc))
    assert.are.equal(0, rc, err)
    out, err, rc = support.sh(("cd %s && PERFSH_OUT=%s/s.psnap ./prog-static"):format(dir, dir))
    assert.are.equal(0, rc, err)
    assert.are.equal("1\n", out)
    support.sh("rm -rf " .. dir)
  end)
end)
