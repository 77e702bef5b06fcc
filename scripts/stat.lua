-- stat: count functions or line ranges of a program, per hit
-- usage: perfsh stat -r REGION [-r REGION...] [options] [--] COMMAND [ARGS...]
--        perfsh stat -r REGION [options] -p PID
--        perfsh stat --list [hw|sw|cache|pmu|tracepoint|presets|all|WORD]
--        perfsh stat --list sdt BINARY
local fail = require "perfsh.fail"
local cli = require "perfsh.cli"
local perfsh, core = cli.perfsh, cli.core
local report = require "perfsh.report"
local export = require "perfsh.export"
local topo = require "perfsh.topology"

local def = {
  defaults = "region",
  description = [[
Counts hardware (or software) events over each hit of a function or a source-line range of an
unmodified binary, per thread, and prints one aggregated table per region.]],
  example = "perfsh stat -r sum -e task-clock examples/sum",
  options = {
    "Regions",
    {"-r --region", "R", "a function (sum, ns::Klass::method, libm.so.6:frexp, 0x401136) or a line range "
      .. "FILE:L1-FILE:L2 / FILE:L1-L2 (L1 inclusive, L2 exclusive: a hit from entering L1..L2-1 to reaching L2; "
      .. "loops inside cost no stop; where the line table allows more than one reading, from L1's first address "
      .. "to L2's, as Perforator reads it: a header line says which); may be repeated. Inlined copies of a "
      .. "function are reported too; a library's function (LIB:FUNC) may be in one the program loads later "
      .. "(dlopen). "
      .. "sdt:PROVIDER:NAME (a point) or sdt:P:START,sdt:P:END (a pair) name SDT probes (perfsh --list sdt BINARY); "
      .. "marker:NAME a marker of perfsh/marker.h (sdt:perfsh:NAME_begin,sdt:perfsh:NAME_end), its markers left off",
      count = "*", target = "regions", hidden = "-f --function"},
    {"--every-level", nil, "count every level of a recursion (default: the outermost call only)"},
    "Events",
    {"-e --events", "LIST", "events of the first group, e.g. instructions,cycles (default: {pmu} where there is "
      .. "a hardware PMU, else {none}); @ipc, @cache, @branch or @tlb put in a preset set (what does not open here "
      .. "is dropped, with a note); may be repeated", count = "*"},
    {"-g --group", "LIST", "one more group, scheduled on the PMU on its own (more events than counters are then "
      .. "multiplexed and scaled); may be repeated", count = "*", target = "groups"},
    {"--list", nil, "list the events that open on this machine (or the names with WORD, or a kind; presets: "
      .. "the preset sets and what they count here); "
      .. "--list sdt BINARY lists the SDT probes (<sys/sdt.h>) of BINARY"},
    "Target",
    {"-p --pid", "PID", "attach to a running process instead of starting COMMAND", number = "pid"},
    {"--seconds", "S", "stop after S seconds (detaching from an attached process), even while the program is "
      .. "blocked in a system call", number = "seconds"},
    {"--follow-fork", nil, "trace forked children too (default: they run untraced)"},
    cli.backend_option,
    {"--ring-pages", "N", "the uprobe catcher's ring per thread, in pages (a power of two; default 256): records "
      .. "a full ring drops are counted and reported", number = "pow2"},
    "Sampling (function regions; every call is still counted, estimated totals are printed)",
    {"--sample", "P", "record each call with probability P", number = "probability"},
    {"--every", "N", "record every Nth call", number = "count"},
    "Output",
    {"--csv", nil, "region,event,hits,total,mean,min,p50,p99,max,scaling rows (time_ns is the event name of the "
      .. "time column)"},
    {"--per-thread", nil, "one table per region and thread"},
    {"--every-call", nil, "one row per hit (as Perforator prints)"},
    {"-o --output", "FILE", "write the report to FILE instead of stdout"},
    {"--save", "FILE", "write every hit to FILE as the run goes (.psnap; memory stays bounded; perfsh report FILE "
      .. "reads it)"},
    {"--trace", "FILE", "also write a Chrome/Perfetto trace (JSON; open it in ui.perfetto.dev)"},
    {"--hist", nil, "also draw a histogram of each region's hit times"},
    {"--per-cpu", nil, "also break each region down by CPU, core and L3 domain"},
    "Engine",
    {"--engine", "E", "counters (default: perf events, per hit) or callgrind: run COMMAND under valgrind's "
      .. "callgrind, collecting in each function region (one run per region): exact, repeatable Ir and, asked "
      .. "with -e, callgrind's cache and branch events (Dr,Dw,I1mr,D1mr,D1mw,ILmr,DLmr,DLmw,Bc,Bcm,Bi,Bim, or "
      .. "cache, branch, all); function regions only"},
  },
  epilog = [[
The time column is the thread's on-CPU time from the entry breakpoint to the return one (the counter
group's time_enabled): time the thread sat stopped by perfsh is left out, the kernel's handling of
the two traps is in it. perfsh exits with COMMAND's status (128 + signal when a signal killed it;
then one stderr line names the signal and the regions it was in). SIGINT, SIGTERM or SIGHUP to
perfsh stop the run: what was measured is printed and saved, an attached process is detached
unharmed, a started COMMAND is killed; perfsh then exits with 128 + that signal.]],
}

