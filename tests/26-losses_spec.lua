-- What a run lost and what it left open are facts of the run: the live header, r:stats(), the file
-- saved (t:save, or spilled by perfsh stat --save) and every report of that file say the same.
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")
local P = support.perfsh

-- A name for a temporary .psnap file.
local function tmpfile()
  local path = os.tmpname()
  os.remove(path)
  return path .. ".psnap"
end

describe("records lost", function()
  it("by the uprobe catcher are in the stat header, the saved file, perfsh report of it and r:stats()",
    function()
    if not support.need_uprobes(pending) then return end
    -- a ring of one page holds about 30 records; perfsh drains it every 2 ms, and the two threads
    -- make a probe record every few microseconds each: it overflows many times
    local file = tmpfile()
    local out, err, rc = support.sh(P .. " stat --backend uprobe --ring-pages 1 -r work -e task-clock --save "
      .. file .. " examples/threads 100000 1 2")
    assert.are.equal(0, rc, err)
    local lost = tonumber(out:match("; %d+ stops, (%d+) probe records lost %(ring full; %-%-ring%-pages raises it%)"))
    assert.truthy(lost and lost > 0, out)
    local rep, err2, rc2 = support.sh(P .. " report " .. file)
    assert.are.equal(0, rc2, err2)
    local said = tonumber(rep:match("; %d+ records, (%d+) probe records lost %(ring full; %-%-ring%-pages raises it%); "
      .. "events task%-clock\n"))
    assert.are.equal(lost, said, rep)
    local f <close> = perfsh.load(file)
    assert.are.same({lost, lost, "uprobe"}, {f.info.lost, f.regions[1]:stats().lost, f:losses().catcher})
    os.remove(file)
  end)

  it("by the uprobe catcher are in r:stats() of a live tracee and in the file t:save writes", function()
    if not support.need_uprobes(pending) then return end
    local t <close> = perfsh.spawn{"examples/threads", "100000", "1", "2", backend = "uprobe", ring_pages = 1,
      events = {"task-clock"}, stdout = "/dev/null"}
    local r = t:region{func = "work"}
    assert.are.equal(0, t:run().code)
    local lost = t:info().lost
    assert.is_true(lost > 0, "nothing lost")
    assert.are.same({lost, lost}, {r:stats().lost, t:losses().total})
    local file = tmpfile()
    t:save(file)
    local f <close> = perfsh.load(file)
    assert.are.same({lost, lost, tostring(lost)}, {f.info.lost, f.regions[1]:stats().lost, f.meta.lost})
    os.remove(file)
  end)

  it("by the marker catcher while perfsh did not drain its rings are in r:stats() and the saved file", function()
    -- perfsh, stopped by SIGSTOP for 1.5 s, drains nothing; the program (untraced, not stopped)
    -- fills its ring of 16384 records with reps of some 20 us each
    local file, script = tmpfile(), os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write(([[
local perfsh = require "perfsh"
local t = perfsh.spawn{"examples/marker_loop", "20000", "300000", "1", backend = "marker", events = {"task-clock"},
  stdout = "/dev/null"}
local loop = t:marker("loop")
assert(t:run{hits = 1} == nil)
io.write("running\n")
io.stdout:flush()
assert(t:run().code == 0)
local st = loop:stats()
t:save(%q)
print(st.entries, st.hits, st.lost, t:info().lost, t:markers().lost)
]]):format(file))
    f:close()
    local p = io.popen("sh -c 'echo $$; exec " .. P .. " " .. script .. "'")
    local pid = math.tointeger(tonumber(p:read("l")))
    assert.are.equal("running", p:read("l"))
    os.execute("kill -STOP " .. pid .. "; sleep 1.5; kill -CONT " .. pid)
    local line = p:read("a")
    p:close()
    os.remove(script)
    local entries, hits, lost, info_lost, ms_lost = line:match("^(%d+)\t(%d+)\t(%d+)\t(%d+)\t(%d+)\n$")
    assert.truthy(entries, line)
    entries, hits, lost = tonumber(entries), tonumber(hits), tonumber(lost)
    assert.is_true(lost > 0, "nothing lost: " .. line)
    assert.are.equal(300000, entries)
    assert.are.equal(entries, hits + lost)
    assert.are.same({lost, lost}, {tonumber(info_lost), tonumber(ms_lost)})
    local rep = support.sh(P .. " report " .. file)
    assert.truthy(rep:find((", %d records lost (the program's rings were full); events"):format(lost), 1, true), rep)
    local sf <close> = perfsh.load(file)
    assert.are.same({lost, lost}, {sf.info.lost, sf.regions[1]:stats().lost})
    os.remove(file)
  end)

  it("are none where none were lost: r:stats().lost is 0 and the header says nothing", function()
    local file = tmpfile()
    local out, err, rc = support.sh(P .. " stat -r sum -e task-clock --save " .. file .. " examples/sum")
    assert.are.equal(0, rc, err)
    assert.is_nil(out:find("lost", 1, true), out)
    local rep = support.sh(P .. " report " .. file)
    assert.is_nil(rep:find("lost", 1, true), rep)
    local f <close> = perfsh.load(file)
    assert.are.same({0, 0, "ptrace"}, {f.info.lost, f.regions[1]:stats().lost, f:losses().catcher})
    os.remove(file)
  end)
end)

describe("a file saved after a run was stopped", function()
  -- The region line of a report ("region spin (func, 0 hits, 1 call still running at the end)").
  local function region_line(text)
    return text:match("\n(region spin %b())\n")
  end

  it("says which calls were still running, as perfsh stat said, for a program perfsh started (SIGINT)",
    function()
    local file = tmpfile()
    -- spin(5e10) runs for many seconds: the SIGINT comes inside it
    local out, err = support.sh(("%s stat -r spin -e task-clock --save %s examples/loop 50000000000 1 & "
      .. "sleep 1; kill -INT $!; wait"):format(P, file))
    assert.truthy(err:find("SIGINT: stopped", 1, true), err)
    local live = region_line(out)
    assert.are.equal("region spin (func, 0 hits, 1 call still running at the end)", live, out)
    local rep = support.sh(P .. " report " .. file)
    assert.are.equal(live, region_line(rep), rep)
    os.remove(file)
  end)

  it("says which calls were still running at detach, as perfsh stat -p said", function()
    -- calls of spin(1e9), a second or so each: perfsh sees one begin, and detaches inside a call
    local prog, pid = support.background("examples/loop", "1000000000 1000")
    local file = tmpfile()
    local out, err, rc = support.sh(("%s stat -p %d -r spin -e task-clock --seconds 3 --save %s"):format(P, pid, file))
    os.execute("kill " .. pid)
    prog:close()
    assert.are.equal(0, rc, err)
    local live = region_line(out)
    assert.truthy(live and live:match(", 1 call still running at detach%)$"), out)
    local rep = support.sh(P .. " report " .. file)
    assert.are.equal(live, region_line(rep), rep)
    os.remove(file)
  end)
end)
