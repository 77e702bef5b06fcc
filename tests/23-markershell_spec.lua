-- Markers from the shell: marker:NAME (perfsh stat) and t:marker("NAME") measured by the program's
-- own marker library (the marker catcher, their default), or from outside, the SDT pair
-- perfsh:NAME_begin, perfsh:NAME_end armed by the uprobe catcher (--backend uprobe), the program's
-- own markers left off (no PERFSH_OUT).
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")
local P = support.perfsh

local EX = "examples/marker_loop"
-- marker_loop N REPS THREADS with the library's environment cleared: its markers are off
local ENV = "env -u PERFSH_OUT -u PERFSH_EVENTS -u PERFSH_SAMPLE -u PERFSH_EVERY -u PERFSH_SLOW_US "

-- true when the uprobe catcher works here and the examples can be traced; otherwise marks the
-- test pending with the reason.
local function need_uprobes(pending)
  return support.need_uprobes(pending) and support.need_traceable(pending, {EX, "examples/epoll_server"})
end

local lines = support.lines

-- perfsh stat of marker_loop 1000 REPS THREADS with @regions (-r each); returns stdout after a
-- successful run
local function stat(regions, reps, threads)
  local rs = {}
  for i, r in ipairs(regions) do rs[i] = "-r " .. r end
  local out, err, rc = support.sh(("%s%s stat --backend uprobe %s -e task-clock %s 1000 %d %d"):format(ENV, P,
    table.concat(rs, " "), EX, reps, threads))
  assert.are.equal(0, rc, err)
  assert.are.equal("", err)
  assert.truthy(out:find(("threads %d reps %d\n"):format(threads, reps), 1, true), out)
  return out
end

describe("perfsh stat -r marker:NAME", function()
  it("counts every hit of each marker region, its 4 probe sites on the 5-byte-NOP fast path", function()
    if not need_uprobes(pending) then return end
    local out = stat({"marker:loop", "marker:thread"}, 7, 3)
    assert.truthy(out:find("caught by uprobe (4 of 4 probe sites on the 5-byte-NOP fast path)", 1, true), out)
    assert.truthy(out:find("\nregion marker:loop (sdt, 21 hits)\n", 1, true), out)
    assert.truthy(out:find("\nregion marker:thread (sdt, 3 hits)\n", 1, true), out)
  end)

  it("counts what the pair of SDT names counts", function()
    if not need_uprobes(pending) then return end
    local out = stat({"sdt:perfsh:loop_begin,sdt:perfsh:loop_end", "sdt:perfsh:thread_begin,thread_end"}, 5, 2)
    assert.truthy(out:find("caught by uprobe (4 of 4 probe sites on the 5-byte-NOP fast path)", 1, true), out)
    assert.truthy(out:find("\nregion sdt:perfsh:loop_begin,sdt:perfsh:loop_end (sdt, 10 hits)\n", 1, true), out)
    assert.truthy(out:find("\nregion sdt:perfsh:thread_begin,thread_end (sdt, 2 hits)\n", 1, true), out)
    out = stat({"marker:loop", "marker:thread"}, 5, 2)
    assert.truthy(out:find("\nregion marker:loop (sdt, 10 hits)\n", 1, true), out)
    assert.truthy(out:find("\nregion marker:thread (sdt, 2 hits)\n", 1, true), out)
  end)

  it("names the markers a binary has when it lacks one, in one line, the target never run", function()
    local out, err, rc = support.sh(("%s stat -r marker:lop %s 1000 3 1"):format(P, EX))
    assert.are.same({2, "", "perfsh stat: region 'marker:lop': no marker 'lop' in examples/marker_loop; its markers: "
      .. "loop, thread\n"}, {rc, out, err})
    out, err, rc = support.sh(("%s stat -r marker:loop examples/sum"):format(P))
    assert.are.same({2, ""}, {rc, out})
    assert.are.same({"perfsh stat: region 'marker:loop': examples/sum has no markers (it was built without "
      .. "perfsh/marker.h, or with -DPERFSH_MARKER_OFF)"}, lines(err))
    out, err, rc = support.sh(("%s stat -r marker:a-b %s"):format(P, EX))
    assert.are.same({2, ""}, {rc, out})
    assert.are.equal(1, #lines(err))
    assert.truthy(err:find("bad marker region 'marker:a-b': expected marker:NAME", 1, true), err)
  end)

  it("is refused by --backend ptrace with one line, as an SDT region is", function()
    local out, err, rc = support.sh(("%s stat --backend ptrace -r marker:loop %s 1000 3 1"):format(P, EX))
    assert.are.same({2, "", "perfsh stat: region 'marker:loop': SDT probes are armed by the uprobe catcher only "
      .. "(--backend uprobe or auto), not by ptrace\n"}, {rc, out, err})
  end)
end)

describe("perfsh tail and compare -r marker:NAME", function()
  it("take the marker catcher without --backend and count every hit", function()
    local out, err, rc = support.sh(("%s%s tail -r marker:loop --threshold-us 0 -e task-clock %s 1000 4 1"):format(ENV,
      P, EX))
    assert.are.equal(0, rc, err)
    assert.truthy((out .. err):find("perfsh tail: marker:loop: 4 hits, 4 logged as slow", 1, true), out .. err)
    out, err, rc = support.sh(("%s%s compare --runs 1 -r marker:loop -r marker:thread -e task-clock %s 1000 4 2")
      :format(ENV, P, EX))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("\n%s*task%-clock%s+marker:loop%s+8%s"), out)
    assert.truthy(out:find("\n%s*task%-clock%s+marker:thread%s+2%s"), out)
  end)
end)

