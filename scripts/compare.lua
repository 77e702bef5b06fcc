-- compare: two or more regions of one command, or one region of two commands, side by side
-- usage: perfsh compare -r REGION -r REGION [-r REGION...] [options] [--] COMMAND [ARGS...]
--        perfsh compare -r REGION [options] -- COMMAND1 [ARGS...] -- COMMAND2 [ARGS...]
local fail = require "perfsh.fail"
local cli = require "perfsh.cli"
local csv = require "perfsh.csv"
local gate = require "perfsh.gate"
local report = require "perfsh.report"

local NAME = "compare"
-- With the counters engine, besides the events: on-CPU time and wall time of each side.
local FIELDS = {"time_ns", "wall_ns"}

local def = {
  description = "Measures two or more function regions of one command, or one region of two commands (each "
    .. "given after its own \"--\"), over N runs, and prints per event the median of each side, its ratio to the "
    .. "first side with the spread of the per-run ratios (min..max), and a mark: \"~ within noise\" when the "
    .. "spread of the ratio includes 1, else higher, lower or same.",
  example = {"perfsh compare --per-hit -r update_1 -r update_2_thread -r update_3_thread ./examples/grocery",
    "perfsh compare -r spin --engine callgrind -- ./examples/loop 1000 -- ./examples/loop 2000"},
  options = {
    {"-r --region", "R", "a function (or line range) to measure; may be repeated", count = "*", target = "regions"},
    {"-e --events", "LIST", "events (default: Ir with callgrind, perfsh stat's otherwise); @ipc, @cache, ... "
      .. "put in a preset set; with callgrind D1mr,DLmr turn on the cache simulator", count = "*"},
    {"--runs", "N", "runs per side to take the median of (default: 5; 1 with callgrind)", number = "count"},
    {"--engine", "E", "counters (perf events, default) or callgrind (valgrind: exact counts, cache and "
      .. "branch simulation)"},
    {"--backend", "B", "how hits are caught: ptrace, uprobe or auto (as perfsh stat)"},
    {"--per-hit", nil, "divide each side by its hits (per thread, where each thread enters once)"},
    {"--csv", nil, "CSV: event,side,hits,value,ratio,ratio_min,ratio_max,mark"},
  },
  -- a "--" ending the options stays in the rest: -- CMD1 -- CMD2 are split here
  keep_separator = true,
}

local function usage_error(msg)
  fail.raise(("perfsh compare: %s (perfsh compare --help)"):format(msg))
end

-- The commands of the rest of argv: [--] COMMAND, or -- COMMAND1 -- COMMAND2.
local function commands(rest)
  local cmds, explicit = {{}}, rest[1] == "--"
  for k = explicit and 2 or 1, #rest do
    local a = rest[k]
    if explicit and a == "--" and #cmds == 1 then cmds[2] = {} else table.insert(cmds[#cmds], a) end
  end
  return cmds
end