-- An -o file, opened now (before anything runs; renamed into place at the end: cli.output), or
-- stdout.
local function output(file)
  return cli.output("stat", "-o", file, true) or io.stdout
end

local function main(opts, cmd)
  -- SIGINT, SIGTERM, SIGHUP end the run, not perfsh (cli.run): the report and the files are written
  local engine = cli.engine("stat", opts.engine, "counters")
  if opts.list and engine == "counters" then
    if cmd[1] == "sdt" then return perfsh.print_sdt(cmd[2]) end
    return perfsh.print_events(cmd[1])
  end
  if not opts.regions then fail.raise("perfsh stat: no region given; name one with -r FUNCTION or -r FILE:L1-L2") end
  if not opts.pid and #cmd == 0 then fail.raise("perfsh stat: no command given (or -p PID to attach)") end
  if engine == "callgrind" then return require("perfsh.callgrind").stat(opts, cmd, output) end
  local events = opts.events and cli.events("stat", opts.events)
  local groups = {}
  for i, g in ipairs(opts.groups or {}) do groups[i] = cli.events("stat", {g}) end
  if not events and #groups == 0 then
    events = perfsh.default_events()
  end
  events = events or {}
  local all = {}
  for _, e in ipairs(events) do all[#all + 1] = e end
  for _, g in ipairs(groups) do for _, e in ipairs(g) do all[#all + 1] = e end end
  cli.check_events("stat", all)
  for _, note in ipairs(perfsh.event_notes(all)) do io.stderr:write("perfsh stat: note: ", note, "\n") end
  local seconds, sample = opts.seconds, opts.sample -- numbers checked by cli.parse
  -- --save goes to perfsh.spawn's spill (or t:save), each written whole: only checked here
  if opts.save then cli.output("stat", "--save", opts.save):abort() end
  local trace = cli.output("stat", "--trace", opts.trace, true)
  local out = output(opts.output)
  -- what only the uprobe catcher does: SDT regions (so they take it unless --backend ptrace says
  -- otherwise). Sampling and several groups work under both (auto takes ptrace for groups of a
  -- hardware PMU, which can take turns on it: perfsh.spawn says so); the marker catcher counts
  -- one group.
  local ngroups = #groups + (#events > 0 and 1 or 0)
  local backend = cli.regions_backend("stat", opts.backend, opts.regions, nil, opts.pid ~= nil, ngroups > 1)

  local ring_pages = opts.ring_pages
  local function start(how, fallback)
    local t = cli.start("stat", cmd, opts.pid, {events = events, groups = groups, follow_fork = opts.follow_fork,
      spill = not opts.pid and opts.save or nil, backend = how, ring_pages = not fallback and ring_pages or nil},
      opts.regions)
    if t.note then io.stderr:write("perfsh stat: note: ", t.note, "\n") end
    return t
  end
  local function region_spec(r)
    local spec = cli.region_spec(r, "stat")
    spec.every_level = opts.every_level
    if sample then
      spec.sample = {p = sample}
    elseif opts.every then
      spec.sample = {every = opts.every}
    end
    return spec
  end

  -- Arm every region before the program runs; a bad name ends here, with nothing lost. With
  -- auto, a region only the ptrace catcher can arm starts the program again under it (one the
  -- in-process catcher refuses moves it to the uprobe catcher already: perfsh.spawn).
  local t = start(backend)
  for _, r in ipairs(opts.regions) do
    local spec = region_spec(r)
    local why, code, _
    if backend == "auto" and t.catcher ~= "ptrace" then
      _, why, code = cli.try_arm(t, spec, "stat")
    else
      cli.arm("stat", t, r, spec)
    end
    if code == core.errors.needs_ptrace then
      t:close()
      io.stderr:write("perfsh stat: note: backend auto: ptrace, as region ", r, " needs it: ", why, "\n")
      backend = "ptrace"
      t = start(backend, true)
      for _, r2 in ipairs(opts.regions) do cli.arm("stat", t, r2, region_spec(r2)) end
      break
    elseif why then
      t:close()
      fail.raise(("perfsh stat: region '%s': %s"):format(r, why))
    end
  end

  local status, detached
  local rok, err = pcall(function()
    status = t:run{seconds = seconds}
  end)
  local signame, signo = core.signal()
  if not status then
    -- paused (--seconds), interrupted or failed: an attached process goes on unharmed, a
    -- spawned one is killed by t:close() below; what was measured is kept either way
    if opts.pid then
      local dok, why = pcall(t.detach, t)
      if dok then detached = true else io.stderr:write("perfsh stat: detach: ", cli.reason(why), "\n") end
    end
    local fok, why = pcall(t.finish_spill, t)
    if not fok then io.stderr:write("perfsh stat: ", cli.reason(why), "\n") end
  end
  local info = t:info()
  if not rok then
    io.stderr:write("perfsh stat: ", cli.reason(err), " (the hits recorded so far follow)\n")
  elseif signame and not status then
    io.stderr:write("perfsh stat: ", signame, ": stopped (the hits recorded so far follow)\n")
  end
  if status and status.signal then cli.report_death("stat", t, status) end

  -- files first: what was measured is kept even if the report fails
  if opts.save and opts.pid then
    local sok, why = pcall(t.save, t, opts.save)
    if not sok then io.stderr:write("perfsh stat: ", cli.reason(why), "\n") end
  end
  if trace then
    local hits, names = {}, {}
    for _, r in ipairs(t.regions) do names[r.id] = r.name end
    for h in t:hits() do hits[#hits + 1] = h end
    export.trace(trace, hits, info.events, names, info.pid)
    cli.commit("stat", trace)
  end
  -- the report
  local what = table.concat(t.argv, " ")
  local how = ""
  if status then
    how = status.signal and (", killed by " .. status.signal) or (", exit " .. status.code)
  elseif signame then
    how = ", stopped by " .. signame
  end
  local caught, lost = cli.caught(t)
  report.regions(out, t.regions, {
    csv = opts.csv, every_call = opts.every_call, per_thread = opts.per_thread, events = info.events,
    detached = detached, catcher = info.catcher,
    header = ("perfsh stat: %s%s; events %s (user space); caught by %s%s; %d stop%s%s"):format(
      opts.pid and ("pid " .. what) or what, how, table.concat(info.events, ","), caught,
      info.fast_sites > 0 and (" (%d of %d probe sites on the 5-byte-NOP fast path)"):format(info.fast_sites,
        info.sites) or "", info.stops, info.stops == 1 and "" or "s", lost),
  })
  if not opts.csv and opts.hist then
    for _, r in ipairs(t.regions) do
      export.histogram(out, r:series("time_ns"), {title = "region " .. r.name .. ", on-CPU time per hit"})
      out:write("\n")
    end
  end
  if not opts.csv and opts.per_cpu then
    for _, r in ipairs(t.regions) do topo.print_breakdown(out, r, info.events) end
  end
  if out ~= io.stdout then cli.commit("stat", out) end
  t:close()
  if not rok then return 1 end
  if not status then return signo and 128 + signo or 0 end
  return cli.status(status.exited, status.code, status.signo)
end

cli.run(def, main)
