-- perfsh check: the regression gate, with the callgrind engine (exact counts on any machine).
local support = dofile("tests/support.lua")
local P = support.perfsh

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local good, bad, base = dir .. "/good", dir .. "/bad", dir .. "/base.json"

describe("perfsh check", function()
  setup(function()
    -- the same function twice: -DEXTRA adds a loop to work()
    for exe, def in pairs{[good] = "", [bad] = "-DEXTRA"} do
      local _, err, rc = support.sh(("gcc -O2 -g %s -o %s tests/fixtures/check_work.c"):format(def, exe))
      assert.are.equal(0, rc, err)
    end
    local out, err, rc = support.sh(("%s check --engine callgrind -r work --save-baseline %s %s 200"):format(P, base,
      good))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("work Ir: median", 1, true), out)
  end)

  teardown(function()
    os.execute("rm -rf " .. dir)
  end)

  it("records the engine, the events and per region the median and noise", function()
    local f = assert(io.open(base))
    local b = require("dkjson").decode(f:read("a"))
    f:close()
    assert.are.equal("callgrind", b.engine)
    assert.are.same({"Ir"}, b.events)
    assert.are.equal(1, b.regions.work.hits)
    local ir = b.regions.work.events.Ir
    assert.is_true(ir.median > 200)
    assert.are.equal(ir.median, ir.min)
    assert.are.equal(ir.median, ir.max)
    assert.are.equal(0, ir.noise)
  end)

  it("passes the unchanged build and fails one with an extra loop, with JUnit XML", function()
    local junit = dir .. "/junit.xml"
    local out, err, rc = support.sh(("%s check --engine callgrind --baseline %s --junit %s %s 200"):format(P, base,
      junit, good))
    assert.are.equal(0, rc, err .. out)
    assert.truthy(out:find("\n  work +Ir +[%d,]+ +[%d,]+ +0 +%+0%.00%% +%+1%.00%% +ok\n"), out)
    assert.truthy(out:find("\nPASS: 0 of 1 checks over their limit\n", 1, true), out)
    out, err, rc = support.sh(("%s check --engine callgrind --baseline %s --junit %s %s 200"):format(P, base, junit,
      bad))
    assert.are.equal(1, rc, err .. out)
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

  it("perfsh.check{...} returns the results as a table instead of exiting", function()
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
    assert.are.equal(r.regions.work.events.Ir.median, perfsh.check{good, "200", engine = "callgrind",
      baseline = saved}.rows[1].now)
    assert.has.error(function() perfsh.check{good, engine = "callgrind", regions = {"work"}} end,
      "perfsh check: give one of --save-baseline FILE (record) or --baseline FILE (compare)")
  end)

  it("gates on task-clock with the counters engine and a wide limit", function()
    -- on-CPU time of work(): the extra loop makes it some 7 times longer; the limit allows 3 times
    local cbase = dir .. "/counters.json"
    local run = P .. " check --engine counters --runs 3 -r work -e task-clock %s %s 2000000"
    local out, err, rc = support.sh(run:format("--save-baseline " .. cbase, good))
    assert.are.equal(0, rc, err .. out)
    assert.truthy(out:find("work task%-clock: median [%d,]+, noise [%d.]+%%"), out)
    local limits = "--limit task-clock=200% --limit time_ns=200% --baseline " .. cbase
    out, err, rc = support.sh(run:format(limits, good))
    assert.are.equal(0, rc, err .. out)
    out, err, rc = support.sh(run:format(limits, bad))
    assert.are.equal(1, rc, err .. out)
    assert.truthy(out:find("\n  work +task%-clock .* REGRESSION\n"), out)
  end)

  it("exits 2 with one line for a missing, malformed or foreign baseline, or an unknown region", function()
    local malformed, foreign = dir .. "/bad.json", dir .. "/foreign.json"
    local f = assert(io.open(malformed, "w"))
    f:write('{"engine": "callgrind", "regions": ')
    f:close()
    f = assert(io.open(foreign, "w"))
    f:write('{"perfsh_check": 1, "engine": "counters", "events": ["task-clock"], "regions": {"work": {}}}')
    f:close()
    local rows = {
      {"--baseline " .. dir .. "/none.json", "perfsh check: cannot read the baseline: "},
      {"--baseline " .. malformed, "is not valid JSON"},
      {"--baseline " .. foreign, "perfsh check: baseline made with engine counters; rerun with --engine counters"},
      {"-r nosuch --baseline " .. base, "perfsh check: region 'nosuch' is not in the baseline"},
      {"-r nosuch --save-baseline " .. dir .. "/x.json", "perfsh check: region 'nosuch': no function 'nosuch' in "},
    }
    for _, row in ipairs(rows) do
      local out, err, rc = support.sh(("%s check --engine callgrind %s %s 200"):format(P, row[1], good))
      assert.are.equal(2, rc, row[1] .. ": " .. err .. out)
      assert.truthy(err:find(row[2], 1, true), err)
      assert.are.equal(1, select(2, err:gsub("\n", "")), err)
    end
  end)
end)
