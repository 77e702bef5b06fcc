--- perfsh.metrics: derived metrics from formulas kept as Lua data, and intervals between any
-- two fields of the records.
--   metrics.formulas.ipc == "instructions / cycles"
--   metrics.derive(hit, "cache-misses / cache-references")
--   metrics.interval(hits, "start.instructions", "end.instructions")
-- A name in a formula is an event or a field of the hit (time_ns, wall_ns, ...); names may
-- contain '-' (cache-misses), so subtraction needs spaces around the '-'.
local metrics = {}

metrics.formulas = {
  ipc = "instructions / cycles",
  cpi = "cycles / instructions",
  ["cache-miss-ratio"] = "cache-misses / cache-references",
  ["branch-miss-ratio"] = "branch-misses / branches",
  ["l1d-miss-ratio"] = "L1-dcache-load-misses / L1-dcache-loads",
  ["ns-per-instruction"] = "time_ns / instructions",
  ["instructions-per-ns"] = "instructions / time_ns",
}

local cache = {}

--- Compile a formula (or the name of one in metrics.formulas) to function(hit) -> number,
-- and the names it uses. fields: the names that may appear (for the error message); nil
-- allows any name.
function metrics.compile(expr, fields)
  expr = metrics.formulas[expr] or expr
  local key = expr .. "\0" .. (fields and table.concat(fields, ",") or "")
  if cache[key] then return cache[key].fn, cache[key].names end
  local known
  if fields then
    known = {}
    for _, f in ipairs(fields) do known[f] = true end
  end
  local names = {}
  local code = expr:gsub("()([%a_][%w_%-:%.]*)", function(pos, name)
    -- a trailing '-' belongs to the next operator, not the name
    if name == "math" or expr:sub(pos - 1, pos - 1) == "." then return nil end
    if known and not known[name] then
      error(("unknown field '%s' in formula '%s' (known: %s)"):format(name, expr, table.concat(fields, ", ")), 3)
    end
    names[#names + 1] = name
    return ("F[%q]"):format(name)
  end)
  local chunk, err = load("local F = ...; return " .. code, "=formula", "t", {math = math})
  if not chunk then error(("bad formula '%s': %s"):format(expr, err), 2) end
  local fn = function(hit)
    for _, n in ipairs(names) do
      if hit[n] == nil then error(("unknown field '%s' in formula '%s'"):format(n, expr), 2) end
    end
    return chunk(hit)
  end
  cache[key] = {fn = fn, names = names}
  return fn, names
end

--- The value of a formula for one hit (or any table of named numbers).
function metrics.derive(hit, expr)
  return metrics.compile(expr)(hit)
end

--- The value of a formula where it has one: nil when a name it uses is not a number in
-- values (not counted) or the value is not finite (a division by zero).
--   metrics.value(hit, "ipc"), metrics.value(perfsh.run{...}, "ipc")
function metrics.value(values, expr)
  local fn, names = metrics.compile(expr)
  for _, n in ipairs(names) do
    if type(values[n]) ~= "number" then return nil end
  end
  local v = fn(values)
  if v ~= v or v == math.huge or v == -math.huge then return nil end
  return v
end

--- The formula over a region's totals, the sum of each event in statistics st (r:stats()):
-- metrics.of_totals(st, "ipc") is the region's IPC (nil where it has none).
function metrics.of_totals(st, expr)
  local sums = {}
  for name, s in pairs(st) do
    if type(s) == "table" and type(s.sum) == "number" then sums[name] = s.sum end
  end
  return metrics.value(sums, expr)
end

-- A field reference: "t_start", "time_ns", "instructions" (the delta), "start.instructions",
-- "end.cycles", "next.t_start" (the same field of the next hit). events: names in record order.
local function getter(ref, events)
  local scope, name = ref:match("^(%a+)%.(.+)$")
  local index = {}
  for i, e in ipairs(events or {}) do index[e] = i end
  local function field(h, n, s)
    if s == "start" or s == "end" then
      local i = index[n]
      if not i then
        error(("unknown field '%s' in '%s' (events: %s)"):format(n, ref, table.concat(events or {}, ", ")), 4)
      end
      return h[s][i]
    end
    local v = h[n]
    if type(v) ~= "number" then error(("unknown field '%s'"):format(ref), 4) end
    return v
  end
  if scope == "next" then
    return function(_, nxt) return nxt and field(nxt, name, nil) end
  elseif scope == "start" or scope == "end" then
    return function(h) return field(h, name, scope) end
  end
  return function(h) return field(h, ref, nil) end
end

--- Intervals between two fields of each hit (to - from): raw values are kept, so any interval
-- can be chosen afterwards. Returns an array (hits without a next one are skipped for next.*).
function metrics.interval(hits, from, to, events)
  local gf, gt = getter(from, events), getter(to, events)
  local out = {}
  for i, h in ipairs(hits) do
    local a, b = gf(h, hits[i + 1]), gt(h, hits[i + 1])
    if a and b then out[#out + 1] = b - a end
  end
  return out
end

return metrics
