-- perfsh.gate: the regression gate of perfsh check and perfsh.check{...}: measure regions over
-- repeated runs (callgrind here, the counters engine in perfsh.hitgate), write a baseline
-- (perfsh.baseline: what it holds and identifies), compare with one under limits no smaller than
-- the change the runs can detect, and print the table.
local fail = require "perfsh.fail"
local perfsh = require "perfsh"
local core = require "perfsh.core"
local cli = require "perfsh.cli"
local callgrind = require "perfsh.callgrind"
local report = require "perfsh.report"
local baseline = require "perfsh.baseline"
local hitgate = require "perfsh.hitgate"

local M = {}

-- Events whose counts do not depend on timing: +-1% by default.
local exact = {instructions = true}
for _, e in ipairs(callgrind.events) do exact[e] = true end

M.median = hitgate.median

-- One run with the counters engine: {region = {hits, totals = {event = n}}}.
local function run_counters(name, cmd, regions, events, backend, fields)
  local spec = {events = events, stdout = "/dev/null", backend = backend}
  for i, a in ipairs(cmd) do spec[i] = a end
  local ok, t = pcall(perfsh.spawn, spec)
  if not ok then fail.raise(("perfsh %s: %s"):format(name, cli.reason(t))) end
  local rs = {}
  for i, r in ipairs(regions) do rs[i] = cli.arm(name, t, r, cli.region_spec(r, name)) end
  local status = t:run()
  if not status then
    t:close()
    cli.check_stopped(name)
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
    fail.raise(("perfsh %s: %s failed (%s); measuring needs a run that succeeds"):format(name, table.concat(cmd, " "),
      status and (status.signal or ("exit " .. tostring(status.code))) or "stopped"))
  end
  return res
end

local function run_callgrind(name, cmd, regions, events)
  local res = {}
  for _, r in ipairs(regions) do
    local m = callgrind.measure(name, cmd, r, events, true)
    cli.check_stopped(name)
    if m.status ~= 0 then
      fail.raise(("perfsh %s: %s failed under callgrind (exit %d); measuring needs a run that succeeds")
        :format(name, table.concat(cmd, " "), m.status))
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

-- Limits: {event = {rel = fraction, abs = n}} from --limit EV=X% / EV=N.
function M.parse_limits(list)
  local limits = {}
  for _, l in ipairs(list or {}) do
    local ev, num, pct = l:match("^([%w_.:/-]+)=%+?([%d.]+)(%%?)$")
    local n = num and tonumber(num)
    if not n then
      fail.raise(("perfsh check: --limit needs EVENT=PERCENT%% or EVENT=COUNT (e.g. Ir=1%%), not '%s'"):format(l))
    end
    limits[ev] = limits[ev] or {}
    if pct == "%" then limits[ev].rel = n / 100 else limits[ev].abs = n end
  end
  return limits
end


local function xml(s)
  return (tostring(s):gsub("[&<>\"]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"}))
end

