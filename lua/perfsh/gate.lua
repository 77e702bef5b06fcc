-- perfsh.gate: the regression gate of perfsh check and perfsh.check{...}: measure regions over
-- repeated runs (counters or callgrind), write a baseline, compare with one under limits.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local cli = require "perfsh.cli"
local callgrind = require "perfsh.callgrind"
local report = require "perfsh.report"
local json = require "dkjson"

local M = {}

-- Events whose counts do not depend on timing: +-1% by default.
local exact = {instructions = true}
for _, e in ipairs(callgrind.events) do exact[e] = true end

function M.median(xs)
  local s = {}
  for i, x in ipairs(xs) do s[i] = x end
  table.sort(s)
  local n = #s
  if n % 2 == 1 then return s[(n + 1) // 2] end
  return (s[n // 2] + s[n // 2 + 1]) / 2
end

-- A signal (SIGINT, SIGTERM, SIGHUP) stopped the runs: nothing is compared (cli.main exits 128 + it).
local function check_stopped(name)
  local signame = cli.stopped()
  if signame then error(("perfsh %s: %s: stopped before the runs were done; nothing is compared"):format(name,
    signame), 0) end
end

-- One run with the counters engine: {region = {hits, totals = {event = n}}}.
local function run_counters(name, cmd, regions, events, backend, fields)
  local spec = {events = events, stdout = "/dev/null", backend = backend}
  for i, a in ipairs(cmd) do spec[i] = a end
  local ok, t = pcall(perfsh.spawn, spec)
  if not ok then error(("perfsh %s: %s"):format(name, cli.reason(t)), 0) end
  local rs = {}
  for i, r in ipairs(regions) do rs[i] = cli.arm(name, t, r, cli.region_spec(r, name)) end
  local status = t:run()
  if not status then
    t:close()
    check_stopped(name)
  end
  local res = {}
  for i, r in ipairs(regions) do
    local st = rs[i]:stats()
    local totals = {}
    for _, f in ipairs(fields) do totals[f] = st[f].sum end
    for _, e in ipairs(events) do totals[e] = st[e] and st[e].sum or 0 end
    res[r] = {hits = st.hits, totals = totals}
  end
  t:close()
  if not status or not status.exited or status.code ~= 0 then
    error(("perfsh %s: %s failed (%s); measuring needs a run that succeeds"):format(name, table.concat(cmd, " "),
      status and (status.signal or ("exit " .. tostring(status.code))) or "stopped"), 0)
  end
  return res
end

local function run_callgrind(name, cmd, regions, events)
  local res = {}
  for _, r in ipairs(regions) do
    local m = callgrind.measure(name, cmd, r, events, true)
    check_stopped(name)
    if m.status ~= 0 then
      error(("perfsh %s: %s failed under callgrind (exit %d); measuring needs a run that succeeds")
        :format(name, table.concat(cmd, " "), m.status), 0)
    end
    res[r] = {hits = m.hits, totals = m.totals}
  end
  return res
end

--- Measure the regions of @cmd @runs times with @engine (counters or callgrind):
-- {region = {hits, events = {event = {median, min, max, noise, values = per run}}}}, and the
-- names of the events, with counters followed by @fields of the region's stats (default
-- {"time_ns"}; "wall_ns" too). Raises one line "perfsh NAME: ..." (@name: the recipe, default check).
function M.measure(engine, cmd, regions, events, runs, backend, name, fields)
  name, fields = name or "check", fields or {"time_ns"}
  local all = {}
  for i = 1, runs do
    all[i] = engine == "callgrind" and run_callgrind(name, cmd, regions, events)
      or run_counters(name, cmd, regions, events, backend, fields)
  end
  local names = {}
  for _, e in ipairs(events) do names[#names + 1] = e end
  if engine == "counters" then table.move(fields, 1, #fields, #names + 1, names) end
  local out = {}
  for _, r in ipairs(regions) do
    local hits, evs = {}, {}
    for i = 1, runs do hits[i] = all[i][r].hits end
    for _, e in ipairs(names) do
      local xs = {}
      for i = 1, runs do xs[i] = all[i][r].totals[e] end
      local m = M.median(xs)
      local lo, hi = math.min(table.unpack(xs)), math.max(table.unpack(xs))
      evs[e] = {median = m, min = lo, max = hi, noise = m > 0 and (hi - lo) / m or 0, values = xs}
    end
    out[r] = {hits = M.median(hits), events = evs}
  end
  return out, names
end

function M.read_baseline(file)
  local f, why = io.open(file)
  if not f then error(("perfsh check: cannot read the baseline: %s; make one with --save-baseline"):format(why), 0) end
  local text = f:read("a")
  f:close()
  local b, _, err = json.decode(text)
  if type(b) ~= "table" then
    error(("perfsh check: baseline %s is not valid JSON (%s); make it again with --save-baseline"):format(file,
      err or "not an object"), 0)
  end
  if b.perfsh_check ~= 1 or type(b.engine) ~= "string" or type(b.events) ~= "table" or type(b.regions) ~= "table" then
    error(("perfsh check: %s is not a perfsh check baseline (no engine, events or regions); make it again with "
      .. "--save-baseline"):format(file), 0)
  end
  return b
end

-- Limits: {event = {rel = fraction, abs = n}} from --limit EV=X% / EV=N.
function M.parse_limits(list)
  local limits = {}
  for _, l in ipairs(list or {}) do
    local ev, num, pct = l:match("^([%w_.:/-]+)=%+?([%d.]+)(%%?)$")
    local n = num and tonumber(num)
    if not n then
      error(("perfsh check: --limit needs EVENT=PERCENT%% or EVENT=COUNT (e.g. Ir=1%%), not '%s'"):format(l), 0)
    end
    limits[ev] = limits[ev] or {}
    if pct == "%" then limits[ev].rel = n / 100 else limits[ev].abs = n end
  end
  return limits
end

local function xml(s)
  return (tostring(s):gsub("[&<>\"]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"}))
end

function M.write_junit(file, what, rows)
  local f, why = require("perfsh.outfile").open(file) -- renamed into place by f:commit()
  if not f then error(("perfsh check: --junit: %s"):format(why), 0) end
  local fails = 0
  for _, row in ipairs(rows) do if row.fail then fails = fails + 1 end end
  f:write('<?xml version="1.0" encoding="UTF-8"?>\n')
  f:write(('<testsuites name="perfsh check" tests="%d" failures="%d">\n'):format(#rows, fails))
  f:write(('  <testsuite name="%s" tests="%d" failures="%d" errors="0">\n'):format(xml(what), #rows, fails))
  for _, row in ipairs(rows) do
    f:write(('    <testcase classname="perfsh.check.%s" name="%s">\n'):format(xml(row.region), xml(row.event)))
    f:write(('      <system-out>%s</system-out>\n'):format(xml(row.text)))
    if row.fail then
      f:write(('      <failure type="regression" message="%s">%s</failure>\n'):format(xml(row.why), xml(row.text)))
    end
    f:write("    </testcase>\n")
  end
  f:write("  </testsuite>\n</testsuites>\n")
  local ok, werr = f:commit()
  if not ok then error(("perfsh check: --junit: %s"):format(werr), 0) end
end

local function pct(x)
  if x ~= x then return "-" end
  if x == math.huge then return "+inf%" end
  return ("%+.2f%%"):format(100 * x)
end

-- Compare @now with baseline @b; returns the rows of the table.
function M.compare(b, now, regions, names, limits, engine)
  local rows = {}
  for _, r in ipairs(regions) do
    for _, e in ipairs(names) do
      local old, cur = b.regions[r].events[e], now[r].events[e]
      if old and cur then
        local diff = cur.median - old.median
        local rel = old.median ~= 0 and diff / old.median or (diff > 0 and math.huge or 0)
        local lim = limits[e]
        local noise = math.max(old.noise or 0, cur.noise or 0)
        local limtext
        if not lim then
          if exact[e] and (engine == "callgrind" or e == "instructions") then
            lim = {rel = 0.01}
          else
            lim = {rel = math.max(0.05, 3 * noise)}
            limtext = ("%s (noise %.1f%%)"):format(pct(lim.rel), 100 * noise)
          end
        end
        local parts = {}
        if lim.rel then parts[#parts + 1] = pct(lim.rel) end
        if lim.abs then parts[#parts + 1] = "+" .. report.human(lim.abs) end
        limtext = limtext or table.concat(parts, " and ")
        local fail = (lim.rel and rel > lim.rel) or (lim.abs and diff > lim.abs) or false
        local row = {region = r, event = e, old = old.median, cur = cur.median, diff = diff, rel = rel,
          limit = limtext, fail = fail}
        row.why = fail and ("%s %s grew by %s (%s), over the limit %s"):format(r, e, report.human(diff), pct(rel),
          limtext) or nil
        row.text = ("baseline %s, now %s, change %s (%s), limit %s"):format(report.human(old.median),
          report.human(cur.median), report.human(diff), pct(rel), limtext)
        rows[#rows + 1] = row
      end
    end
  end
  return rows
end

--- The table of @rows (M.compare) on @out.
function M.print_table(out, rows)
  local w = 6
  for _, row in ipairs(rows) do w = math.max(w, #row.region) end
  local fmt = "  %-" .. w .. "s %-8s %16s %16s %14s %9s  %-22s %s\n"
  out:write(fmt:format("region", "event", "baseline", "now", "change", "change%", "limit", "result"))
  for _, row in ipairs(rows) do
    local result = row.fail and "REGRESSION" or (row.rel < -0.01 and "faster" or "ok")
    out:write(fmt:format(row.region, row.event == "time_ns" and "time_ns" or row.event, report.human(row.old),
      report.human(row.cur), report.human(row.diff), pct(row.rel), row.limit, result))
  end
end


--- The engine, events, runs and backend of recipe @name (check, compare) from @spec (engine,
-- events, runs, backend as given) for @regions; @base, a baseline, fixes the engine and events.
-- Without an engine: counters where a PMU exists, else callgrind (a note on stderr).
function M.setup(name, spec, regions, base)
  local engine = cli.engine(name, spec.engine)
  local markers = #regions > 0
  for _, r in ipairs(regions) do
    if not tostring(r):match("^marker:") then markers = false end
  end
  if not engine and markers then
    engine = "counters" -- the program measures its markers itself; callgrind sees functions only
  elseif not engine then
    engine = core.pmu_present() and "counters" or "callgrind"
    if engine == "callgrind" then
      io.stderr:write(("perfsh %s: no hardware PMU here: using --engine callgrind (exact, repeatable counts)\n")
        :format(name))
    end
  end
  if base and base.engine ~= engine then
    error(("perfsh %s: baseline made with engine %s; rerun with --engine %s"):format(name, base.engine,
      base.engine), 0)
  end
  if engine == "callgrind" then
    for _, r in ipairs(regions) do callgrind.check_region(name, r) end
  end
  local events
  if base then
    events = base.events
  elseif engine == "callgrind" then
    events = callgrind.resolve(name, spec.events and cli.split(spec.events))
  else
    events = spec.events and cli.events(name, spec.events) or perfsh.default_events()
    cli.check_events(name, events)
  end
  local runs = spec.runs and math.tointeger(tonumber(spec.runs))
  if spec.runs and (not runs or runs < 1) then
    error(("perfsh %s: --runs needs a positive count, not '%s'"):format(name, spec.runs), 0)
  end
  runs = runs or (engine == "callgrind" and 1 or 5)
  if engine == "callgrind" and spec.backend then
    error(("perfsh %s: --engine callgrind does not take --backend; drop it or use --engine counters"):format(name), 0)
  end
  local backend = engine == "counters" and cli.regions_backend(name, spec.backend, regions,
    cli.ptrace_need(name, regions)) or nil
  return engine, events, runs, backend
end

-- spec.limits: a list of "EV=X%" / "EV=N", or a table {EV = {rel = fraction, abs = n}}.
local function limits_of(l)
  if type(l) == "table" and #l == 0 and next(l) then return l end
  return M.parse_limits(l)
end

--- The gate: spec = {regions = {...} (or region = "f"), command = {argv} (or the array part),
-- runs, engine ("counters" or "callgrind"; default counters where a PMU exists, else callgrind
-- with a note on stderr), events, limits, backend, and one of save_baseline = FILE (record) or
-- baseline = FILE (compare)}. Returns {pass, fails, engine, runs, events, command, regions (the
-- measurement), baseline (the table read), rows = {region, event, baseline, now, change, rel,
-- limit, verdict = "ok"|"faster"|"regression", why}}; raises one line on bad input.
function M.check(spec)
  local cmd = spec.command or {table.unpack(spec)}
  if (spec.save_baseline == nil) == (spec.baseline == nil) then
    error("perfsh check: give one of --save-baseline FILE (record) or --baseline FILE (compare)", 0)
  end
  if #cmd == 0 then error("perfsh check: no command given", 0) end
  local limits = limits_of(spec.limits)
  local base = spec.baseline and M.read_baseline(spec.baseline)
  local regions = spec.regions or (spec.region and {spec.region})
  if not regions and base then
    regions = {}
    for r in pairs(base.regions) do regions[#regions + 1] = r end
    table.sort(regions)
  end
  if not regions then error("perfsh check: no region given; name one with -r FUNCTION", 0) end
  for _, r in ipairs(regions) do
    if base and not base.regions[r] then
      error(("perfsh check: region '%s' is not in the baseline %s; record it with --save-baseline"):format(r,
        spec.baseline), 0)
    end
  end
  local engine, events, runs, backend = M.setup("check", spec, regions, base)
  local now, names = M.measure(engine, cmd, regions, events, runs, backend)
  local res = {engine = engine, runs = runs, events = events, names = names, command = cmd, regions = now,
    region_names = regions, baseline = base, baseline_file = spec.baseline, rows = {}, fails = 0, pass = true}
  if spec.save_baseline then
    local doc = {perfsh_check = 1, engine = engine, events = events, runs = runs, command = cmd, regions = now}
    local f, why = require("perfsh.outfile").open(spec.save_baseline) -- renamed into place by f:commit()
    if not f then error(("perfsh check: --save-baseline: %s"):format(why), 0) end
    f:write(json.encode(doc, {indent = true, keyorder = {"perfsh_check", "engine", "events", "runs", "command",
      "regions", "hits", "median", "min", "max", "noise"}}), "\n")
    local ok, werr = f:commit()
    if not ok then error(("perfsh check: --save-baseline: %s"):format(werr), 0) end
    res.saved = spec.save_baseline
    return res
  end
  for _, row in ipairs(M.compare(base, now, regions, names, limits, engine)) do
    row.baseline, row.now, row.change = row.old, row.cur, row.diff
    row.verdict = row.fail and "regression" or (row.rel < -0.01 and "faster" or "ok")
    if row.fail then res.fails = res.fails + 1 end
    res.rows[#res.rows + 1] = row
  end
  res.pass = res.fails == 0
  return res
end

--- What perfsh check prints of @res (M.check) on @out.
function M.print(out, res)
  local what = table.concat(res.command, " ")
  local runs = res.runs
  if res.saved then
    out:write(("perfsh check: baseline of %s (engine %s, %d run%s) written to %s\n"):format(what, res.engine, runs,
      runs == 1 and "" or "s", res.saved))
    for _, r in ipairs(res.region_names) do
      for _, e in ipairs(res.names) do
        local m = res.regions[r].events[e]
        out:write(("  %s %s: median %s, noise %.1f%% (min %s, max %s), %s hits\n"):format(r, e,
          report.human(m.median), 100 * m.noise, report.human(m.min), report.human(m.max),
          report.human(res.regions[r].hits)))
      end
    end
    return
  end
  local base = res.baseline
  out:write(("perfsh check: %s against %s (engine %s, %d run%s; baseline %d)\n\n"):format(what, res.baseline_file,
    res.engine, runs, runs == 1 and "" or "s", base.runs or 0))
  M.print_table(out, res.rows)
  for _, r in ipairs(res.region_names) do
    if base.regions[r].hits ~= res.regions[r].hits then
      out:write(("  note: %s has %s hits, the baseline %s\n"):format(r, report.human(res.regions[r].hits),
        report.human(base.regions[r].hits or 0)))
    end
  end
  out:write(("\n%s: %d of %d checks over their limit\n"):format(res.fails > 0 and "FAIL" or "PASS", res.fails,
    #res.rows))
end

return M