-- The sides from the options and commands: {label, cmd, region}; raises on a bad combination.
local function sides_of(opts, cmds)
  local regions = opts.regions or {}
  for _, c in ipairs(cmds) do
    if #c == 0 then usage_error("a command is missing; give -- COMMAND1 ARGS -- COMMAND2 ARGS, or one COMMAND") end
  end
  if #regions == 0 then usage_error("no region given; name one with -r FUNCTION") end
  local sides = {}
  if #cmds == 2 then
    if #regions ~= 1 then
      usage_error(("two commands are compared on one region, not %d; give one -r"):format(#regions))
    end
    for k, c in ipairs(cmds) do
      sides[k] = {label = ("%d: %s"):format(k, table.concat(c, " ")), cmd = c, region = regions[1]}
    end
  else
    if #regions < 2 then
      usage_error("one region of one command: give two or more -r REGION, or two commands as -- CMD1 -- CMD2")
    end
    local seen = {}
    for k, r in ipairs(regions) do
      if seen[r] then usage_error(("region '%s' is given twice"):format(r)) end
      seen[r] = true
      sides[k] = {label = r, cmd = cmds[1], region = r}
    end
  end
  return sides
end

-- Measure every side: sides[k].m = the measure of its region ({hits, events}); returns the names.
local function measure(opts, sides, regions)
  local engine, events, runs, backend = gate.setup(NAME, {engine = opts.engine or "counters", events = opts.events,
    runs = opts.runs, backend = opts.backend}, regions)
  local names
  if sides[1].cmd == sides[2].cmd then
    local m
    m, names = gate.measure(engine, sides[1].cmd, regions, events, runs, backend, NAME, FIELDS)
    for _, s in ipairs(sides) do s.m = m[s.region] end
  else
    for _, s in ipairs(sides) do
      local m
      m, names = gate.measure(engine, s.cmd, {s.region}, events, runs, backend, NAME, FIELDS)
      s.m = m[s.region]
    end
  end
  return engine, runs, names
end

-- a / b, 1 when both are 0.
local function ratio(a, b)
  if b == 0 then return a == 0 and 1 or math.huge end
  return a / b
end

-- Per event and side: {event, side, hits, value, ratio, lo, hi, mark}.
local function rows_of(sides, names, per_hit)
  local rows = {}
  for _, e in ipairs(names) do
    local base = sides[1]
    local function per(s, x)
      if per_hit then return s.m.hits > 0 and x / s.m.hits or 0 / 0 end
      return x
    end
    for k, s in ipairs(sides) do
      local ev = s.m.events[e]
      local row = {event = e, side = s.label, hits = s.m.hits, value = per(s, ev.median)}
      local b = per(base, base.m.events[e].median)
      row.ratio = ratio(row.value, b)
      if k == 1 then
        row.mark = "(reference)"
      else
        local lo, hi = math.huge, -math.huge
        for i, x in ipairs(ev.values) do
          local r = ratio(per(s, x), per(base, base.m.events[e].values[i]))
          lo, hi = math.min(lo, r), math.max(hi, r)
        end
        row.lo, row.hi = lo, hi
        if #ev.values > 1 and lo <= 1 and hi >= 1 and lo < hi then
          row.mark = "~ within noise"
        else
          row.mark = row.ratio > 1 and "higher" or (row.ratio < 1 and "lower" or "same")
        end
      end
      rows[#rows + 1] = row
    end
  end
  return rows
end

local function num(x)
  if x ~= x then return "-" end
  if math.abs(x) >= 1000 or x == math.floor(x) then return report.human(math.tointeger(math.floor(x + 0.5))) end
  return ("%.1f"):format(x)
end

local function fixed(x)
  return x == math.huge and "inf" or ("%.3f"):format(x)
end

local function print_rows(out, rows, as_csv)
  if as_csv then
    csv.write(out, {"event", "side", "hits", "value", "ratio", "ratio_min", "ratio_max", "mark"})
    for _, r in ipairs(rows) do
      csv.write(out, {r.event, r.side, tostring(r.hits), ("%.17g"):format(r.value), ("%.6f"):format(r.ratio),
        r.lo and ("%.6f"):format(r.lo) or "", r.hi and ("%.6f"):format(r.hi) or "", r.mark}, 8)
    end
    return
  end
  local w = 4
  for _, r in ipairs(rows) do w = math.max(w, #r.side) end
  local fmt = "  %-10s %-" .. w .. "s %6s %16s %8s  %-17s %s\n"
  out:write(fmt:format("event", "side", "hits", "value", "ratio", "spread (per run)", "mark"))
  for _, r in ipairs(rows) do
    out:write(fmt:format(r.event, r.side, num(r.hits), num(r.value), fixed(r.ratio),
      r.lo and (fixed(r.lo) .. ".." .. fixed(r.hi)) or "", r.mark))
  end
end

local function main(opts, rest)
  local cmds = commands(rest)
  local sides = sides_of(opts, cmds)
  local regions = {}
  for k, s in ipairs(sides) do regions[k] = s.region end
  if #cmds == 2 then regions = {regions[1]} end
  local engine, runs, names = measure(opts, sides, regions)
  local rows = rows_of(sides, names, opts.per_hit)
  if not opts.csv then
    local what = #cmds == 2 and ("region " .. regions[1]) or table.concat(cmds[1], " ")
    io.stdout:write(("perfsh compare: %s (engine %s, %d run%s per side; median %s; ratio to %s)\n\n"):format(what,
      engine, runs, runs == 1 and "" or "s", opts.per_hit and "per hit" or "total over the hits", sides[1].label))
  end
  print_rows(io.stdout, rows, opts.csv)
  if not opts.csv and engine == "callgrind" then
    io.stdout:write("\ncallgrind: exact, repeatable counts (no noise); threads run one at a time under valgrind, "
      .. "so its cache\nsimulation shows no false sharing between threads.\n")
  end
  return 0
end

cli.run(def, main)