describe("t:marker(NAME)", function()
  it("is a region with hits(), stats(), series() and on_slow, named marker:NAME", function()
    if not need_uprobes(pending) then return end
    local out, log = os.tmpname(), os.tmpname()
    local t <close> = perfsh.spawn{EX, "1000", "6", "2", events = {"task-clock"}, stdout = out, backend = "uprobe"}
    local loop, thread = t:marker("loop"), t:marker("thread")
    assert.are.same({"marker:loop", "marker:thread"}, {loop.name, thread.name})
    local logger = loop:on_slow{threshold_us = 0, log = log}
    assert.are.equal(0, t:run().code)
    local f = assert(io.open(out))
    assert.are.equal("threads 2 reps 6\n", f:read("a"))
    f:close()
    os.remove(out)
    os.remove(log)
    assert.are.same({12, 2}, {loop:stats().hits, thread:stats().hits})
    assert.are.equal(12, #loop:series("time_ns"))
    local n, tids = 0, {}
    for h in loop:hits() do
      n = n + 1
      tids[h.tid] = (tids[h.tid] or 0) + 1
      assert.is_true(h.t_end >= h.t_start)
    end
    assert.are.equal(12, n)
    local per = {}
    for _, c in pairs(tids) do per[#per + 1] = c end
    assert.are.same({6, 6}, per)
    assert.are.equal(12, logger.seen)
  end)

  it("raises one line naming the markers there are; nothing is armed", function()
    if not need_uprobes(pending) then return end
    local out = os.tmpname()
    local t <close> = perfsh.spawn{EX, "1000", "2", "1", events = {"task-clock"}, stdout = out, backend = "uprobe"}
    local ok, why = pcall(t.marker, t, "nosuch")
    assert.is_false(ok)
    assert.are.equal("region 'marker:nosuch': no marker 'nosuch' in examples/marker_loop; its markers: loop, thread",
      why)
    assert.are.equal(0, #t.regions)
    assert.are.equal(0, t:run().code)
    os.remove(out)
  end)
end)

describe("examples/epoll_server", function()
  local SRV, N, M = "examples/epoll_server", 6, 4

  -- its line "connections N messages M events E waits W": E and W
  local function counts(out)
    local e, w = out:match(("connections %d messages %d events (%%d+) waits (%%d+)\n"):format(N, M))
    assert.truthy(e, out)
    return tonumber(e), tonumber(w)
  end

  it("hits each marker as often as its client's load says, measured from outside", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(("%s%s stat --backend uprobe -r marker:iter -r marker:accept -r marker:data "
      .. "-r marker:epoll -e task-clock %s %d %d"):format(ENV, P, SRV, N, M))
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    local events, waits = counts(out)
    assert.are.equal(N * (M + 2), events) -- N accepts, N * M messages, N closes
    assert.truthy(out:find("caught by uprobe (8 of 8 probe sites on the 5-byte-NOP fast path)", 1, true), out)
    for name, hits in pairs{iter = events, accept = N, data = N * (M + 1), epoll = waits} do
      assert.truthy(out:find(("\nregion marker:%s (sdt, %d hits)\n"):format(name, hits), 1, true), name .. "\n" .. out)
    end
    assert.is_true(waits >= 1 and waits <= events, out)
  end)

  it("writes the same counts standalone (PERFSH_OUT), a listening-socket event flagged in field 1", function()
    local path = os.tmpname()
    local out, err, rc = support.sh(("%s PERFSH_OUT=%s PERFSH_EVENTS=task-clock %s %d %d"):format(ENV, path, SRV, N,
      M))
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    local events, waits = counts(out)
    local f = perfsh.load(path)
    os.remove(path)
    assert.are.equal("0", f.meta["marker.lost"])
    local by = {}
    for _, r in ipairs(f.regions) do by[r.name] = r end
    assert.are.same({events, N, N * (M + 1), waits}, {by.iter:stats().hits, by.accept:stats().hits,
      by.data:stats().hits, by.epoll:stats().hits})
    local listen = 0
    for h in by.iter:hits() do
      assert.is_true(h.args[1] >= 1 and h.args[1] <= 16)
      listen = listen + h.args[2]
    end
    assert.are.equal(N, listen)
    for h in by.accept:hits() do assert.are.equal(1, h.depth) end -- inside an iteration
    f:close()
  end)
end)
