-- count: count a whole command like perf stat
-- usage: perfsh count [-e EVENT,...] [--csv] [--] COMMAND [ARGS...]
local fail = require "perfsh.fail"
local cli = require "perfsh.cli"
local csv = require "perfsh.csv"
local perfsh = cli.perfsh
local report = require "perfsh.report"
local metrics = require "perfsh.metrics"

local def = {
  defaults = "command",
  description = [[
Counts COMMAND and every thread and child it starts, from its exec to its exit, in one event group
(user space only unless an event says :k; tracepoints such as syscalls:sys_enter_write count
wherever they fire). Where the kernel refuses that, perfsh retries as perf does and says so in a
note: a PMU that cannot count user space alone (msr) counts kernel and user. Exits with COMMAND's
status (128 + the signal if a signal killed it; stderr then names the signal). SIGTERM, SIGHUP and
SIGINT sent to perfsh are passed on to COMMAND (killed if it ignores the signal, runs 2 s past it,
or a second one comes), what was counted is printed, and perfsh exits with 128 + the signal.]],
  example = "perfsh count -e task-clock,page-faults examples/sum",
  options = {
    {"-e --events", "LIST", "events to count (default: {pmu} where the machine has a hardware PMU, {none} "
      .. "elsewhere); @ipc, @cache, @branch or @tlb put in a preset set; may be repeated", count = "*"},
    {"--csv", nil, "print event,value,scaling rows instead of the table"},
  },
}

local function main(opts, cmd)
  -- SIGINT, SIGTERM, SIGHUP are passed on to the command (the terminal's keys reach it
  -- directly; cli.run), which is killed if it ignores them or outlives them by 2 s; perfsh
  -- reports how it ended and exits 128 + the signal
  if #cmd == 0 then fail.raise("perfsh count: no command given (perfsh count --help)") end
  local events = opts.events and cli.events("count", opts.events) or perfsh.default_events("command")
  cli.check_events("count", events)
  local spec = {events = events}
  for i, a in ipairs(cmd) do spec[i] = a end
  local ok, r = pcall(perfsh.run, spec)
  if not ok then fail.raise("perfsh count: " .. cli.reason(r)) end
  for _, note in ipairs(r.notes) do io.stderr:write("perfsh count: note: ", note, "\n") end
  if r.killed then
    io.stderr:write(("perfsh count: %s: the command did not end on it (ignored, blocked or outlived); perfsh "
      .. "killed it\n"):format(r.passed or "signal"))
  end
  local scaling = r.ratio < 1 and ("%.1f%%"):format(100 * r.ratio) or "100%"
  if opts.csv then
    csv.write(io.stdout, {"event", "value", "scaling"})
    for _, name in ipairs(r.events) do
      csv.write(io.stdout, {name, ("%d"):format(r[name]), ("%.4f"):format(r.ratio)})
    end
    if not r.exited then
      io.stderr:write(("perfsh count: %s killed by %s\n"):format(table.concat(cmd, " "), r.signal))
    end
  else
    io.stderr:write(("\n Performance counter stats for '%s':\n\n"):format(table.concat(cmd, " ")))
    for _, name in ipairs(r.events) do
      io.stderr:write(("%20s  %s\n"):format(report.human(r[name]), name))
    end
    local ipc = metrics.value(r, "ipc")
    if ipc then io.stderr:write(("%20.2f  instructions per cycle\n"):format(ipc)) end
    io.stderr:write(("\n%20.6f  seconds wall time (exec to exit)\n"):format(r.wall_ns / 1e9))
    io.stderr:write(("%20s  of the time the group was on the PMU\n"):format(scaling))
    if not r.exited then io.stderr:write(("%20s  killed the command\n"):format(r.signal)) end
  end
  return cli.status(r.exited, r.code, r.signo)
end

cli.run(def, main)
