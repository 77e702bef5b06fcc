-- Snapshot analytics: files, tail logging, attribution, exports, per-CPU breakdowns, formulas.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local json = require "dkjson"
local support = dofile("tests/support.lua")
local P = support.perfsh

local function events()
  if core.pmu_present() then return {"instructions", "cycles"} end
  return {"task-clock", "page-faults"}
end

describe(".psnap files", function()
  local path = os.tmpname() .. ".psnap"

  it("round-trip every field of every record", function()
    local t <close> = perfsh.spawn{"examples/recursive", "3", "4", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "walk", every_level = true, args = {"n"}}
    t:run()
    assert.are.equal(15, t:save(path))
    local live = r:list()
    local f <close> = perfsh.load(path)
    assert.are.same(t:events(), f:events())
    assert.are.equal("walk", f.regions[1].name)
    assert.are.equal("examples/recursive 3 4", f.meta.command)
    local back = f.regions[1]:list()
    assert.are.equal(#live, #back)
    for i = 1, #live do assert.are.same(live[i], back[i]) end
    assert.are.same(r:stats(), f.regions[1]:stats())
    assert.is_true(back[1].n >= 0) -- the argument by name
  end)

  local slurp, spit = support.read, support.write

  it("read a truncated file up to its last whole record, with one line on what was cut", function()
    local data = slurp(path)
    local cut = path .. ".cut"
    spit(cut, data:sub(1, #data - 200)) -- the END block (32 bytes) and 168 bytes of records
    local out, err, rc = support.sh(P .. " report --csv " .. cut)
    assert.are.equal(0, rc)
    local lost = math.ceil(168 / string.unpack("<I4", data, 21)) -- the header's record size
    assert.are.equal(("perfsh: %s: cut after record %d of a block of 15 (truncated file), %d record%s lost; "
      .. "%d records kept\n"):format(cut, 15 - lost, lost, lost > 1 and "s" or "", 15 - lost), err)
    assert.are.equal(15 - lost, tonumber(out:match("\nwalk,[^,]+,(%d+),")))
    local g <close> = perfsh.load(cut, {quiet = true})
    assert.is_true(g.info.truncated)
    assert.are.equal("walk", g.regions[1].name) -- the names come before the records
    os.remove(cut)
  end)

  it("refuse a file whose only block of records is damaged, in one line", function()
    local data = slurp(path)
    local at = data:find("RECS", 1, true) + 32 + 50
    local bad = path .. ".bad"
    spit(bad, data:sub(1, at - 1) .. string.char(data:byte(at) ~ 0x10) .. data:sub(at + 1))
    local out, err, rc = support.sh(P .. " report " .. bad)
    assert.are.equal(2, rc)
    assert.are.equal("", out)
    assert.are.equal(("perfsh report: %s: no readable records (1 damaged block skipped (at byte %d: checksum "
      .. "mismatch), 15 records lost); what survived: the file header (version 2, %d values and 6 arguments per "
      .. "record); events %s; regions walk; command examples/recursive 3 4\n")
      :format(bad, at - 50 - 32 - 1, #events(), table.concat(events(), ",")), err)
    os.remove(bad)
  end)

  it("say a /proc file is not a regular file", function()
    local _, err, rc = support.sh(P .. " report /proc/self/status")
    assert.are.equal(2, rc)
    assert.are.equal("perfsh report: /proc/self/status: not a regular file\n", err)
  end)

  it("take records spilled as the ring fills, beyond the ring's capacity", function()
    local spill = os.tmpname() .. ".psnap"
    local t <close> = perfsh.spawn{"examples/loop", "1", "10000", events = events(), stdout = "/dev/null",
      spill = spill}
    local r = t:region{func = "spin"}
    local _, how = t:run{hits = 5000}
    assert.are.equal("paused", how)
    assert.are.equal(5000, r:stats().hits) -- readable mid-run
    assert.are.equal(0, t:run().code)
    assert.are.equal(10000, r:stats().hits)
    local seq = -1
    for h in t:hits() do
      assert.are.equal(seq + 1, h.seq)
      seq = h.seq
    end
    local f <close> = perfsh.load(spill)
    assert.is_true(f.info.complete)
    assert.are.equal(10000, f.info.records)
    assert.are.equal("10000", f.meta["entries.0"])
    f:close()
    -- damage in the second block of records costs that block only
    local data = slurp(spill)
    local first = data:find("RECS", 1, true)
    local second = data:find("RECS", first + 32 + string.unpack("<I4", data, first + 16), true)
    assert.truthy(second, "one block of records only")
    local n2 = string.unpack("<I4", data, second + 4)
    local at = second + 32 + 7
    spit(spill, data:sub(1, at - 1) .. string.char(data:byte(at) ~ 1) .. data:sub(at + 1))
    local out, err, rc = support.sh(P .. " report --csv " .. spill)
    assert.are.equal(0, rc)
    assert.are.equal(("perfsh: %s: 1 damaged block skipped (at byte %d: checksum mismatch), %d records lost; "
      .. "%d records kept\n"):format(spill, second - 1, n2, 10000 - n2), err)
    assert.are.equal(10000 - n2, tonumber(out:match("\nspin,[^,]+,(%d+),")))
    local g <close> = perfsh.load(spill, {quiet = true})
    assert.are.equal(10000 - n2, g.regions[1]:stats().hits)
    os.remove(spill)
  end)

  it("read back the file of a perfsh killed by SIGKILL while saving (left under its temporary name)", function()
    local spill = os.tmpname() .. ".psnap"
    local p = io.popen(P .. " stat -e task-clock -r spin --save " .. spill
      .. " examples/loop 1 100000000 >/dev/null 2>&1 & echo $!")
    local pid = p:read("l")
    p:close()
    -- --save is written whole: until it is renamed at the end, the records go to .NAME.XXXXXX beside it
    local d, base = spill:match("^(.*)/([^/]+)$")
    local function written()
      local ls = io.popen("ls -A " .. d)
      for n in ls:lines() do
        if n:sub(1, #base + 2) == "." .. base .. "." then ls:close() return d .. "/" .. n end
      end
      ls:close()
    end
    local size, temp = 0, nil
    for _ = 1, 800 do -- a block of records (up to 1 MiB) on disk; 40 s at most
      temp = written()
      local f = temp and io.open(temp, "rb")
      size = f and f:seek("end") or 0
      if f then f:close() end
      if size > (1 << 20) then break end
      os.execute("sleep 0.05")
    end
    os.execute("kill -KILL " .. pid)
    assert.is_true(size > (1 << 20), "the file never grew")
    assert.is_nil(io.open(spill), "a run killed before its end put the file in place")
    os.execute("sleep 0.2")
    os.rename(temp, spill)
    local out, err, rc = support.sh(P .. " report --csv " .. spill)
    assert.are.equal(0, rc, err)
    local kept = tonumber(err:match("; (%d+) records kept\n$"))
    assert.truthy(kept and kept > 1000, err)
    assert.truthy(err:find("no END block (the writer did not close it)", 1, true)
      or err:find("(truncated file)", 1, true), err)
    assert.are.equal(kept, tonumber(out:match("\nspin,[^,]+,(%d+),")))
    os.remove(spill)
  end)

  -- the tables after the header line (perfsh stat's output has the program's output before it)
  local function tables(out, header)
    local at = assert(out:find(header, 1, true), "no header " .. header .. " in:\n" .. out)
    return out:sub(out:find("\n", at, true) + 1)
  end

  it("print with perfsh report the same tables the live perfsh stat --save printed", function()
    local saved = os.tmpname() .. ".psnap"
    local expect = {["--per-cpu"] = "region work %(func, 12 hits%)", ["--per-thread"] = "thread %d+ %(6 hits%)",
      ["--per-thread --csv"] = "\nwork@%d+,task%-clock,6,", ["--csv"] = "\nwork,task%-clock,12,"}
    for _, opts in ipairs{"--per-cpu", "--per-thread", "--per-thread --csv", "--csv"} do
      local live, err, rc = support.sh(("%s stat --save %s %s -e task-clock,page-faults -r work examples/threads 6 50")
        :format(P, saved, opts))
      assert.are.equal(0, rc, err)
      local back, err2, rc2 = support.sh(("%s report %s %s"):format(P, opts, saved))
      assert.are.equal(0, rc2, err2)
      if opts:find("csv") then
        live = live:sub((assert(live:find("region,event,", 1, true))))
        assert.are.equal(live, back)
      else
        assert.are.equal(tables(live, "perfsh stat: examples/threads"), tables(back, "perfsh report: " .. saved))
      end
      assert.truthy(back:find(expect[opts]), back)
    end
    os.remove(saved)
  end)

  it("give the same statistics, whole, per thread and per CPU, live and from the saved file", function()
    local t <close> = perfsh.spawn{"examples/threads", "5", "100", events = {"task-clock", "page-faults"},
      stdout = "/dev/null"}
    local r = t:region{func = "work"}
    t:run()
    local saved = os.tmpname() .. ".psnap"
    t:save(saved)
    local f <close> = perfsh.load(saved)
    local back = f.regions[1]
    assert.are.same(r:stats(), back:stats())
    for _, by in ipairs{"thread", "cpu"} do
      local live = r:stats_by(by)
      assert.are.same(live, back:stats_by(by))
      local hits, migrated = 0, 0
      for _, st in ipairs(live) do hits, migrated = hits + st.hits, migrated + st.migrated end
      assert.are.equal(10, hits)
      assert.are.equal(r:stats().migrated, migrated)
    end
    assert.are.equal(2, #r:stats_by("thread"))
    assert.are.equal(5, r:stats_by("thread")[1].hits)
    os.remove(saved)
  end)

  it("refuse a foreign file with a one-line reason", function()
    local bad = os.tmpname()
    local w = assert(io.open(bad, "w"))
    w:write("not a snapshot at all\n")
    w:close()
    assert.has.error(function() perfsh.load(bad) end, bad .. ": not a perfsh snapshot file (bad magic)")
    local _, err, rc = support.sh(P .. " report " .. bad)
    assert.are.equal(2, rc)
    assert.are.equal("perfsh report: " .. bad .. ": not a perfsh snapshot file (bad magic)\n", err)
    os.remove(bad)
    os.remove(path)
  end)
end)

describe("perfsh tail", function()
  it("logs exactly the injected slow iterations, with counters against the median", function()
    local out, err, rc = support.sh(P .. " tail -r iteration --threshold-us 5000 examples/slow 1500")
    assert.are.equal(0, rc, err)
    local logged = {}
    for line in out:gmatch("[^\n]+") do
      local n = line:match("^hit=(%d+) ")
      if n then
        logged[#logged + 1] = tonumber(n)
        assert.truthy(line:find("x median)", 1, true), line)
      end
    end
    local want = {}
    for i = 99, 1499, 100 do want[#want + 1] = i end
    assert.are.same(want, logged)
    assert.truthy(err:find("perfsh tail: iteration: 1500 hits, 15 logged as slow", 1, true))
  end)

  it("lets a Lua callback decide, and logs to a function", function()
    local t <close> = perfsh.spawn{"examples/slow", "400", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "iteration", args = {"i"}}
    local lines, asked = {}, 0
    r:on_slow{threshold_us = 5000, log = function(_, hit) lines[#lines + 1] = hit.i end,
      decide = function(hit) asked = asked + 1 return hit.i ~= 199 end}
    t:run()
    assert.are.equal(4, asked)
    assert.are.same({99, 299, 399}, lines)
  end)
end)

describe("least-squares attribution", function()
  it("recovers known per-unit costs from recorded arguments (synthetic counter) within 2%", function()
    local t <close> = perfsh.spawn{"examples/attribute", "120", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "do_work", args = {"A", "B", "C"}}
    t:run()
    local hits = r:list()
    assert.are.equal(120, #hits)
    for _, h in ipairs(hits) do h.work = 10 * h.A + 25 * h.B + 100 * h.C + 15 + (h.hit % 3) - 1 end
    local res = perfsh.attribute(hits, {"A", "B", "C"}, "work")
    assert.is_true(math.abs(res.costs.A - 10) < 0.2)
    assert.is_true(math.abs(res.costs.B - 25) < 0.5)
    assert.is_true(math.abs(res.costs.C - 100) < 2)
    assert.is_true(res.cond > 1)
  end)

  it("recovers the page-fault costs of the example within 2% (a software event: any machine)", function()
    local out, err, rc = support.sh(P .. " attribute --csv -r touch_pages --args A,B,C -e page-faults "
      .. "examples/attribute 150 pages")
    assert.are.equal(0, rc, err)
    local costs = {}
    for name, v in out:gmatch("\n(%w+),([-%d.e+]+)") do costs[name] = tonumber(v) end
    for name, want in pairs{A = 1, B = 3, C = 7} do
      assert.is_true(math.abs(costs[name] - want) <= 0.02 * want, name .. " " .. tostring(costs[name]))
    end
  end)

  it("recovers the instruction costs of the example within 2%", function()
    if not support.need_pmu(pending) then return end
    local out, err, rc = support.sh(P .. " attribute --csv -r do_work --args A,B,C -e instructions "
      .. "examples/attribute 200")
    assert.are.equal(0, rc, err)
    local costs = {}
    for name, v in out:gmatch("\n(%w+),([-%d.e+]+)") do costs[name] = tonumber(v) end
    for name, want in pairs{A = 10, B = 25, C = 100} do
      assert.is_true(math.abs(costs[name] - want) <= 0.02 * want, name .. " " .. tostring(costs[name]))
    end
  end)

  it("refuses too few hits and a rank-deficient design", function()
    assert.has.error(function() perfsh.attribute({{A = 1, B = 2, x = 3}}, {"A", "B"}, "x") end,
      "too few hits: 1 for 3 unknowns; run more calls")
    local hs = {}
    for i = 1, 10 do hs[i] = {A = i, B = 2 * i, x = 3 * i} end
    local ok, err = pcall(perfsh.attribute, hs, {"A", "B"}, "x")
    assert.is_false(ok)
    assert.truthy(err:find("rank deficient", 1, true), err)
  end)

  it("prints name,cost rows with --csv", function()
    local out, err, rc = support.sh(P .. " attribute --csv -r do_work --args A,B,C examples/attribute 60")
    assert.are.equal(0, rc, err)
    assert.truthy(out:match("\nname,cost\nA,[-%d.e+]+\nB,[-%d.e+]+\nC,[-%d.e+]+\nconst,[-%d.e+]+\n$"), out)
  end)
end)

describe("exports", function()
  it("writes a Chrome/Perfetto trace that parses back with one slice per hit", function()
    local trace = os.tmpname()
    local _, err, rc = support.sh(P .. " stat -e task-clock -r work --trace " .. trace .. " examples/threads 40 100")
    assert.are.equal(0, rc, err)
    local f = assert(io.open(trace))
    local doc = json.decode(f:read("a"))
    f:close()
    os.remove(trace)
    local slices, tids = 0, {}
    for _, e in ipairs(doc.traceEvents) do
      if e.ph == "X" then
        slices = slices + 1
        assert.are.equal("work", e.name)
        assert.is_true(e.dur >= 0 and e.ts >= 0)
        assert.is_number(e.args["task-clock"])
        tids[e.tid] = true
      end
    end
    assert.are.equal(80, slices)
    local n = 0
    for _ in pairs(tids) do n = n + 1 end
    assert.are.equal(2, n)
  end)

  it("writes JSON lines and CSV of every hit", function()
    local path = os.tmpname() .. ".psnap"
    support.sh(P .. " stat -e task-clock -r walk --save " .. path .. " examples/recursive 2 2")
    local out = support.sh(P .. " report --jsonl " .. path)
    local n = 0
    for line in out:gmatch("[^\n]+") do
      local o = json.decode(line)
      assert.are.equal("walk", o.region)
      assert.is_number(o.events["task-clock"])
      n = n + 1
    end
    assert.are.equal(2, n)
    out = support.sh(P .. " report --hits-csv " .. path)
    assert.truthy(out:match("^region,hit,tid,cpu_start,cpu_end,t_start,t_end,time_ns,wall_ns,depth,flags,"
      .. "task%-clock\n"))
    os.remove(path)
  end)

  it("writes JSON that reads back to the same values: exact floats, sorted keys, {} and []", function()
    local export = require "perfsh.export"
    local v = {b = 0.1 + 0.2, a = 2 ^ 53, big = 123456789012345678, s = "q\"\\\n\1", obj = {},
      arr = setmetatable({}, export.array_mt), list = {1, 2.5, "x"}, nested = {z = {y = -1.25e-300}}}
    local text = export.json(v)
    assert.are.equal('{"a":9007199254740992,"arr":[],"b":0.30000000000000004,"big":123456789012345678,'
      .. '"list":[1,2.5,"x"],"nested":{"z":{"y":-1.25e-300}},"obj":{},"s":"q\\"\\\\\\n\\u0001"}', text)
    local back = json.decode(text)
    assert.are.equal(v.b, back.b)
    assert.are.equal(v.a, back.a)
    assert.are.equal(v.s, back.s)
    assert.are.equal("null", export.json(0 / 0))
    assert.has.error(function()
      local t = {}
      t.t = t
      export.json(t)
    end)
  end)

  it("draws a log-scale histogram with p50, p99 and max marked", function()
    local out = support.sh(P .. " stat --hist -e task-clock -r iteration examples/slow 300")
    assert.truthy(out:find("on-CPU time per hit: 300 hits, p50 ", 1, true))
    assert.truthy(out:find("<- p50", 1, true))
    assert.truthy(out:find("p99", 1, true))
    assert.truthy(out:find("max\n", 1, true))
  end)
end)

describe("per-CPU attribution", function()
  it("breaks hits down by CPU, core and L3 and counts migrations", function()
    local topo = require("perfsh.topology")
    local t <close> = perfsh.spawn{"examples/threads", "100", "100", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "work"}
    t:run()
    local b = topo.breakdown(r:list())
    assert.are.equal(200, b.total)
    local sum = 0
    for _, hs in pairs(b.cpu) do sum = sum + #hs end
    assert.are.equal(200, sum)
    local m = 0
    for h in r:hits() do if h.cpu_start ~= h.cpu_end then m = m + 1 end end
    assert.are.equal(m, b.migrated)
    local out = support.sh(P .. " stat --per-cpu -e task-clock -r work examples/threads 20 100")
    assert.truthy(out:find("region work by CPU", 1, true))
    assert.truthy(out:find("L3 domain", 1, true))
  end)
end)

describe("formulas and intervals", function()
  it("derive metrics from formulas kept as data and reject unknown fields", function()
    assert.are.equal(2.5, perfsh.derive({instructions = 250, cycles = 100}, "ipc"))
    assert.are.equal("instructions / cycles", perfsh.metrics.ipc)
    assert.are.equal(0.25, perfsh.derive({["cache-misses"] = 1, ["cache-references"] = 4}, "cache-miss-ratio"))
    assert.has.error(function() perfsh.derive({cycles = 1}, "stalls / cycles") end,
      "unknown field 'stalls' in formula 'stalls / cycles'")
  end)

  it("compute intervals between any two fields, across hits too", function()
    local t <close> = perfsh.spawn{"examples/recursive", "3", "2", events = events(), stdout = "/dev/null"}
    local r = t:region{func = "walk"}
    t:run()
    local hs = r:list()
    local d = perfsh.interval(hs, "t_start", "t_end")
    for i, h in ipairs(hs) do assert.are.equal(h.wall_ns, d[i]) end
    local gaps = perfsh.interval(hs, "t_end", "next.t_start")
    assert.are.equal(2, #gaps)
    for _, g in ipairs(gaps) do assert.is_true(g > 0) end
    local ev = t:events()[1]
    local own = perfsh.interval(hs, "start." .. ev, "end." .. ev, t:events())
    for i, h in ipairs(hs) do assert.are.equal(h["end"][1] - h.start[1], own[i]) end
  end)
end)

-- Parse CSV text as RFC 4180 reads it (quoted fields may hold commas, doubled quotes, line breaks):
-- an array of rows, each an array of fields. Written apart from perfsh.csv, to check it.
local function rfc4180_rows(text)
  local rows, row, i, n = {}, {}, 1, #text
  while i <= n do
    local field
    if text:sub(i, i) == '"' then
      local parts, j = {}, i + 1
      while true do
        local k = assert(text:find('"', j, true), "an unclosed quote")
        parts[#parts + 1] = text:sub(j, k - 1)
        if text:sub(k + 1, k + 1) == '"' then
          parts[#parts + 1] = '"'
          j = k + 2
        else
          i = k + 1
          break
        end
      end
      field = table.concat(parts)
    else
      local k = text:find("[,\n]", i) or n + 1
      field, i = text:sub(i, k - 1), k
    end
    row[#row + 1] = field
    local sep = text:sub(i, i)
    i = i + 1
    if sep ~= "," then
      rows[#rows + 1], row = row, {}
    end
  end
  return rows
end

describe("perfsh.csv", function()
  local csv = require "perfsh.csv"
  local tricky = 'a, "quoted"\nand more'

  it("quotes a field with a comma, a quote and a newline so that it reads back whole (RFC 4180)", function()
    local line = csv.row({"region", tricky, 42, 1.5, nil, "\r"}, 6)
    assert.are.equal('region,"a, ""quoted""\nand more",42,1.5,,"\r"\n', line)
    assert.are.same({{"region", tricky, "42", "1.5", "", "\r"}}, rfc4180_rows(line))
  end)

  it("is what every CSV of the recipes is written with: a region name as hits and as statistics", function()
    local export, report = require "perfsh.export", require "perfsh.report"
    local out = {}
    local sink = {write = function(self, ...)
      for _, s in ipairs{...} do out[#out + 1] = s end
      return self
    end}
    export.csv(sink, {{region = 1, hit = 1, tid = 7, cpu_start = 0, cpu_end = 0, t_start = 10, t_end = 20,
      time_ns = 10, wall_ns = 10, depth = 0, flags = 0, ["task-clock"] = 9}}, {"task-clock"}, {[1] = tricky})
    local rows = rfc4180_rows(table.concat(out))
    assert.are.equal(2, #rows)
    assert.are.equal(tricky, rows[2][1])
    assert.are.equal("9", rows[2][#rows[2]])
    out = {}
    report.csv_header(sink)
    report.csv_rows(sink, tricky, {"task-clock"}, {["task-clock"] = core.stats{9, 11}, time_ns = core.stats{5, 7}})
    rows = rfc4180_rows(table.concat(out))
    assert.are.equal("region", rows[1][1])
    assert.are.equal(tricky, rows[2][1])
    assert.are.equal(3, #rows)
    assert.are.same({tricky, "time_ns", "2", "12"}, {table.unpack(rows[3], 1, 4)})
    assert.are.equal(#rows[1], #rows[3])
  end)
end)
