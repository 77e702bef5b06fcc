-- perfsh check: the regression gate. Its baseline (what identifies the measurement, every field
-- checked), its errors (one line, exit 2, a JUnit error case), the callgrind engine (exact counts)
-- and the counters engine (per hit, less the catcher's cost of an empty hit, under a stated test).
local support = dofile("tests/support.lua")
local P = support.perfsh
local json = require "dkjson"

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
-- tests/fixtures/check_work.c three ways, each as DIR/NAME/check_work (a check takes a rebuild by
-- its file name): good as it is, bad with an extra loop (-DEXTRA: some 20 times the cost), twice
-- with twice the work per call (-DWORK=2)
local good, bad, twice = dir .. "/good/check_work", dir .. "/bad/check_work", dir .. "/twice/check_work"
local base = dir .. "/base.json"

local read, write = support.read, support.write

-- The row of region work, event @ev in the table perfsh check printed: its change (a fraction)
-- and result. The columns: region event baseline now change change% detectable limit result.
local function row_of(out, ev)
  for line in out:gmatch("[^\n]+") do
    local w = {}
    for word in line:gmatch("%S+") do w[#w + 1] = word end
    if w[1] == "work" and w[2] == ev and #w == 9 then return tonumber((w[6]:gsub("%%$", ""))) / 100, w[9] end
  end
end

describe("perfsh check", function()
  setup(function()
    for exe, def in pairs{[good] = "", [bad] = "-DEXTRA", [twice] = "-DWORK=2"} do
      local _, err, rc = support.sh(("mkdir -p %s && gcc -O2 -g %s -o %s tests/fixtures/check_work.c"):format(
        exe:match("^(.*)/"), def, exe))
      assert.are.equal(0, rc, err)
    end
    local out, err, rc = support.sh(("%s check --engine callgrind -r work --save-baseline %s %s 200"):format(P, base,
      good))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("work Ir: [%d,]+, spread ±0.0%% over the runs, 1 hit\n"), out)
  end)

  teardown(function()
    os.execute("rm -rf " .. dir)
  end)

  it("records the engine, the events, the program with its build id, and per region each run's count", function()
    local b = json.decode(read(base))
    assert.are.equal(2, b.perfsh_check)
    assert.are.equal("callgrind", b.engine)
    assert.are.same({"Ir"}, b.events)
    assert.are.same({good, "200"}, b.command)
    assert.are.equal(good, b.program.path)
    local id = support.sh("LC_ALL=C readelf -n " .. good .. " | sed -n 's/.*Build ID: *//p'")
    assert.are.equal(id:gsub("%s+$", ""), b.program.build_id)
    assert.are.equal(1, b.regions.work.hits)
    local ir = b.regions.work.events.Ir
    assert.is_true(ir.median > 200)
    assert.are.same({ir.median}, ir.runs)
  end)

  it("passes the unchanged build and fails one with an extra loop at the same path, with JUnit XML", function()
    local junit, run = dir .. "/junit.xml", dir .. "/run/check_work"
    local rebuilt = dir .. "/rebuilt.json"
    local _, err, rc = support.sh(("mkdir -p %s/run && cp %s %s"):format(dir, good, run))
    assert.are.equal(0, rc, err)
    _, err, rc = support.sh(("%s check --engine callgrind -r work --save-baseline %s %s 200"):format(P, rebuilt, run))
    assert.are.equal(0, rc, err)
    local out
    out, err, rc = support.sh(("%s check --baseline %s --junit %s %s 200"):format(P, rebuilt, junit, run))
    assert.are.equal(0, rc, err .. out)
    assert.truthy(out:find("\n  work +Ir +[%d,]+ +[%d,]+ +0 +%+0%.00%% +±0%.00%% +%+1%.00%% +ok\n"), out)
    assert.truthy(out:find("\nPASS: 0 of 1 checks over their limit\n", 1, true), out)
    -- the same path rebuilt (another build id): the regression case, not a foreign program
    _, err, rc = support.sh(("cp %s %s"):format(bad, run))
    assert.are.equal(0, rc, err)
    out, err, rc = support.sh(("%s check --baseline %s --junit %s %s 200"):format(P, rebuilt, junit, run))
    assert.are.equal(1, rc, err .. out)
    assert.truthy(out:find("note: " .. run .. " was rebuilt since the baseline (build id ", 1, true), out)
    assert.truthy(out:find("REGRESSION", 1, true), out)
    assert.truthy(out:find("\nFAIL: 1 of 1 checks over their limit\n", 1, true), out)
    local py = "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); "
      .. "print(d.documentElement.getAttribute('failures'), len(d.getElementsByTagName('failure')), "
      .. "d.getElementsByTagName('testcase')[0].getAttribute('name'))"
    out, err, rc = support.sh(("python3 -c %q %s"):format(py, junit))
    assert.are.equal(0, rc, err)
    assert.are.equal("1 1 Ir\n", out)
    -- a wide enough limit lets the same change pass
    local limited = P .. " check --engine callgrind --limit %s --baseline " .. base .. " " .. bad .. " 200"
    out, err, rc = support.sh(limited:format("Ir=2000%"))
    assert.are.equal(0, rc, err .. out)
    out, err, rc = support.sh(limited:format("Ir=10"))
    assert.are.equal(1, rc, err .. out)
  end)

  it("perfsh.check{...} returns the results as a table instead of exiting, and errors with a code", function()
    local perfsh = require "perfsh"
    local r = perfsh.check{good, "200", regions = {"work"}, engine = "callgrind", baseline = base}
    assert.is_true(r.pass)
    assert.are.equal(0, r.fails)
    assert.are.equal("callgrind", r.engine)
    assert.are.equal(1, #r.rows)
    local row = r.rows[1]
    assert.are.equal("work", row.region)
    assert.are.equal("Ir", row.event)
    assert.are.equal(row.baseline, row.now)
    assert.are.equal(0, row.change)
    assert.are.equal(0, row.detectable)
    assert.are.equal("+1.00%", row.limit)
    assert.are.equal("ok", row.verdict)
    r = perfsh.check{command = {bad, "200"}, region = "work", engine = "callgrind", baseline = base,
      limits = {Ir = {rel = 0.5}}}
    assert.is_false(r.pass)
    assert.are.equal("regression", r.rows[1].verdict)
    assert.is_true(r.rows[1].now > r.rows[1].baseline)
    local saved = dir .. "/lua.json"
    r = perfsh.check{good, "200", regions = {"work"}, engine = "callgrind", save_baseline = saved}
    assert.are.equal(saved, r.saved)
    assert.are.equal(r.regions.work.events.Ir.median, perfsh.check{good, "200", baseline = saved}.rows[1].now)
    local ok, e = pcall(perfsh.check, {good, engine = "callgrind", regions = {"work"}})
    assert.is_false(ok)
    assert.are.equal("usage", require("perfsh.baseline").code(e))
    assert.are.equal("perfsh check: give one of --save-baseline FILE (record) or --baseline FILE (compare)",
      tostring(e))
    ok, e = pcall(perfsh.check, {good, "200", baseline = saved, engine = "counters"})
    assert.is_false(ok)
    assert.are.equal("identity", require("perfsh.baseline").code(e))
  end)

  it("takes the baseline's engine and events, and refuses a conflicting --engine or -e (exit 2)", function()
    -- no --engine: callgrind, the baseline's (the counters engine would measure task-clock)
    local out, err, rc = support.sh(("%s check --baseline %s %s 200"):format(P, base, good))
    assert.are.equal(0, rc, err .. out)
    assert.truthy(out:find("(engine callgrind, 1 run; baseline 1)", 1, true), out)
    assert.truthy(out:find("\n  work +Ir ", 1), out)
    local rows = {
      {"--engine counters", ("perfsh check: %s was made with --engine callgrind; drop --engine counters (the "
        .. "baseline's engine is the default)"):format(base)},
      {"-e Dr", ("perfsh check: %s counts Ir; drop -e Dr (the baseline's events are the default)"):format(base)},
    }
    for _, row in ipairs(rows) do
      out, err, rc = support.sh(("%s check %s --baseline %s %s 200"):format(P, row[1], base, good))
      assert.are.equal(2, rc, row[1] .. ": " .. err .. out)
      assert.are.equal(row[2] .. "\n", err)
      assert.are.equal("", out)
    end
  end)

  it("refuses a baseline measured on another program that shares the function's name, saying whose", function()
    local loop = dir .. "/loop.json"
    local out, err, rc = support.sh(("%s check --engine callgrind -r main --save-baseline %s ./examples/loop 1 100")
      :format(P, loop))
    assert.are.equal(0, rc, err .. out)
    local id = json.decode(read(loop)).program.build_id
    out, err, rc = support.sh(("%s check --baseline %s ./examples/sum"):format(P, loop))
    assert.are.equal(2, rc, err .. out)
    assert.are.equal("", out)
    assert.are.equal(("perfsh check: %s was measured on ./examples/loop (build id %s), not ./examples/sum (build id "
      .. "%s); record a baseline of ./examples/sum with --save-baseline\n"):format(loop, id:sub(1, 16),
      support.sh("LC_ALL=C readelf -n examples/sum | sed -n 's/.*Build ID: *//p'"):sub(1, 16)), err)
    -- the same build under another name is the same program
    out, err, rc = support.sh(("cp ./examples/loop %s/loop-copy"):format(dir))
    assert.are.equal(0, rc, err .. out)
    out, err, rc = support.sh(("%s check --baseline %s %s/loop-copy 1 100"):format(P, loop, dir))
    assert.are.equal(0, rc, err .. out)
  end)

  it("exits 2 with one line naming the field for a baseline with a wrong or missing one", function()
    local b = json.decode(read(base))
    local function with(path, value)
      local copy = json.decode(read(base))
      local t, keys = copy, {}
      for k in path:gmatch("[^.]+") do keys[#keys + 1] = tonumber(k) or k end
      for i = 1, #keys - 1 do t = t[keys[i]] end
      t[keys[#keys]] = value
      return json.encode(copy)
    end
    local rows = {
      {with("regions.work.events.Ir.median", "abc"), 'regions.work.events.Ir.median is "abc", not a number'},
      {with("regions.work.events.Ir.runs", {1, "x"}), 'regions.work.events.Ir.runs[2] is "x", not a number'},
      {with("regions.work.hits", false), "regions.work.hits is false, not a number"},
      {with("events", "Ir"), 'events is "Ir", not an array of strings'},
      {with("runs", 0), "runs is 0, not a count of runs (1 or more)"},
      {with("program.build_id", 12), "program.build_id is 12, not a build id (hex) or false"},
      {with("program", json.null), "the file has no 'program'"},
      {with("regions.work.events", {Dr = b.regions.work.events.Ir}), "regions.work.events has no Ir"},
      {with("perfsh_check", 1),
        "is not a perfsh check baseline of this version (perfsh_check: 1, this perfsh reads 2)"},
      {'{"engine": "callgrind", "regions": ', "is not valid JSON"},
    }
    local file = dir .. "/typed.json"
    for _, row in ipairs(rows) do
      write(file, row[1])
      local out, err, rc = support.sh(("%s check --baseline %s %s 200"):format(P, file, good))
      assert.are.equal(2, rc, row[2] .. ": " .. err .. out)
      assert.truthy(err:find(row[2], 1, true), row[2] .. " in: " .. err)
      assert.truthy(err:find("^perfsh check: "), err)
      assert.are.equal(1, select(2, err:gsub("\n", "")), err)
      assert.falsy(err:find("traceback", 1, true), err)
    end
  end)

  it("writes the JUnit file with an error test case naming the reason when it exits 2", function()
    local junit = dir .. "/error.xml"
    write(junit, "an older report\n")
    write(dir .. "/typed.json", (read(base):gsub('"median":%s*[%d.]+', '"median":"abc"')))
    local _, err, rc = support.sh(("%s check --baseline %s/typed.json --junit %s %s 200"):format(P, dir, junit, good))
    assert.are.equal(2, rc, err)
    local py = "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); e = d.getElementsByTagName('error')[0]; "
      .. "print(d.documentElement.getAttribute('errors'), d.getElementsByTagName('testcase')[0].getAttribute('name'), "
      .. "e.getAttribute('type')); print(e.getAttribute('message'))"
    local out
    out, err, rc = support.sh(("python3 -c %q %s"):format(py, junit))
    assert.are.equal(0, rc, err)
    local lines = support.lines(out)
    assert.are.equal("1 error baseline", lines[1])
    assert.truthy(lines[2]:find('regions.work.events.Ir.median is "abc", not a number', 1, true), out)
    -- and for a region that is not in the program
    _, err, rc = support.sh(("%s check -r nosuch --engine callgrind --save-baseline %s/x.json --junit %s %s 200")
      :format(P, dir, junit, good))
    assert.are.equal(2, rc, err)
    assert.truthy(read(junit):find("region 'nosuch': no function 'nosuch' in ", 1, true), read(junit))
    assert.is_nil(io.open(dir .. "/x.json"))
  end)

  it("exits 2 with one line for a missing baseline, an unknown region or too few counter runs", function()
    local rows = {
      {"--baseline " .. dir .. "/none.json", "perfsh check: cannot read the baseline: "},
      {"-r nosuch --baseline " .. base, "perfsh check: region 'nosuch' is not in the baseline"},
      {"-r nosuch --engine callgrind --save-baseline " .. dir .. "/x.json",
        "perfsh check: region 'nosuch': no function 'nosuch' in "},
      {"-r work --engine counters --runs 2 --save-baseline " .. dir .. "/x.json",
        "perfsh check: --runs 2: the counters engine needs 3 runs or more (its noise is their spread)"},
    }
    for _, row in ipairs(rows) do
      local out, err, rc = support.sh(("%s check %s %s 200"):format(P, row[1], good))
      assert.are.equal(2, rc, row[1] .. ": " .. err .. out)
      assert.truthy(err:find(row[2], 1, true), err)
      assert.are.equal(1, select(2, err:gsub("\n", "")), err)
    end
  end)

  describe("with the counters engine", function()
    local hitgate = require "perfsh.hitgate"

    it("takes a run's figure of a time as the 10th percentile of its hits, of a count as the median", function()
      local xs = {}
      for i = 1, 100 do xs[i] = 1000 + i end
      xs[5] = 500000 -- a preempted hit
      assert.are.equal(1011, hitgate.typical({table.unpack(xs)}, "time_ns"))
      assert.are.equal(1011, hitgate.typical({table.unpack(xs)}, "task-clock:u"))
      assert.are.equal(1051, hitgate.typical({table.unpack(xs)}, "page-faults"))
    end)

    it("leaves a run far from the others out of the noise, and estimates it from both sides' runs", function()
      -- two sides of 5 runs, spread 1 about their medians; one run of the second doubled
      local a, b = {100, 101, 99, 100.5, 99.5}, {199.5, 200, 201, 199, 400}
      local s, out = hitgate.spread({a, b})
      assert.are.equal(1, out)
      -- squares of what is kept: 0 1 1 .25 .25 and .25 0 1 1, over 9 - 2 degrees of freedom
      assert.is_true(math.abs(s - math.sqrt(4.75 / 7)) < 1e-9, s)
      local se = hitgate.std_error(a, b)
      assert.is_true(math.abs(se - 1.2533 * s * math.sqrt(2 / 5)) < 1e-9, se)
      -- the medians move by 100, the doubled run not at all
      assert.are.equal(100, hitgate.median(b) - hitgate.median(a))
    end)

    it("allows times, not counts, what moves between the baseline's session and the check's", function()
      local a, b = {100, 101, 99, 100.5, 99.5}, {199.5, 200, 201, 199, 400}
      local se = hitgate.std_error(a, b)
      assert.are.equal(se, hitgate.change_error("page-faults", a, b, 100))
      local t = hitgate.change_error("time_ns", a, b, 100)
      assert.is_true(math.abs(t - math.sqrt(se ^ 2 + 2 * (hitgate.SESSION * 100) ^ 2)) < 1e-9, t)
      assert.are.equal(t, hitgate.change_error("task-clock:u", a, b, 100))
    end)

    it("takes a count of chance as a Poisson count per hit: one page fault more in a one-hit region is no "
      .. "regression, and does not leave the gate undecided", function()
      local gate = require "perfsh.gate"
      local function m(pf, t, hits)
        return {work = {hits = hits, events = {["page-faults"] = {median = pf, runs = {pf, pf, pf, pf, pf}},
          time_ns = {median = t, runs = {t, t * 1.01, t * 0.99, t * 1.005, t * 0.995}}}}}
      end
      local rows = gate.compare({regions = m(1, 4e6, 1)}, m(2, 4e6, 1), {"work"}, {"page-faults", "time_ns"}, {},
        "counters")
      assert.are.equal("ok", rows[1].verdict) -- 1 -> 2 faults: +100%, within 4 Poisson standard errors
      assert.is_false(rows[1].decides)
      assert.are.equal("ok", rows[2].verdict)
      -- over 2,000 hits the same counts are precise: 1 -> 2 faults a hit is a regression
      rows = gate.compare({regions = m(1, 4e6, 2000)}, m(2, 4e6, 2000), {"work"}, {"page-faults"}, {}, "counters")
      assert.are.equal("regression", rows[1].verdict)
      -- a limit given makes it decide: undetectable in one hit
      rows = gate.compare({regions = m(1, 4e6, 1)}, m(1, 4e6, 1), {"work"}, {"page-faults"},
        {["page-faults"] = {rel = 0.1}}, "counters")
      assert.are.equal("undetectable", rows[1].verdict)
    end)

    -- The Done-when of issue 16: a function of about 2.5 us a call (2,800 iterations), 2,000 calls,
    -- and the same built with twice the work, at one path. With the floor taken away, in the tries
    -- of bench/gate_power.lua on the loaded 2-CPU VM this was written on, under ptrace the slower
    -- build's own cost read +94% to +121% (detectable ±9% to ±34%) and the unchanged build -10% to
    -- +6% (detectable ±10% to ±20%, at least ±8.5% with the allowance for what moves between
    -- sessions). The assertions leave that room: the slower build fails by +50% or more, the
    -- unchanged one passes within ±50% (a limit is the larger of +5% and the detectable change, at
    -- most +50% before the check says it cannot decide).
    -- The uprobe catcher's cost a hit jumps by some 3.5 us between runs there (the floor read 15 or
    -- 18.5 us), more than the function's work, so its runs may be too noisy to decide (2 tries of 5
    -- of the unchanged build in one session: detectable ±52%); there the check may say so (exit 2,
    -- the reason on stderr), but never pass the slower build nor fail the unchanged one.
    -- How often the gate decides is a figure of the machine's quiet, not a property a test can hold
    -- on a shared CI machine (under ptrace there, 15 + 15 runs once read ±100%): bench/gate_power.lua
    -- measures it. What a test holds under every catcher is the gate's safety: it never passes the
    -- slower build nor fails the unchanged one, and when it cannot decide it says so (exit 2).
    local function twice_the_work(pending, backend)
      if backend and not support.need_uprobes(pending) then return end
      local run, cbase = dir .. "/counters/check_work", dir .. "/counters.json"
      local opts = backend and "--backend " .. backend .. " " or ""
      local _, err, rc = support.sh(("mkdir -p %s/counters && cp %s %s"):format(dir, good, run))
      assert.are.equal(0, rc, err)
      local out
      out, err, rc = support.sh(("%s check --engine counters %s-r work --save-baseline %s %s 2800 2000"):format(P, opts,
        cbase, run))
      assert.are.equal(0, rc, err .. out)
      assert.truthy(out:find("work: own cost a hit = the hit less the catcher's cost of an empty hit of it (floor, "
        .. "entry and return)", 1, true), out)
      local b = json.decode(read(cbase))
      assert.are.equal(backend or "ptrace", b.catcher)
      -- 5 runs, and up to twice as many more where they were too noisy to detect +50%
      local n = #b.regions.work.events.time_ns.runs
      assert.is_true(n >= 5 and n <= 15 and n % 5 == 0, tostring(n))
      local check = ("%s check --baseline %s %s 2800 2000"):format(P, cbase, run)
      local function abstained()
        assert.truthy(err:find("^perfsh check: work [%w_-]+: the smallest change these runs can detect is ±"), err)
        assert.truthy(out:find("\nUNDECIDED: 0 of 3 checks over their limit\n", 1, true), out)
      end
      _, err, rc = support.sh(("cp %s %s"):format(twice, run))
      assert.are.equal(0, rc, err)
      out, err, rc = support.sh(check)
      if rc == 2 then
        abstained()
      else
        assert.are.equal(1, rc, err .. out)
        local change, result = row_of(out, "time_ns")
        assert.are.equal("REGRESSION", result, out)
        -- the verdict is the gate's contract; the change read is near +100% under ptrace, and
        -- under uprobe (a floor of ~20 us a hit against 2.5 us of work) once read +197%
        assert.is_true(change > 0.5 and change < (backend == "uprobe" and 3 or 1.6), out)
        assert.truthy(out:find("\ndetectable: ±[%d.]+%% %(work "), out)
      end
      _, err, rc = support.sh(("cp %s %s"):format(good, run))
      assert.are.equal(0, rc, err)
      out, err, rc = support.sh(check)
      if rc == 2 then
        abstained()
      else
        assert.are.equal(0, rc, err .. out)
        local change, result = row_of(out, "time_ns")
        assert.is_true(result == "ok" or result == "faster", out)
        assert.is_true(math.abs(change) < 0.5, out)
      end
    end

    it("fails a build with twice the work per call and passes the unchanged one, or says its runs cannot decide "
      .. "(2,000 calls of 2.5 us)",
      function() twice_the_work(pending) end)

    it("does so with the uprobe catcher too, or says its runs cannot decide",
      function() twice_the_work(pending, "uprobe") end)

    it("never calls a 50 ns function with twice the work faster: it fails or says it cannot detect", function()
      local run, cbase = dir .. "/short/check_work", dir .. "/short.json"
      local _, err, rc = support.sh(("mkdir -p %s/short && cp %s %s"):format(dir, good, run))
      assert.are.equal(0, rc, err)
      local out
      out, err, rc = support.sh(("%s check --engine counters -r work --save-baseline %s %s 55 2000"):format(P, cbase,
        run))
      assert.are.equal(0, rc, err .. out)
      _, err, rc = support.sh(("cp %s %s"):format(twice, run))
      assert.are.equal(0, rc, err)
      out, err, rc = support.sh(("%s check --baseline %s %s 55 2000"):format(P, cbase, run))
      assert.is_true(rc == 1 or rc == 2, err .. out)
      assert.falsy(out:find(" faster\n", 1, true), out)
      if rc == 2 then
        assert.truthy(err:find("^perfsh check: work [%w_-]+: the smallest change these runs can detect is ±"), err)
        assert.truthy(out:find("UNDETECTABLE", 1, true), out)
      end
    end)

    it("runs perfsh and the program on one CPU, the baseline's, and gives perfsh its CPUs back", function()
      local core, perfsh = require "perfsh.core", require "perfsh"
      local before = core.affinity()
      local r = perfsh.check{good, "28", "100", regions = {"work"}, engine = "counters", runs = 3,
        save_baseline = dir .. "/cpu.json"}
      assert.are.same(before, core.affinity())
      if #before > 1 then
        assert.truthy(r.cpu, "pinned")
        local found = false
        for _, c in ipairs(before) do found = found or c == r.cpu end
        assert.is_true(found)
        assert.are.equal(r.cpu, json.decode(read(dir .. "/cpu.json")).cpu)
        -- the check goes to the baseline's CPU wherever perfsh is now
        local other = before[1] == r.cpu and before[2] or before[1]
        core.affinity({other})
        local ok, c = pcall(perfsh.check, {good, "28", "100", baseline = dir .. "/cpu.json"})
        core.affinity(before)
        assert.is_true(ok, tostring(c))
        assert.are.equal(r.cpu, c.cpu)
        assert.are.same(before, core.affinity())
      end
    end)
  end)
end)
