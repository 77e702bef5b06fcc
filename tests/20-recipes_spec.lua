-- The recipes (scripts/*.lua): their header comments, perfsh recipes, --help and option errors
-- through lua-argparse (perfsh.cli), --backend on each recipe that catches hits, and the
-- preset event sets (perfsh.presets).
local cli = require "perfsh.cli"
local core = require "perfsh.core"
local defaults = require "perfsh.defaults"
local presets = require "perfsh.presets"
local support = dofile("tests/support.lua")
local P = support.perfsh
local q = support.q

-- The recipes in scripts/, sorted.
local function recipes()
  local p = io.popen("ls scripts")
  local names = {}
  for f in p:lines() do names[#names + 1] = f:match("^(.-)%.lua$") end
  p:close()
  table.sort(names)
  return names
end

-- Run fn with io.stderr collected; returns what was written.
local function stderr_of(fn)
  local saved, got = io.stderr, {}
  rawset(io, "stderr", {write = function(self, ...)
    for _, s in ipairs{...} do got[#got + 1] = s end
    return self
  end})
  local ok, err = pcall(fn)
  rawset(io, "stderr", saved)
  if not ok then error(err, 0) end
  return table.concat(got)
end

local function one_line(s)
  local _, n = s:gsub("\n", "")
  return n == 1
end

describe("recipe headers", function()
  it("every scripts/*.lua opens with its name, a summary and its usage", function()
    assert.is_true(#recipes() >= 7)
    for _, n in ipairs(recipes()) do
      local h, why = cli.header("scripts/" .. n .. ".lua")
      assert.truthy(h, why)
      assert.are.equal(n, h.name)
      assert.truthy(#h.summary > 10, n)
      for _, form in ipairs(h.usage) do assert.are.equal("perfsh " .. n .. " ", form:sub(1, #n + 8), n) end
    end
  end)

  it("a file without one gives nil and says what it lacks", function()
    local h, why = cli.header("tests/support.lua")
    assert.is_nil(h)
    assert.are.equal("tests/support.lua does not open with '-- NAME: summary' and '-- usage: perfsh NAME ...'", why)
  end)

  it("perfsh recipes lists every script with the summary of its header", function()
    local out, err, rc = support.sh(P .. " recipes")
    assert.are.equal(0, rc, err)
    local want = {}
    for _, n in ipairs(recipes()) do
      want[#want + 1] = ("  %-12s %s\n"):format(n, cli.header("scripts/" .. n .. ".lua").summary)
    end
    want[#want + 1] = "perfsh NAME --help shows a recipe's usage, options and an example\n"
    assert.are.equal(table.concat(want), out)
  end)
end)

describe("--help", function()
  it("of each recipe exits 0 with its usage, its options and an example", function()
    for _, n in ipairs(recipes()) do
      local out, err, rc = support.sh(P .. " " .. n .. " --help")
      assert.are.equal(0, rc, n)
      assert.are.equal("", err, n)
      assert.truthy(out:find("^Usage: perfsh " .. n .. " "), n .. ": " .. out)
      assert.truthy(out:find("\n   -h, --help  ", 1, true), n)
      assert.truthy(out:find("\nExample:\n.-  perfsh " .. n .. " "), n .. ": " .. out)
      local h = cli.header("scripts/" .. n .. ".lua")
      for _, form in ipairs(h.usage) do assert.truthy(out:find(form, 1, true), n .. ": " .. form) end
      -- -h is the same
      local short = support.sh(P .. " " .. n .. " -h")
      assert.are.equal(out, short, n)
    end
  end)

  it("names --backend on each recipe that catches region hits, with the default of perfsh.defaults", function()
    for _, n in ipairs{"stat", "tail", "attribute", "ipc", "check"} do
      local out = support.sh(P .. " " .. n .. " --help"):gsub("%s+", " ")
      assert.truthy(out:find(" --backend B how hits are caught: ptrace", 1, true), n)
      assert.truthy(out:find("default: auto, or $PERFSH_BACKEND", 1, true), n)
    end
  end)
end)

describe("option errors", function()
  it("are one line naming the option and what to do, exit 2, for every recipe", function()
    for _, n in ipairs(recipes()) do
      local _, err, rc = support.sh(P .. " " .. n .. " --bogus-option x")
      assert.are.equal(2, rc, n)
      assert.are.equal(("perfsh %s: unknown option '--bogus-option' (perfsh %s --help lists them)\n"):format(n, n), err)
    end
  end)

  local rows = {
    {"count --csvv true",
      "perfsh count: unknown option '--csvv'; did you mean '--csv'? (perfsh count --help lists them)"},
    {"tail -r", "perfsh tail: -r needs a value (perfsh tail --help)"},
    {"stat -r sum --seconds", "perfsh stat: --seconds needs a value (perfsh stat --help)"},
    {"count --csv=yes true", "perfsh count: option '--csv' does not take arguments (perfsh count --help)"},
    {"report", "perfsh report: give one .psnap file (perfsh report --help)"},
    {"stat --engine gpu -r sum examples/sum", "perfsh stat: --engine must be counters or callgrind, not 'gpu'"},
    {"check --engine gpu -r sum --save-baseline x.json examples/sum",
      "perfsh check: --engine must be counters or callgrind, not 'gpu'"},
    {"check --engine callgrind --backend uprobe -r sum --save-baseline /nonexistent/x.json examples/sum",
      "perfsh check: --engine callgrind does not take --backend; drop it or use --engine counters"},
    {"stat --engine callgrind --backend uprobe -r sum examples/sum",
      "perfsh stat: --engine callgrind does not take --backend; drop it or use --engine counters"},
  }
  for _, row in ipairs(rows) do
    it(row[1], function()
      local out, err, rc = support.sh(P .. " " .. row[1])
      assert.are.equal(2, rc, err)
      assert.are.equal(row[2] .. "\n", err)
      assert.are.equal("", out)
    end)
  end
end)

describe("numeric options", function()
  -- every numeric option of every recipe, each with values it must refuse: one line naming the
  -- option, what it needs and the value, exit 2, before anything runs (stdout stays empty)
  local bad = {
    seconds = {"-1", "0", "nan", "inf", "abc", "1e999"},
    us = {"-5", "nan", "-inf", "5us"},
    positive = {"0", "-2", "nan", "x"},
    probability = {"0", "1.5", "-0.1", "nan"},
    quantile = {"0", "1", "-0.5", "nan"},
    count = {"0", "-3", "2.5", "nan", "ten"},
    count0 = {"-1", "0.5", "nan"},
    pow2 = {"3", "0", "-4", "1.5"},
    pid = {"0", "-7", "1.5", "abc"},
    field = {"-1", "4", "1.5"},
  }
  local options = {
    {"stat -r sum", "--seconds", "seconds"}, {"stat -r sum", "--sample", "probability"},
    {"stat -r sum", "--every", "count"}, {"stat -r sum", "--ring-pages", "pow2"}, {"stat -r sum", "-p", "pid"},
    {"tail -r sum", "--threshold-us", "us"}, {"tail -r sum", "--quantile", "quantile"},
    {"tail -r sum", "--factor", "positive"}, {"tail -r sum", "--warmup", "count0"},
    {"tail -r sum", "--sample", "probability"}, {"tail -r sum", "--every", "count"},
    {"tail -r sum", "-p", "pid"}, {"tail -r sum", "--seconds", "seconds"},
    {"kinds -r marker:iter", "--field", "field"}, {"kinds -r marker:iter", "--threshold-us", "us"},
    {"kinds -r marker:iter", "--quantile", "quantile"}, {"kinds -r marker:iter", "--factor", "positive"},
    {"kinds -r marker:iter", "--warmup", "count0"},
    {"check -r sum --save-baseline /nonexistent/x.json", "--runs", "count"},
    {"compare -r sum -r main", "--runs", "count"},
  }
  for _, o in ipairs(options) do
    local recipe, flag, kind = o[1], o[2], o[3]
    it(("%s %s refuses %s"):format(recipe:match("^%S+"), flag, table.concat(bad[kind], ", ")), function()
      local what = cli.numbers[kind][1]
      for _, v in ipairs(bad[kind]) do
        local out, err, rc = support.sh(("%s %s %s %s %s"):format(P, recipe, flag, q(v),
          flag == "-p" and "" or "examples/sum"))
        assert.are.equal(2, rc, flag .. " " .. v .. ": " .. err)
        assert.are.equal("", out)
        local line = ("perfsh %s: %s needs %s"):format(recipe:match("^%S+"), flag, what)
        assert.are.equal(line, err:sub(1, #line), err)
        local tail = ", not '" .. v .. "'\n"
        assert.are.equal(tail, err:sub(-#tail), err)
      end
    end)
  end

  it("tail --threshold-us -5 is refused in one line (it once logged every hit)", function()
    local out, err, rc = support.sh(P .. " tail -r iteration --threshold-us -5 examples/slow 3")
    assert.are.same({2, "", "perfsh tail: --threshold-us needs a time in microseconds, 0 or more (e.g. "
      .. "--threshold-us 500), not '-5'\n"}, {rc, out, err})
  end)

  it("takes good values as numbers", function()
    local opts = cli.parse({name = "x", usage = {"perfsh x"}, options = {{"--s", "S", "", number = "seconds"},
      {"--n", "N", "", number = "count", count = "*"}}}, {"--s", "0.25", "--n", "3", "--n", "1e2", "cmd"})
    assert.are.same({s = 0.25, n = {3, 100}}, opts)
    assert.are.equal("integer", math.type(opts.n[2]))
  end)
end)

describe("-p PID", function()
  it("with a command after it is refused in one line, nothing attached or started", function()
    for _, recipe in ipairs{"stat -r sum", "tail -r sum"} do
      local out, err, rc = support.sh(("%s %s -p %d examples/sum"):format(P, recipe, 1))
      local name = recipe:match("^%S+")
      assert.are.same({2, "", ("perfsh %s: -p 1 attaches to a running process and 'examples/sum' is a command to "
        .. "start; give one, not both\n"):format(name)}, {rc, out, err})
    end
  end)
end)

describe("cli.parse()", function()
  local def = {name = "demo", usage = {"perfsh demo [options] CMD..."}, options = {
    {"-r --region", "R", "a region", count = "*", target = "regions", hidden = "-f --function"},
    {"-e --events", "LIST", "events"},
    {"--csv", nil, "csv"},
  }}

  -- one row per command line: the options parsed, the command left
  local rows = {
    {{"-r", "a", "--csv", "prog", "-r", "x"}, {regions = {"a"}, csv = true}, {"prog", "-r", "x"}},
    {{"-ra", "--region=b", "-f", "c", "prog"}, {regions = {"a", "b", "c"}}, {"prog"}},
    {{"-e", "x", "--", "-prog", "--csv"}, {events = "x"}, {"-prog", "--csv"}},
    {{"--csv", "-e", "-x", "prog"}, {csv = true, events = "-x"}, {"prog"}},
    {{"-e", "", "--events", "--csv", "prog"}, {events = "--csv"}, {"prog"}},
    {{"-rsum", "prog"}, {regions = {"sum"}}, {"prog"}},
    {{"prog", "--csv"}, {}, {"prog", "--csv"}},
    {{}, {}, {}},
  }
  for i, row in ipairs(rows) do
    it("row " .. i .. ": " .. table.concat(row[1], " "), function()
      local opts, rest = cli.parse(def, row[1])
      assert.are.same(row[2], opts)
      assert.are.same(row[3], rest)
    end)
  end

  it("takes the older form of options too: cli.parse(name, spec, argv, usage)", function()
    local opts, rest = cli.parse("demo", {
      {"-r", "--region", arg = true, repeatable = true, key = "regions"},
      {"--csv", key = "csv"},
    }, {"-r", "a", "--region", "b", "--csv", "prog", "--csv"}, "usage: perfsh demo\n")
    assert.are.same({regions = {"a", "b"}, csv = true}, opts)
    assert.are.same({"prog", "--csv"}, rest)
    assert.has.error(function() cli.parse("demo", {{"--csv", key = "csv"}}, {"--x"}) end,
      "perfsh demo: unknown option '--x' (perfsh demo --help lists them)")
  end)

  it("takes operands among the options where a recipe has no command", function()
    local d = {name = "demo", usage = {"perfsh demo FILE [options]"}, operands = true,
      options = {{"--csv", nil, "csv"}}}
    local opts, rest = cli.parse(d, {"a.psnap", "--csv", "b"})
    assert.are.same({csv = true}, opts)
    assert.are.same({"a.psnap", "b"}, rest)
  end)
end)

describe("--backend", function()
  it("takes its default from perfsh.defaults, and auto takes ptrace where a recipe says it needs it", function()
    assert.are.equal(defaults.backend(), cli.backend("x", nil))
    local saved = defaults.backend
    defaults.backend = function() return "auto" end
    local b1, b2
    local err = stderr_of(function()
      b1 = cli.backend("x", nil)
      b2 = cli.backend("x", nil, "what the test asks for")
    end)
    defaults.backend = saved
    assert.are.equal("auto", b1)
    assert.are.equal("ptrace", b2)
    assert.are.equal("perfsh x: note: backend auto: ptrace, as what the test asks for needs it\n", err)
    assert.has.error(function() cli.backend("tail", "bpf") end,
      "perfsh tail: --backend bpf; give auto, uprobe or ptrace")
  end)

  it("refuses an unknown catcher in one line on each recipe that catches hits", function()
    local rows = {
      stat = "-r sum -e task-clock examples/sum",
      tail = "-r sum -e task-clock examples/sum",
      attribute = "-r sum --args A -e task-clock examples/sum",
      check = "-r sum --engine counters -e task-clock --save-baseline /dev/null examples/sum",
    }
    for n, args in pairs(rows) do
      local out, err, rc = support.sh(("%s %s --backend bpf %s"):format(P, n, args))
      assert.are.equal(2, rc, n)
      assert.are.equal(("perfsh %s: --backend bpf; give auto, uprobe or ptrace\n"):format(n), err)
      assert.are.equal("", out, n)
    end
  end)

  it("tail: auto takes the default catcher for a line range (in-process where the agent is built), and says which "
    .. "caught the hits", function()
    local r = "sum.c:40-sum.c:43"
    local _, err, rc = support.sh(P .. " tail --backend ptrace -r " .. r .. " -e task-clock examples/sum >/dev/null")
    assert.are.equal(0, rc, err)
    assert.truthy(err:find("perfsh tail: " .. r .. ": 1 hits, 0 logged as slow; caught by ptrace\n", 1, true), err)
    if not support.need_uprobes(pending) then return end
    _, err, rc = support.sh(P .. " tail --backend auto -r " .. r .. " -e task-clock examples/sum >/dev/null")
    assert.are.equal(0, rc, err)
    assert.are.equal("perfsh tail: " .. r .. ": 1 hits, 0 logged as slow; caught by " .. support.auto_catcher() .. "\n",
      err)
  end)

  it("tail and attribute with the uprobe catcher: the same hits", function()
    if not support.need_uprobes(pending) then return end
    local _, err, rc = support.sh(P .. " tail --backend uprobe -r iteration --threshold-us 5000 examples/slow 1500")
    assert.are.equal(0, rc, err)
    assert.truthy(err:find("perfsh tail: iteration: 1500 hits, 15 logged as slow", 1, true), err)
    local out
    out, err, rc = support.sh(P .. " attribute --backend uprobe --csv -r touch_pages --args A,B,C -e page-faults "
      .. "examples/attribute 60 pages")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("\nA,[%d.]+\nB,[%d.]+\nC,[%d.]+\nconst,"), out)
  end)
end)

describe("presets", function()
  -- an opener where only the events of @set open
  local function only(set)
    return function(e)
      if set[e] then return true end
      return nil, ("perf_event_open(%s): no such counter here (a test)"):format(e)
    end
  end

  it("are Lua tables of rows, each row an event and its fallbacks", function()
    assert.are.same({"branch", "cache", "ipc", "tlb"}, presets.names())
    for _, n in ipairs(presets.names()) do
      for _, row in ipairs(presets.sets[n]) do
        for _, e in ipairs(row) do assert.truthy(core.resolve(e), n .. ": " .. e) end
      end
    end
  end)

  -- one row per machine: the events that open, what @ipc keeps and drops
  local rows = {
    {{instructions = true, cycles = true, ["ref-cycles"] = true, ["msr/tsc/"] = true},
      {"instructions", "cycles", "ref-cycles"}, {}},
    {{instructions = true, ["cpu-cycles"] = true, ["msr/tsc/"] = true}, {"instructions", "cpu-cycles", "msr/tsc/"}, {}},
    {{["msr/tsc/"] = true}, {"msr/tsc/"}, {"instructions", "cycles"}},
    {{}, {}, {"instructions", "cycles", "ref-cycles"}},
  }
  for i, row in ipairs(rows) do
    it("keep the first event of each row that opens, and drop the rest (" .. i .. ")", function()
      local kept, dropped, why = presets.expand("ipc", only(row[1]))
      assert.are.same(row[2], kept)
      assert.are.same(row[3], dropped)
      if #dropped > 0 then assert.truthy(why:find("no such counter here", 1, true)) end
    end)
  end

  it("say in one line what they dropped, and fail in one line when nothing is left", function()
    local list
    local err = stderr_of(function()
      list = presets.events("stat", {"task-clock", "@ipc", "page-faults"}, only{["msr/tsc/"] = true})
    end)
    assert.are.same({"task-clock", "msr/tsc/", "page-faults"}, list)
    assert.are.equal("perfsh stat: note: preset @ipc: dropped instructions, cycles (no such counter here); "
      .. "counting msr/tsc/\n", err)
    assert.are.equal("", stderr_of(function() presets.events("stat", {"@branch"}, only{branches = true,
      ["branch-misses"] = true}) end))
    assert.has.error(function() presets.events("count", {"@cache"}, only{}) end,
      "perfsh count: preset @cache: none of its events open here (no such counter here: cache-references, "
      .. "cache-misses, L1-dcache-loads, L1-dcache-load-misses dropped); give events with -e (perfsh --list lists "
      .. "them)")
    assert.has.error(function() presets.events("stat", {"@gpu"}) end,
      "perfsh stat: no preset 'gpu'; give one of @branch, @cache, @ipc, @tlb")
  end)

  -- What a preset keeps and drops on this machine, by opening each event (the spec's own check).
  local function here(name)
    local kept, dropped = presets.expand(name)
    return kept, dropped
  end

  for _, recipe in ipairs{"count", "stat", "tail"} do
    it("-e @NAME on perfsh " .. recipe .. ": the events that open here, a note naming the dropped ones", function()
      for _, name in ipairs(presets.names()) do
        local kept, dropped = here(name)
        local cmd = ({count = "count --csv -e @%s examples/sum",
          stat = "stat --csv -r sum -e @%s examples/sum",
          tail = "tail -r sum --threshold-us 1000000 -e @%s examples/sum"})[recipe]:format(name)
        local out, err, rc = support.sh(P .. " " .. cmd)
        if #kept == 0 then
          assert.are.equal(2, rc, cmd)
          assert.truthy(one_line(err), err)
          assert.truthy(err:find(("^perfsh %s: preset @%s: none of its events open here %%(.*%s dropped%%); "
            .. "give events with %%-e"):format(recipe, name, dropped[#dropped]:gsub("%p", "%%%0"))), err)
          assert.are.equal("", out)
        else
          assert.are.equal(0, rc, cmd .. ": " .. err)
          if #dropped > 0 then
            local note = ("perfsh %s: note: preset @%s: dropped %s ("):format(recipe, name, table.concat(dropped, ", "))
            assert.truthy(err:find(note, 1, true), err)
            if not core.pmu_present() then
              assert.truthy(err:find("(no hardware PMU on this machine); counting " .. table.concat(kept, ","), 1,
                true), err)
            end
          else
            assert.is_nil(err:find("preset", 1, true), err)
          end
          if recipe ~= "tail" then
            for _, e in ipairs(kept) do assert.truthy(out:find(e, 1, true), cmd .. ": " .. out) end
          end
        end
      end
    end)
  end

  it("perfsh --list presets shows each set and what it counts here", function()
    local out, err, rc = support.sh(P .. " --list presets")
    assert.are.equal(0, rc, err)
    for _, name in ipairs(presets.names()) do
      local kept, alts = presets.expand(name), {}
      for i, row in ipairs(presets.sets[name]) do alts[i] = table.concat(row, " | ") end
      local want = ("\n  @%-8s %s\n            here: %s\n"):format(name, table.concat(alts, ", "),
        #kept > 0 and table.concat(kept, ",") or "none open")
      assert.truthy(out:find(want, 1, true), out)
    end
    assert.are.equal(out, (support.sh(P .. " stat --list presets")))
  end)

  it("with the callgrind engine, @cache and @branch are callgrind's simulated events", function()
    local cg = require "perfsh.callgrind"
    assert.are.same(cg.resolve("stat", {"cache"}), cg.resolve("stat", {"@cache"}))
    assert.are.same(cg.resolve("stat", {"branch"}), cg.resolve("stat", {"@branch"}))
  end)
end)

describe("perfsh report", function()
  it("takes its file before or after the options", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. q(dir)))
    local f = dir .. "/sum.psnap"
    local _, err, rc = support.sh(P .. " stat -r sum -e task-clock --save " .. q(f) .. " examples/sum")
    assert.are.equal(0, rc, err)
    local a = support.sh(P .. " report --csv " .. q(f))
    local b = support.sh(P .. " report " .. q(f) .. " --csv")
    os.execute("rm -rf " .. q(dir))
    assert.truthy(a:find("^region,event,hits"), a)
    assert.are.equal(a, b)
  end)
end)
