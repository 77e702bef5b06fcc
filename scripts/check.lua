-- check: a regression gate for CI, against a saved baseline
-- usage: perfsh check -r REGION [-r REGION...] [options] --save-baseline FILE [--] COMMAND [ARGS...]
--        perfsh check [-r REGION...] [options] --baseline FILE [--junit FILE] [--] COMMAND [ARGS...]
local fail = require "perfsh.fail"
local cli = require "perfsh.cli"
local gate = require "perfsh.gate"

local def = {
  description = [[
Measures function regions of COMMAND and writes a baseline (JSON: the program and its build id, the
engine, the events, the catcher, per region and event each run's figure), or measures again and
compares with a baseline: a table of the differences, and exit 0 (pass), 1 (a regression: an event
grew past its limit) or 2 (an error, or runs too noisy to detect the limit: the reason on stderr and,
with --junit, in an error test case).

A baseline belongs to a program: the check takes a program with the baseline's file name (a rebuild,
wherever it is built: the regression case) or its build id (the same build under another name), and
refuses any other. The baseline's engine, events and catcher are the defaults; others given are an
error.

The counters engine measures per hit: each run's figure is the 10th percentile of the hits' times
(the median of counts), less the catcher's own cost of an empty hit (the floor) caught at the
function's entry and return in two more runs of the program; perfsh and the program run on one
CPU (the baseline's). A change counts only beyond 4 standard errors of it (from the spread of the
runs, both sides', and for times 1.5% of the baseline's figure a side for what moves between the
baseline's session and this one): that is the detectable change, printed as detectable: ±X%, and no
limit is below it. A count that comes of chance (page faults, context switches) is also taken as a
Poisson count per hit, so a change of one fault in one hit is no regression. While the detectable
change of a time, an exact count or an event given a --limit is above its limit (+50% by default),
the check adds runs (up to 3 times --runs); a check that still cannot detect it says so and exits 2.]],
  example = {"perfsh check -r sum --save-baseline sum.json examples/sum",
    "perfsh check --baseline sum.json examples/sum"},
  options = {
    {"-r --region", "R", "a function to measure (with --baseline: default, the baseline's); may be repeated",
      count = "*", target = "regions", hidden = "-f --function"},
    {"-e --events", "LIST", "events to measure (default: the baseline's; else Ir with callgrind, perfsh stat's "
      .. "otherwise); @ipc, @cache, @branch or @tlb put in a preset set", count = "*"},
    {"--engine", "E", "callgrind (valgrind: exact, repeatable counts) or counters (perf events); default: the "
      .. "baseline's; else counters where the machine has a hardware PMU, else callgrind"},
    {"--runs", "N", "runs (default: the baseline's, else 5 with counters, at least 3; 1 with callgrind)",
      number = "count"},
    {"--save-baseline", "F", "write the baseline to F", target = "save"},
    {"--baseline", "F", "compare with the baseline in F"},
    {"--limit", "EV=X%", "fail when EV grows by more than X% (relative), or with EV=N by more than N "
      .. "(absolute); may be repeated; an error (exit 2) when the runs cannot detect it. Defaults: +1% for "
      .. "instruction counts and callgrind's events, +5% for the rest; never below the detectable change (with "
      .. "the defaults, a check that cannot detect +50% exits 2)", count = "*", target = "limits"},
    {"--junit", "FILE", "also write the results as JUnit XML for CI systems (an error test case on exit 2)"},
    cli.backend_option,
  },
}

local function main(opts, cmd)
  local what = "perfsh check " .. table.concat(cmd, " ")
  local ok, res = pcall(gate.check, {command = cmd, regions = opts.regions, events = opts.events,
    engine = opts.engine, runs = opts.runs, limits = opts.limits, backend = opts.backend, save_baseline = opts.save,
    baseline = opts.baseline})
  if not ok then
    -- CI reads the reason from the JUnit file too
    if opts.junit then gate.write_junit(opts.junit, what, {}, res) end
    if fail.is(res) then fail.raise(res) end
    error(res, 0)
  end
  gate.print(io.stdout, res)
  if opts.junit then gate.write_junit(opts.junit, what, res.rows) end
  if res.fails > 0 then return 1 end
  if res.undecided then
    io.stderr:write(res.undecided, "\n")
    return 2
  end
  return 0
end

cli.run(def, main)
