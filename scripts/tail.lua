-- tail: log the slow hits of a region while a program runs
-- usage: perfsh tail -r REGION [--threshold-us X | --quantile Q [--factor F]] [options] [--] CMD...
--        perfsh tail -r REGION [options] -p PID
local fail = require "perfsh.fail"
local cli = require "perfsh.cli"
local perfsh = cli.perfsh

local def = {
  defaults = "tail",
  description = [[
Runs CMD (or attaches to PID) and logs each slow hit of REGION as it happens, one line:
  hit=N time=T (Rx median) tid=... cpu=... EVENT=V (Rx median) ...
N is the hit's 0-based index among the region's hits; every counter is shown with its ratio to the
median of the hits before it, so the line says what made the hit slow.]],
  example = "perfsh tail -r iteration --threshold-us 5000 examples/slow 1500",
  options = {
    {"-r --region", "R", "a function or a line range, as for perfsh stat", hidden = "-f --function"},
    {"--threshold-us", "X", "slow: on-CPU time above X microseconds", target = "threshold", number = "us"},
    {"--quantile", "Q", "slow: above F times the running Q-quantile of the earlier hits (after --warmup hits; "
      .. "default Q 0.99, F 2, warm-up 50)", number = "quantile"},
    {"--factor", "F", "the F of --quantile", number = "positive"},
    {"--warmup", "N", "the hits before --quantile judges", number = "count0"},
    {"-e --events", "LIST", "counters to log (default: {pmu} with a hardware PMU, else {none}); @ipc, @cache, "
      .. "@branch or @tlb put in a preset set; may be repeated", count = "*"},
    {"--sample", "P", "look at a random fraction P of the hits only", number = "probability"},
    {"--every", "N", "look at every Nth hit only", number = "count"},
    {"--log", "FILE", "write the lines to FILE instead of stdout"},
    {"-p --pid", "PID", "attach to a running process", number = "pid"},
    {"--seconds", "S", "stop after S seconds", number = "seconds"},
    cli.backend_option,
  },
  epilog = "perfsh exits with CMD's status (128 + signal when a signal killed it).",
}

local function main(opts, cmd)
  if not opts.region then fail.raise("perfsh tail: no region given; name one with -r FUNCTION") end
  if not opts.pid and #cmd == 0 then fail.raise("perfsh tail: no command given (or -p PID to attach)") end
  local slow = cli.slow_options("tail", opts)
  local events = opts.events and cli.events("tail", opts.events) or perfsh.default_events("tail")
  cli.check_events("tail", events)
  local rspec = cli.region_spec(opts.region, "tail")
  local backend = cli.regions_backend("tail", opts.backend, {opts.region}, nil, opts.pid ~= nil)
  local t = cli.start("tail", cmd, opts.pid, {events = events, backend = backend}, {opts.region})
  if t.note then io.stderr:write("perfsh tail: note: ", t.note, "\n") end
  if opts.sample then rspec.sample = {p = opts.sample} end
  if opts.every then rspec.sample = {every = opts.every} end
  local r = cli.arm("tail", t, opts.region, rspec)
  local sok, logger = pcall(r.on_slow, r, slow)
  if not sok then
    t:close()
    fail.raise("perfsh tail: " .. cli.reason(logger))
  end
  local status
  local runok, why = pcall(function()
    if opts.seconds then
      local st = t:run{seconds = opts.seconds}
      if not st and opts.pid then t:detach() end
      status = st
    else
      status = t:run()
    end
  end)
  local st = r:stats()
  local caught, lost = cli.caught(t)
  io.stderr:write(("perfsh tail: %s: %d hits%s, %d logged as slow; caught by %s%s\n"):format(r.name, st.hits,
    st.sampled and (" sampled of " .. st.entries) or "", #logger.lines, caught, lost))
  t:close()
  return cli.finish("tail", runok, why, status)
end

cli.run(def, main)
