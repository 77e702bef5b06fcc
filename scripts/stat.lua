-- count functions or line ranges of a program, per hit: perfsh stat -r NAME [options] CMD...
local perfsh = require "perfsh"
local cli = require "perfsh.cli"
local core = require "perfsh.core"

local usage = [[
usage: perfsh stat -r REGION [-r REGION...] [options] [--] COMMAND [ARGS...]
       perfsh stat -r REGION [options] -p PID
       perfsh stat --list [hw|sw|cache|pmu|all]

Counts hardware (or software) events over each hit of a function or a source-line range
of an unmodified binary, per thread, and prints one aggregated table per region.

regions:
  -r, --region R      a function (sum, ns::Klass::method, libc.so.6:memcpy, 0x401136) or
                      a line range FILE:L1-FILE:L2 / FILE:L1-L2 (L1 inclusive, L2 exclusive);
                      may be repeated. Inlined copies of a function are reported too.
  -f, --function R    the same as -r
  --every-level       count every level of a recursion (default: the outermost call only)
events:
  -e, --events LIST   events of the first group, e.g. instructions,cycles (default:
                      instructions,cycles where there is a hardware PMU, else
                      task-clock,page-faults); may be repeated
  -g, --group LIST    one more group, scheduled on the PMU on its own (more events than
                      counters are then multiplexed and scaled); may be repeated
  --list [KIND]       list the events that open on this machine
target:
  -p, --pid PID       attach to a running process instead of starting COMMAND
  --seconds S         stop after S seconds (detaching from an attached process)
  --follow-fork       trace forked children too (default: they run untraced)
output:
  --csv               region,event,hits,total,mean,min,p50,p99,max,scaling rows
                      (time_ns is the event name of the time column)
  --per-thread        one table per region and thread
  --every-call        one row per hit (as Perforator prints)
  -o, --output FILE   write the report to FILE instead of stdout

The time column is the thread's on-CPU time from the entry breakpoint to the return one
(the counter group's time_enabled): time the thread sat stopped by perfsh is left out, the
kernel's handling of the two traps is in it. perfsh exits with COMMAND's status (128 +
signal when a signal killed it).
]]

local function human(n)
  if n ~= n then return "-" end
  if math.abs(n) >= 1e15 then return ("%.3g"):format(n) end
  local neg = n < 0
  local s = ("%d"):format(math.floor(math.abs(n) + 0.5))
  s = s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
  return (neg and "-" or "") .. s
end

local function fmt_num(n, unit)
  if unit == "us" then return ("%.3f"):format(n / 1000) end
  if math.abs(n) < 100 and n ~= math.floor(n) then return ("%.2f"):format(n) end
  return human(n)
end

-- Rows of one table: the events, then time.
local function table_rows(events, st)
  local rows = {}
  for _, name in ipairs(events) do
    local s = st[name]
    if s then rows[#rows + 1] = {name = name, s = s} end
  end
  rows[#rows + 1] = {name = "time (us)", s = st.time_ns, unit = "us", csv = "time_ns"}
  return rows
end

local function print_table(out, title, events, st)
  out:write(title, "\n")
  out:write(("  %-22s %10s %16s %14s %14s %14s %14s\n"):format("event", "hits", "total", "mean", "p50", "p99", "max"))
  for _, row in ipairs(table_rows(events, st)) do
    local s, u = row.s, row.unit
    out:write(("  %-22s %10s %16s %14s %14s %14s %14s\n"):format(row.name, human(s.count), fmt_num(s.sum, u),
      fmt_num(s.mean, u), fmt_num(s.p50, u), fmt_num(s.p99, u), fmt_num(s.max, u)))
  end
  if st.ipc then out:write(("  %-22s %10s %16.3f\n"):format("IPC", "", st.ipc)) end
  if st.ratio_min and st.ratio_min < 1 then
    out:write(("  multiplexed: the group was on the PMU %.1f%% of the time at worst; values are scaled\n")
      :format(100 * st.ratio_min))
  end
end

local function csv_rows(out, region, events, st)
  local scaling = ("%.4f"):format(st.ratio_min or 1)
  for _, row in ipairs(table_rows(events, st)) do
    local s = row.s
    out:write(("%s,%s,%d,%.0f,%.2f,%.0f,%.0f,%.0f,%.0f,%s\n"):format(region, row.csv or row.name, s.count, s.sum,
      s.mean, s.min, s.p50, s.p99, s.max, scaling))
  end
end

-- Statistics of a list of hit tables, the same shape as region:stats().
local function stats_of(hits, events)
  local st = {hits = #hits, ratio_min = 1}
  for _, name in ipairs(events) do
    local v = {}
    for i, h in ipairs(hits) do v[i] = h[name] end
    st[name] = core.stats(v)
  end
  for _, k in ipairs{"time_ns", "wall_ns"} do
    local v = {}
    for i, h in ipairs(hits) do v[i] = h[k] end
    st[k] = core.stats(v)
  end
  for _, h in ipairs(hits) do if h.ratio < st.ratio_min then st.ratio_min = h.ratio end end
  if st.instructions and st.cycles and st.cycles.sum > 0 then st.ipc = st.instructions.sum / st.cycles.sum end
  return st
end

local function region_spec(r)
  -- FILE:L1-FILE:L2 or FILE:L1-L2 is a line range; anything else names a function
  if r:match("^[^:]+:%d+%-") then return {range = r} end
  if r:match("^0x%x+%-0x%x+$") then return {range = r} end
  return {func = r}
end

local function main(argv)
  local opts, cmd = cli.parse("stat", {
    {"-r", "--region", "-f", "--function", arg = true, repeatable = true, key = "regions"},
    {"-e", "--events", arg = true, repeatable = true, key = "events"},
    {"-g", "--group", arg = true, repeatable = true, key = "groups"},
    {"--list", key = "list"},
    {"-p", "--pid", arg = true, key = "pid"},
    {"--per-thread", key = "per_thread"},
    {"--every-call", key = "every_call"},
    {"--every-level", key = "every_level"},
    {"--csv", key = "csv"},
    {"--seconds", arg = true, key = "seconds"},
    {"--follow-fork", key = "follow_fork"},
    {"-o", "--output", arg = true, key = "output"},
    {"-h", "--help", key = "help"},
  }, argv)
  if opts.help then
    io.write(usage)
    return 0
  end
  if opts.list then return perfsh.print_events(cmd[1]) end
  if not opts.regions then error("perfsh stat: no region given; name one with -r FUNCTION or -r FILE:L1-L2", 0) end
  if not opts.pid and #cmd == 0 then error("perfsh stat: no command given (or -p PID to attach)", 0) end
  local events = opts.events and cli.split(opts.events)
  local groups = {}
  for i, g in ipairs(opts.groups or {}) do groups[i] = cli.split{g} end
  if not events and #groups == 0 then
    events = core.pmu_present() and {"instructions", "cycles"} or {"task-clock", "page-faults"}
  end
  events = events or {}
  local all = {}
  for _, e in ipairs(events) do all[#all + 1] = e end
  for _, g in ipairs(groups) do for _, e in ipairs(g) do all[#all + 1] = e end end
  for _, e in ipairs(all) do
    local ok, why = core.resolve(e)
    if not ok then error("perfsh stat: " .. why, 0) end
  end
  local out = io.stdout
  if opts.output then
    out = io.open(opts.output, "w")
    if not out then error(("perfsh stat: cannot write %s"):format(opts.output), 0) end
  end

  local ok, t = pcall(function()
    if opts.pid then
      local pid = math.tointeger(tonumber(opts.pid))
      if not pid then error(("perfsh stat: -p needs a process id, not '%s'"):format(opts.pid), 0) end
      return perfsh.attach(pid, {events = events, groups = groups, follow_fork = opts.follow_fork})
    end
    local spec = {events = events, groups = groups, follow_fork = opts.follow_fork}
    for i, a in ipairs(cmd) do spec[i] = a end
    return perfsh.spawn(spec)
  end)
  if not ok then error("perfsh stat: " .. tostring(t):gsub("^.-:%d+: ", ""), 0) end

  -- Arm every region before the program runs; a bad name ends here, with nothing lost.
  for _, r in ipairs(opts.regions) do
    local spec = region_spec(r)
    spec.every_level = opts.every_level
    local rok, err = pcall(t.region, t, spec)
    if not rok then
      t:close()
      error(("perfsh stat: region '%s': %s"):format(r, tostring(err):gsub("^.-:%d+: ", "")), 0)
    end
  end

  local status
  local rok, err = pcall(function()
    if opts.seconds then
      local st, why = t:run{seconds = tonumber(opts.seconds)}
      if not st and why == "paused" and opts.pid then t:detach() end
      status = st
    else
      status = t:run()
    end
  end)
  local info = t:info()
  if not rok then
    io.stderr:write("perfsh stat: ", tostring(err):gsub("^.-:%d+: ", ""), " (the hits recorded so far follow)\n")
  end

  -- the report
  if opts.csv then out:write("region,event,hits,total,mean,min,p50,p99,max,scaling\n") end
  if not opts.csv then
    local what = table.concat(t.argv, " ")
    local how = ""
    if status then
      how = status.signal and (", killed by " .. status.signal) or (", exit " .. status.code)
    end
    out:write(("perfsh stat: %s%s; events %s (user space); %d stops\n\n")
      :format(opts.pid and ("pid " .. what) or what, how, table.concat(info.events, ","), info.stops))
  end
  for _, r in ipairs(t.regions) do
    local rinfo = r:info()
    if opts.every_call then
      if not opts.csv then
        out:write(("%s: one row per hit\n"):format(r.name))
        local head = {"hit", "tid", "cpu", "time_us"}
        for _, e in ipairs(info.events) do head[#head + 1] = e end
        out:write("  " .. table.concat(head, "\t") .. "\n")
      end
      for h in r:hits() do
        local row = {h.hit, h.tid, h.cpu_start, ("%.3f"):format(h.time_ns / 1000)}
        for _, e in ipairs(info.events) do row[#row + 1] = h[e] end
        if opts.csv then
          out:write(r.name .. ",hit," .. table.concat(row, ",") .. "\n")
        else
          out:write("  " .. table.concat(row, "\t") .. (h.unwound and "\t(unwound)" or "") .. "\n")
        end
      end
      if not opts.csv then out:write("\n") end
    elseif opts.per_thread then
      local by_tid, order = {}, {}
      for h in r:hits() do
        if not (h.unwound or h.exited) then
          if not by_tid[h.tid] then
            by_tid[h.tid] = {}
            order[#order + 1] = h.tid
          end
          table.insert(by_tid[h.tid], h)
        end
      end
      table.sort(order)
      for _, tid in ipairs(order) do
        local st = stats_of(by_tid[tid], info.events)
        if opts.csv then
          csv_rows(out, r.name .. "@" .. tid, info.events, st)
        else
          print_table(out, ("region %s, thread %d (%d hits)"):format(r.name, tid, st.hits), info.events, st)
          out:write("\n")
        end
      end
    else
      local st = r:stats()
      if opts.csv then
        csv_rows(out, r.name, info.events, st)
      else
        local extra = ""
        if rinfo.dropped then extra = extra .. ", dropped: " .. (rinfo.why or "") end
        if rinfo.pending then extra = extra .. ", never armed (its library was not mapped)" end
        if st.incomplete > 0 then extra = extra .. (", %d incomplete (unwound or exited)"):format(st.incomplete) end
        if rinfo.entries > st.hits + st.incomplete then
          extra = extra .. (", %d nested entries"):format(rinfo.entries - st.hits - st.incomplete)
        end
        print_table(out, ("region %s (%s, %d hit%s%s)"):format(r.name, rinfo.kind, st.hits, st.hits == 1 and "" or "s", extra), info.events, st)
        out:write("\n")
      end
    end
  end
  if not opts.csv then
    out:write("time: on-CPU time of the thread between the two breakpoints (counter time_enabled); the time\n"
      .. "it sat stopped in perfsh is left out, the kernel's handling of the two traps is in it.\n")
    if info.dropped > 0 then out:write(("%d records were lost\n"):format(info.dropped)) end
  end
  if out ~= io.stdout then out:close() end
  t:close()
  if not rok then return 1 end
  if not status then return 0 end
  return cli.status(status.exited, status.code, status.signo)
end

cli.main(main, arg)
