-- check: a regression gate for CI, against a saved baseline
-- usage: perfsh check -r REGION [-r REGION...] [options] --save-baseline FILE [--] COMMAND [ARGS...]
--        perfsh check [-r REGION...] [options] --baseline FILE [--junit FILE] [--] COMMAND [ARGS...]
local cli = require "perfsh.cli"
local gate = require "perfsh.gate"

local def = {
  description = [[
Measures function regions of COMMAND and writes a baseline (JSON: the engine, the events, per region
and event the median total over the runs and its spread), or measures again and compares with a
baseline: a table of the differences, and exit 0 (pass), 1 (a regression: an event grew past its
limit) or 2 (an error: no or a malformed baseline, a region not in the program, a baseline made with
another engine, a target that failed).]],
  example = {"perfsh check -r sum --save-baseline sum.json examples/sum",
    "perfsh check --baseline sum.json examples/sum"},
  options = {
    {"-r --region", "R", "a function to measure (with --baseline: default, the baseline's); may be repeated",
      count = "*", target = "regions", hidden = "-f --function"},
    {"-e --events", "LIST", "events to measure (default: Ir with callgrind; perfsh stat's otherwise); @ipc, "
      .. "@cache, @branch or @tlb put in a preset set", count = "*"},
    {"--engine", "E", "callgrind (valgrind: exact, repeatable counts) or counters (perf events); default: "
      .. "counters where the machine has a hardware PMU, else callgrind"},
    {"--runs", "N", "runs to take the median of (default: 5; 1 with callgrind)", number = "count"},
    {"--save-baseline", "F", "write the baseline to F", target = "save"},
    {"--baseline", "F", "compare with the baseline in F"},
    {"--limit", "EV=X%", "fail when EV grows by more than X% (relative), or with EV=N by more than N "
      .. "(absolute); may be repeated. Defaults: +1% for instruction counts and callgrind's events; for times, "
      .. "cycles and other counters +max(5%, 3 x the noise measured over the runs, baseline or now)", count = "*",
      target = "limits"},
    {"--junit", "FILE", "also write the results as JUnit XML for CI systems"},
    cli.backend_option,
  },
}

local function main(opts, cmd)
  local res = gate.check{command = cmd, regions = opts.regions, events = opts.events, engine = opts.engine,
    runs = opts.runs, limits = opts.limits, backend = opts.backend, save_baseline = opts.save,
    baseline = opts.baseline}
  gate.print(io.stdout, res)
  if opts.junit then gate.write_junit(opts.junit, "perfsh check " .. table.concat(cmd, " "), res.rows) end
  return res.pass and 0 or 1
end

cli.run(def, main)
