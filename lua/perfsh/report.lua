--- perfsh.report: the tables perfsh stat and perfsh report print, from any regions (a live
-- tracee's or a loaded file's).
local metrics = require "perfsh.metrics"
local csv = require "perfsh.csv"

local report = {}

function report.human(n)
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
  return report.human(n)
end

--- The records a run lost, for a header: ", N probe records lost (ring full; ...)" (the uprobe
-- catcher), ", N records lost (the program's rings were full)" (the marker catcher), ", N records
-- perfsh could not keep (...)", or "". @l: a source's losses() ({catcher, lost, dropped}).
function report.losses(l)
  local out = ""
  if (l.lost or 0) > 0 then
    out = l.catcher == "marker" and (", %d records lost (the program's rings were full)"):format(l.lost)
      or (", %d probe records lost (ring full; --ring-pages raises it)"):format(l.lost)
  end
  if (l.dropped or 0) > 0 then
    out = out .. (", %d records perfsh could not keep (out of memory, or the spill file failed)"):format(l.dropped)
  end
  return out
end

-- Rows of one table: the events, then time.
local function table_rows(events, st)
  local rows = {}
  for _, name in ipairs(events) do
    local s = st[name]
    if s then rows[#rows + 1] = {name = name, s = s} end
  end
  if st.time_ns then rows[#rows + 1] = {name = "time (us)", s = st.time_ns, unit = "us", csv = "time_ns"} end
  return rows
end

-- What counted the calls of a sampled region (region stats' entry_counter).
local counted_by = {
  breakpoint = "a hardware breakpoint (in the kernel)",
  uprobe = "a uprobe (in the kernel)",
  int3 = "int3 stops: every call stops the target",
  marker = "the program's marker library (in the program, no stop)",
  agent = "the in-process agent at the patched entry or start (no stop, no trap)",
}

function report.print_table(out, title, events, st)
  out:write(title, "\n")
  if st.sampled then
    out:write(("  sampled: %d of %d calls recorded; estimated totals scale by %.2f\n"):format(st.hits, st.entries or 0,
      st.scale or 0))
    local by = st.entry_counter and (counted_by[st.entry_counter] or st.entry_counter)
    if by then out:write("  calls counted by ", by, "\n") end
  end
  local rows, w = table_rows(events, st), 22
  for _, row in ipairs(rows) do w = math.max(w, #row.name) end
  local fmt = "  %-" .. w .. "s %10s %16s %14s %14s %14s %14s\n"
  out:write(fmt:format("event", "hits", "total", "mean", "p50", "p99", "max"))
  for _, row in ipairs(rows) do
    local s, u = row.s, row.unit
    out:write(fmt:format(row.name, report.human(s.count), fmt_num(s.sum, u),
      fmt_num(s.mean, u), fmt_num(s.p50, u), fmt_num(s.p99, u), fmt_num(s.max, u)))
  end
  if st.ipc then out:write(("  %-" .. w .. "s %10s %16.3f\n"):format("IPC", "", st.ipc)) end
  if st.sampled then
    local est = {}
    for _, name in ipairs(events) do
      if st[name] and st[name].estimated_total then
        est[#est + 1] = name .. " " .. report.human(st[name].estimated_total)
      end
    end
    est[#est + 1] = ("time %.3f ms"):format(st.time_ns.estimated_total / 1e6)
    out:write("  estimated totals over all calls: ", table.concat(est, ", "), "\n")
  end
  if st.ratio_min and st.ratio_min < 1 then
    out:write(("  multiplexed: the group was on the PMU %.1f%% of the time at worst; values are scaled\n")
      :format(100 * st.ratio_min))
  end
end

-- A CSV number; an unknown one (NaN) is an empty field.
local function csv_num(fmt, n)
  if n ~= n then return "" end
  return fmt:format(n)
end

--- The header of report.csv_rows, written to @out.
function report.csv_header(out)
  csv.write(out, {"region", "event", "hits", "total", "mean", "min", "p50", "p99", "max", "scaling"})
end

--- The rows of region @region (its name) of stat @st, one per event of @events and time, to @out.
function report.csv_rows(out, region, events, st)
  local scaling = ("%.4f"):format(st.ratio_min or 1)
  for _, row in ipairs(table_rows(events, st)) do
    local s = row.s
    csv.write(out, {region, row.csv or row.name, ("%d"):format(s.count), csv_num("%.0f", s.sum),
      csv_num("%.2f", s.mean), csv_num("%.0f", s.min), csv_num("%.0f", s.p50), csv_num("%.0f", s.p99),
      csv_num("%.0f", s.max), scaling})
  end
end


--- Print every region of @regions as perfsh stat does.
-- opts: csv, every_call, per_thread, header (a line to start with, then a line per line range saying
-- how it was read; its losses are the caller's: report.losses), events (names), detached (the calls
-- still running were so at a detach), catcher ("uprobe" or "ptrace": what the time column spans).
function report.regions(out, regions, opts)
  local events = opts.events
  if opts.csv then report.csv_header(out) end
  if not opts.csv and opts.header then
    out:write(opts.header, "\n")
    for _, r in ipairs(regions) do -- how each line range was read (core/binary/lines.h)
      local reading = r:info().reading
      if reading then out:write(("range %s: %s\n"):format(r.name, reading)) end
    end
    out:write("\n")
  end
  for _, r in ipairs(regions) do
    local rinfo = r:info()
    if opts.every_call then
      if not opts.csv then
        out:write(("%s: one row per hit\n"):format(r.name))
        local head = {"hit", "tid", "cpu", "time_us"}
        for _, e in ipairs(events) do head[#head + 1] = e end
        out:write("  " .. table.concat(head, "\t") .. "\n")
      end
      for h in r:hits() do
        local row = {h.hit, h.tid, h.cpu_start, ("%.3f"):format(h.time_ns / 1000)}
        for _, e in ipairs(events) do row[#row + 1] = h[e] end
        if opts.csv then
          out:write(r.name .. ",hit," .. table.concat(row, ",") .. "\n")
        else
          out:write("  " .. table.concat(row, "\t") .. (h.unwound and "\t(unwound)" or "") .. "\n")
        end
      end
      if not opts.csv then out:write("\n") end
    elseif opts.per_thread then
      for _, st in ipairs(r:stats_by("thread")) do
        if st.hits > 0 then -- a thread with incomplete hits only has no table
          st.ipc = metrics.of_totals(st, "ipc")
          if opts.csv then
            report.csv_rows(out, r.name .. "@" .. st.tid, events, st)
          else
            report.print_table(out, ("region %s, thread %d (%d hits)"):format(r.name, st.tid, st.hits), events, st)
            out:write("\n")
          end
        end
      end
    else
      local st = r:stats()
      if opts.csv then
        report.csv_rows(out, r.name, events, st)
      else
        local extra = ""
        if rinfo.dropped then extra = extra .. ", dropped: " .. (rinfo.why or "") end
        if rinfo.pending then extra = extra .. ", its library was never mapped" end
        if st.incomplete > 0 then extra = extra .. (", %d incomplete (unwound or exited)"):format(st.incomplete) end
        if st.sampled then
          extra = extra .. (", sampled from %d calls"):format(st.entries or 0)
        end
        local running = rinfo.running or 0
        if running > 0 then
          extra = extra .. (", %d call%s still running at %s"):format(running, running == 1 and "" or "s",
            opts.detached and "detach" or "the end")
        end
        local nested = (rinfo.entries or 0) - st.hits - st.incomplete - running
        if not st.sampled and rinfo.entries and nested > 0 then
          extra = extra .. (", %d nested entries"):format(nested)
        end
        report.print_table(out, ("region %s (%s, %d hit%s%s)"):format(r.name, rinfo.kind, st.hits,
          st.hits == 1 and "" or "s", extra), events, st)
        out:write("\n")
      end
    end
  end
  local markers = #regions > 0
  for _, r in ipairs(regions) do
    if r:info().kind ~= "marker" then markers = false end
  end
  if not opts.csv and markers then
    out:write("time: on-CPU time of the thread between the two markers (counter time_enabled), read in the process.\n")
  elseif not opts.csv and opts.catcher == "inproc" then
    out:write("time: on-CPU time of the thread between the entry and the return, or a range's start and end\n"
      .. "(counter time_enabled), read in the process by the agent its patched code calls.\n")
  elseif not opts.csv and opts.catcher == "uprobe" then
    out:write("time: on-CPU time of the thread between the entry and return probes (counter time_enabled);\n"
      .. "the kernel's handling of the two probes is in it.\n")
  elseif not opts.csv then
    out:write("time: on-CPU time of the thread between the two breakpoints (counter time_enabled); the time\n"
      .. "it sat stopped in perfsh is left out, the kernel's handling of the two traps is in it.\n")
  end
end

return report