--- JUnit XML of a check in @file (written whole, or not at all): a test case per row of @rows
-- (a failure for a regression, an error for a change the runs cannot detect), or with @err (an
-- error the gate raised before it could compare) one test case "error" carrying its reason.
function M.write_junit(file, what, rows, err)
  local fails, errors = 0, 0
  for _, row in ipairs(rows) do
    if row.fail then fails = fails + 1 elseif row.verdict == "undetectable" then errors = errors + 1 end
  end
  local out = {'<?xml version="1.0" encoding="UTF-8"?>\n'}
  local tests = err and 1 or #rows
  if err then errors = 1 end
  out[#out + 1] = ('<testsuites name="perfsh check" tests="%d" failures="%d" errors="%d">\n'):format(tests, fails,
    errors)
  out[#out + 1] = ('  <testsuite name="%s" tests="%d" failures="%d" errors="%d">\n'):format(xml(what), tests, fails,
    errors)
  if err then
    out[#out + 1] = ('    <testcase classname="perfsh.check" name="error">\n      <error type="%s" message="%s">%s'
      .. '</error>\n    </testcase>\n'):format(xml(baseline.code(err)), xml(tostring(err)), xml(tostring(err)))
  end
  for _, row in ipairs(rows) do
    out[#out + 1] = ('    <testcase classname="perfsh.check.%s" name="%s">\n'):format(xml(row.region), xml(row.event))
    out[#out + 1] = ('      <system-out>%s</system-out>\n'):format(xml(row.text))
    if row.fail then
      out[#out + 1] = ('      <failure type="regression" message="%s">%s</failure>\n'):format(xml(row.why),
        xml(row.text))
    elseif row.verdict == "undetectable" then
      out[#out + 1] = ('      <error type="undetectable" message="%s">%s</error>\n'):format(xml(row.why),
        xml(row.text))
    end
    out[#out + 1] = "    </testcase>\n"
  end
  out[#out + 1] = "  </testsuite>\n</testsuites>\n"
  local ok, why = require("perfsh.outfile").write(file, function(o) o:write(table.concat(out)) end)
  if not ok then baseline.fail("output", "--junit: %s", why) end
end

local function pct(x)
  if x ~= x then return "-" end
  if x == math.huge then return "+inf%" end
  return ("%+.2f%%"):format(100 * x)
end

-- With the default limits, a gate whose runs cannot detect +50% says so (exit 2): a run that
-- blind could let a 2x slowdown pass.
M.BLIND = 0.5

-- The limit of event @e: {rel, abs} as given, or the default (+1% for exact counts, +5% else).
local function limit_of(limits, e, engine)
  if limits[e] then return limits[e], true end
  if exact[e] and (engine == "callgrind" or e == "instructions") then return {rel = 0.01}, false end
  return {rel = 0.05}, false
end

-- The row of region @r, event @e: the baseline's @old against @cur ({median, runs}) under
-- limit @lim (@given by the user or not), the change detectable from their runs' spread (and,
-- for a count that is not exact, from its hits' own randomness: hitgate.count_error).
local function row_of(r, e, old, cur, lim, given, engine, hits)
  local cb, cn = old.median, cur.median
  local se, out = 0, 0
  if engine == "counters" then
    se, out = hitgate.change_error(e, old.runs, cur.runs, cb)
    if not exact[e] and not hitgate.is_time(e) then
      se = math.sqrt(se * se + hitgate.count_error(cb, hits[1], hits[2]) ^ 2)
    end
  end
  if se ~= se then se = math.huge end
  local diff = cn - cb
  local scale = engine == "counters" and math.max(cb, 1) or cb
  local rel = scale ~= 0 and diff / scale or (diff > 0 and math.huge or 0)
  local det = hitgate.Z * se / math.max(math.abs(scale), 1)
  -- what decides the gate: a limit given, a time (what a slowdown shows in) or an exact count; a
  -- count of chance under the default limit (page faults) fails only beyond what it can detect
  local decides = given or hitgate.is_time(e) or exact[e] or false
  local row = {region = r, event = e, old = cb, cur = cn, diff = diff, rel = rel, detectable = det, left_out = out,
    decides = decides}
  local parts, blind = {}, false
  if lim.rel then
    row.limit_rel = math.max(lim.rel, det)
    blind = blind or (given and det > lim.rel) or (not given and decides and det > M.BLIND)
    parts[#parts + 1] = pct(row.limit_rel)
  end
  if lim.abs then
    row.limit_abs = math.max(lim.abs, hitgate.Z * se)
    blind = blind or given and hitgate.Z * se > lim.abs
    parts[#parts + 1] = "+" .. report.human(row.limit_abs)
  end
  row.limit = table.concat(parts, " and ")
  row.fail = (row.limit_rel and rel > row.limit_rel) or (row.limit_abs and diff > row.limit_abs) or false
  row.verdict = row.fail and "regression" or (blind and "undetectable")
    or (rel < -math.max(0.01, det) and "faster" or "ok")
  if row.fail then
    row.why = ("%s %s grew by %s (%s), over the limit %s"):format(r, e, report.human(diff), pct(rel), row.limit)
  elseif blind then
    local limit = lim.rel and pct(lim.rel) or "+" .. report.human(lim.abs)
    row.why = ("%s %s: the smallest change these runs can detect is ±%.1f%% (of %s a hit), more than %s"):format(r,
      e, 100 * det, report.human(cb), given and ("the limit " .. limit)
      or ("+50%, the most a gate may miss without letting a 2x slowdown pass"))
  end
  row.text = ("baseline %s, now %s, change %s (%s), detectable: ±%.2f%%, limit %s"):format(report.human(cb),
    report.human(cn), report.human(diff), pct(rel), 100 * det, row.limit)
  return row
end

--- Compare @now with baseline @b for @regions and @names; returns the rows of the table.
function M.compare(b, now, regions, names, limits, engine)
  local rows = {}
  for _, r in ipairs(regions) do
    for _, e in ipairs(names) do
      local old, cur = b.regions[r].events[e], now[r].events[e]
      if old and cur then
        local lim, given = limit_of(limits, e, engine)
        rows[#rows + 1] = row_of(r, e, old, cur, lim, given, engine, {b.regions[r].hits, now[r].hits})
      end
    end
  end
  return rows
end

--- The table of @rows (M.compare) on @out.
function M.print_table(out, rows)
  local w = 6
  for _, row in ipairs(rows) do w = math.max(w, #row.region) end
  local fmt = "  %-" .. w .. "s %-12s %14s %14s %12s %9s %s  %-17s %s\n"
  out:write(fmt:format("region", "event", "baseline", "now", "change", "change%", "detectable", "limit", "result"))
  for _, row in ipairs(rows) do
    local result = row.verdict == "undetectable" and "UNDETECTABLE" or row.fail and "REGRESSION" or row.verdict
    local det = ("±%.2f%%"):format(100 * row.detectable)
    out:write(fmt:format(row.region, row.event, report.human(row.old), report.human(row.cur), report.human(row.diff),
      pct(row.rel), (" "):rep(10 - utf8.len(det)) .. det, row.limit, result))
  end
end

--- The engine, events, runs and backend of recipe @name (check, compare) from @spec (engine,
-- events, runs, backend as given) for @regions. Without an engine: counters where a PMU exists,
-- else callgrind (a note on stderr); the counters engine needs 3 runs or more (its noise is
-- their spread) with perfsh check.
function M.setup(name, spec, regions)
  local engine = cli.engine(name, spec.engine)
  local markers = #regions > 0
  for _, r in ipairs(regions) do
    if cli.region_kind(r) ~= "marker" then markers = false end
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
  if engine == "callgrind" then
    for _, r in ipairs(regions) do callgrind.check_region(name, r) end
  end
  local events
  if engine == "callgrind" then
    events = callgrind.resolve(name, spec.events and cli.split(spec.events))
  else
    events = spec.events and cli.events(name, spec.events) or perfsh.default_events()
    cli.check_events(name, events)
  end
  local runs = spec.runs and math.tointeger(tonumber(spec.runs))
  if spec.runs and (not runs or runs < 1) then
    fail.raise(("perfsh %s: --runs needs a positive count, not '%s'"):format(name, spec.runs))
  end
  runs = runs or (engine == "callgrind" and 1 or 5)
  if name == "check" and engine == "counters" and runs < 3 then
    fail.raise(("perfsh check: --runs %d: the counters engine needs 3 runs or more (its noise is their spread)")
      :format(runs))
  end
  if engine == "callgrind" and spec.backend then
    fail.raise(("perfsh %s: --engine callgrind does not take --backend; drop it or use --engine counters"):format(name))
  end
  local backend = engine == "counters" and cli.regions_backend(name, spec.backend, regions) or nil
  return engine, events, runs, backend
end

-- spec.limits: a list of "EV=X%" / "EV=N", or a table {EV = {rel = fraction, abs = n}}.
local function limits_of(l)
  if type(l) == "table" and #l == 0 and next(l) then return l end
  return M.parse_limits(l)
end

-- Two lists of events with the same names.
local function same_set(a, b)
  local seen = {}
  for _, e in ipairs(a) do seen[e] = true end
  for _, e in ipairs(b) do
    if not seen[e] then return false end
  end
  return #a == #b
end

-- @spec with the baseline @b's engine, events, runs and catcher where the user gave none; an
-- engine, event list or catcher given that is not the baseline's is an error (exit 2).
local function from_baseline(spec, b, file)
  local out = {}
  for k, v in pairs(spec) do out[k] = v end
  if spec.engine and spec.engine ~= b.engine then
    baseline.fail("identity", "%s was made with --engine %s; drop --engine %s (the baseline's engine is the default)",
      file, b.engine, spec.engine)
  end
  out.engine = b.engine
  if spec.events then
    local given = b.engine == "callgrind" and callgrind.resolve("check", cli.split(spec.events))
      or cli.events("check", spec.events)
    if not same_set(given, b.events) then
      baseline.fail("identity", "%s counts %s; drop -e %s (the baseline's events are the default)", file,
        table.concat(b.events, ","), table.concat(given, ","))
    end
  end
  out.events = {table.concat(b.events, ",")}
  if b.engine == "counters" and spec.backend and spec.backend ~= "auto" and spec.backend ~= b.catcher then
    baseline.fail("identity", "the hits of %s were caught by %s; drop --backend %s (the baseline's catcher is the "
      .. "default)", file, b.catcher, spec.backend)
  end
  out.backend = b.engine == "counters" and (spec.backend or b.catcher) or nil
  out.runs = spec.runs or (b.engine == "counters" and tostring(b.runs) or nil)
  return out
end

-- The regions of @spec, or the baseline's; each must be in the baseline.
local function regions_of(spec, base)
  local regions = spec.regions or (spec.region and {spec.region})
  if not regions and base then
    regions = {}
    for r in pairs(base.regions) do regions[#regions + 1] = r end
    table.sort(regions)
  end
  if not regions then fail.raise("perfsh check: no region given; name one with -r FUNCTION") end
  for _, r in ipairs(regions) do
    if base and not base.regions[r] then
      baseline.fail("identity", "region '%s' is not in the baseline %s; record it with --save-baseline", r,
        spec.baseline)
    end
  end
  return regions
end

-- Measure with @engine: the regions ({hits, floor, events = {name = {median, runs, ...}}}), the
-- names, and for the counters engine the catcher and the CPU.
local function measure(engine, cmd, prog, regions, events, runs, backend, cpu)
  if engine == "counters" then
    return hitgate.measure(cmd, baseline.program_file(prog.path), regions, events, runs, backend, cpu)
  end
  local m, names = M.measure(engine, cmd, regions, events, runs, backend)
  for _, r in ipairs(regions) do
    for _, e in ipairs(names) do
      local v = m[r].events[e]
      m[r].events[e] = {median = v.median, runs = v.values}
    end
  end
  return m, names
end

-- Whether a row of @rows cannot tell its limit from noise (and no row failed).
local function undetectable(rows)
  local blind = false
  for _, row in ipairs(rows) do
    if row.fail then return false end
    blind = blind or row.verdict == "undetectable"
  end
  return blind
end

-- Whether a check of as many runs as measurement @now has could not detect +50% (M.BLIND) of
-- some region's event, from @now's spread alone.
local function self_blind(now, names)
  for _, reg in pairs(now) do
    for _, n in ipairs(names) do
      local ev = reg.events[n]
      if hitgate.Z * hitgate.std_error(ev.runs, ev.runs) / math.max(ev.median, 1) > M.BLIND then return true end
    end
  end
  return false
end

-- Add the runs of measurement @more to @now (hitgate.measure).
local function merge(now, more, names)
  for r, reg in pairs(now) do
    for _, n in ipairs(names) do
      local ev, add = reg.events[n], more[r].events[n]
      for _, k in ipairs{"runs", "hit", "floor"} do table.move(add[k], 1, #add[k], #ev[k] + 1, ev[k]) end
      ev.median = M.median(ev.runs)
    end
  end
end

--- The gate: spec = {regions = {...} (or region = "f"), command = {argv} (or the array part),
-- runs, engine ("counters" or "callgrind"; default: the baseline's, else counters where a PMU
-- exists, else callgrind with a note on stderr), events, limits, backend, and one of
-- save_baseline = FILE (record) or baseline = FILE (compare)}. Returns {pass, fails, engine,
-- runs, events, command, program, catcher, cpu, regions (the measurement), baseline (the table
-- read), notes, undecided (why the runs cannot decide, or nil), rows = {region, event, baseline,
-- now, change, rel, detectable, limit, verdict = "ok"|"faster"|"regression"|"undetectable",
-- why}}; raises one line on bad input (an error whose code perfsh.baseline.code gives).
function M.check(spec)
  local cmd = spec.command or {table.unpack(spec)}
  if (spec.save_baseline == nil) == (spec.baseline == nil) then
    baseline.fail("usage", "give one of --save-baseline FILE (record) or --baseline FILE (compare)")
  end
  if #cmd == 0 then baseline.fail("usage", "no command given") end
  local limits = limits_of(spec.limits)
  local base = spec.baseline and baseline.read(spec.baseline)
  local regions = regions_of(spec, base)
  local prog = baseline.program(cmd)
  local notes = {}
  if base then
    notes[#notes + 1] = baseline.check_program(base, spec.baseline, prog)
    if table.concat(base.command, "\0") ~= table.concat(cmd, "\0") and base.program.path == prog.path then
      notes[#notes + 1] = ("the baseline ran %s"):format(table.concat(base.command, " "))
    end
    spec = from_baseline(spec, base, spec.baseline)
  end
  local engine, events, runs, backend = M.setup("check", spec, regions)
  local now, names, catcher, cpu = measure(engine, cmd, prog, regions, events, runs, backend, base and base.cpu)
  if base and base.catcher and catcher ~= base.catcher then
    baseline.fail("identity", "the hits of %s were caught by %s, these by %s; give --backend %s", spec.baseline,
      base.catcher, catcher, base.catcher)
  end
  local res = {engine = engine, runs = runs, events = events, names = names, command = cmd, program = prog,
    catcher = catcher, cpu = cpu, regions = now, region_names = regions, baseline = base,
    baseline_file = spec.baseline, notes = notes, rows = {}, fails = 0, pass = true}
  if spec.save_baseline then
    res.runs_added = 0
    while engine == "counters" and self_blind(now, names) and runs + res.runs_added < 3 * runs do
      -- a baseline so noisy that a check of as many runs could not detect +50%: more runs
      local more = measure(engine, cmd, prog, regions, events, math.min(runs, 2 * runs - res.runs_added), backend,
        cpu)
      merge(now, more, names)
      res.runs_added = res.runs_added + #more[regions[1]].events[names[1]].runs
    end
    baseline.write(spec.save_baseline, {engine = engine, events = events, runs = runs,
      catcher = catcher, cpu = cpu, command = cmd, program = prog, regions = now})
    res.saved = spec.save_baseline
    return res
  end
  local rows = M.compare(base, now, regions, names, limits, engine)
  res.runs_added = 0
  while engine == "counters" and undetectable(rows) and runs + res.runs_added < 3 * runs do
    -- more runs while the change the runs could detect is above the limit (their spread, not
    -- the change, decides)
    local more = measure(engine, cmd, prog, regions, events, math.min(runs, 3 * runs - runs - res.runs_added),
      backend, cpu)
    merge(now, more, names)
    res.runs_added = res.runs_added + #more[regions[1]].events[names[1]].runs
    rows = M.compare(base, now, regions, names, limits, engine)
  end
  local blind = {}
  for _, row in ipairs(rows) do
    row.baseline, row.now, row.change = row.old, row.cur, row.diff
    if row.fail then res.fails = res.fails + 1 end
    if row.verdict == "undetectable" then blind[#blind + 1] = row.why end
    res.rows[#res.rows + 1] = row
  end
  res.undecided = #blind > 0 and res.fails == 0 and ("perfsh check: " .. blind[1] .. "; take more --runs, measure "
    .. "a larger region, or count with --engine callgrind" .. (next(limits) and ", or raise --limit" or "")) or nil
  res.pass = res.fails == 0 and not res.undecided
  return res
end

-- The floor line of region @r: what was taken away from each hit, now and in the baseline.
local function floor_line(r, reg, was)
  if reg.floor:match("^none") then
    return ("  %s: no floor (%s): its times include the catcher's own cost\n"):format(r, reg.floor:sub(7))
  end
  local t = reg.events.time_ns
  local line = ("  %s: own cost a hit = the hit less the catcher's cost of an empty hit of it (floor, %s): "
    .. "time_ns floor %s"):format(r, reg.floor, report.human(hitgate.median(t.floor)))
  if was and was.events.time_ns then
    line = line .. ", baseline " .. report.human(hitgate.median(was.events.time_ns.floor))
  end
  return line .. "\n"
end

-- What perfsh check prints of a baseline it wrote.
local function print_saved(out, res)
  local runs = res.runs
  out:write(("perfsh check: baseline of %s (engine %s, %d run%s%s%s) written to %s\n"):format(
    table.concat(res.command, " "), res.engine, runs, runs == 1 and "" or "s", (res.runs_added or 0) > 0
    and (" (+%d while they were too noisy to detect +50%%)"):format(res.runs_added) or "",
    res.catcher and (", caught by %s%s"):format(res.catcher, res.cpu and " on CPU " .. res.cpu or "") or "", res.saved))
  for _, r in ipairs(res.region_names) do
    local reg = res.regions[r]
    if res.engine == "counters" then out:write(floor_line(r, reg)) end
    for _, e in ipairs(res.names) do
      local m = reg.events[e]
      local s = res.engine == "counters" and hitgate.spread({m.runs}) or 0
      out:write(("  %s %s: %s%s, spread ±%.1f%% over the runs, %s hit%s\n"):format(r, e, report.human(m.median),
        res.engine == "counters" and " a hit" or "", 100 * s / math.max(math.abs(m.median), 1),
        report.human(reg.hits), reg.hits == 1 and "" or "s"))
    end
  end
end

--- What perfsh check prints of @res (M.check) on @out.
function M.print(out, res)
  if res.saved then return print_saved(out, res) end
  local base = res.baseline
  local added = (res.runs_added or 0) > 0 and (" (+%d while the detectable change was above the limit)")
    :format(res.runs_added) or ""
  out:write(("perfsh check: %s against %s (engine %s, %d run%s%s%s; baseline %d)\n"):format(
    table.concat(res.command, " "), res.baseline_file, res.engine, res.runs, res.runs == 1 and "" or "s", added,
    res.catcher and (", caught by %s%s"):format(res.catcher, res.cpu and " on CPU " .. res.cpu or "") or "",
    base.runs))
  for _, n in ipairs(res.notes) do out:write("  note: ", n, "\n") end
  if res.engine == "counters" then
    for _, r in ipairs(res.region_names) do out:write(floor_line(r, res.regions[r], base.regions[r])) end
  end
  out:write("\n")
  M.print_table(out, res.rows)
  local worst
  local left = {}
  for _, row in ipairs(res.rows) do
    if res.engine == "counters" and (not worst or (row.decides and not worst.decides)
      or (row.decides == worst.decides and row.detectable > worst.detectable)) then
      worst = row
    end
    if row.left_out > (left[row.region] or 0) then left[row.region] = row.left_out end
  end
  for _, r in ipairs(res.region_names) do
    if left[r] then
      out:write(("  note: %s: %d run%s far from the others left out of the noise\n"):format(r, left[r],
        left[r] == 1 and "" or "s"))
    end
  end
  for _, r in ipairs(res.region_names) do
    if base.regions[r].hits ~= res.regions[r].hits then
      out:write(("  note: %s has %s hits, the baseline %s\n"):format(r, report.human(res.regions[r].hits),
        report.human(base.regions[r].hits or 0)))
    end
  end
  if worst then
    out:write(("\ndetectable: ±%.1f%% (%s %s: %d standard errors of the change, from the spread of %d + %d runs; "
      .. "no limit is below it)\n"):format(100 * worst.detectable, worst.region, worst.event, hitgate.Z,
      #base.regions[worst.region].events[worst.event].runs, #res.regions[worst.region].events[worst.event].runs))
  end
  local verdict = res.fails > 0 and "FAIL" or (res.undecided and "UNDECIDED" or "PASS")
  out:write(("\n%s: %d of %d checks over their limit\n"):format(verdict, res.fails, #res.rows))
end

return M
