--- perfsh.export: hits out of perfsh: CSV, JSON lines, Chrome/Perfetto trace JSON, and a
-- terminal histogram.
local core = require "perfsh.core"
local csv = require "perfsh.csv"
local json = require "dkjson"

local export = {}

local array_mt, object_mt = {__jsontype = "array"}, {__jsontype = "object"}
--- Give an empty table this metatable to have it written as [] (else it is {}).
export.array_mt = array_mt

-- A float is written in as few digits as give it back exactly (dkjson's own keep 14).
local float_mt = {__tojson = function(self)
  local x = self[1]
  if x ~= x or x == math.huge or x == -math.huge then return "null" end
  local s = ("%.14g"):format(x)
  if tonumber(s) ~= x then s = ("%.17g"):format(x) end
  return s
end}

-- A copy of v for dkjson: floats wrapped (above), an empty table an object unless marked with
-- export.array_mt, and the string keys of every table gathered in keys (to write them sorted).
local function prepare(v, keys, seen)
  if math.type(v) == "float" then return setmetatable({v}, float_mt) end
  if type(v) ~= "table" then return v end
  if seen[v] then error("cannot encode a table that contains itself as JSON", 3) end
  seen[v] = true
  local c = {}
  for k, x in pairs(v) do
    c[k] = prepare(x, keys, seen)
    if type(k) == "string" then keys[k] = true end
  end
  seen[v] = nil
  if next(c) == nil then setmetatable(c, getmetatable(v) == array_mt and array_mt or object_mt) end
  return c
end

--- JSON text of a Lua value (by dkjson; tables with only 1..n keys are arrays, the keys of an
-- object are written sorted, NaN and infinities as null).
function export.json(v)
  local keys, order = {}, {}
  local c = prepare(v, keys, {})
  for k in pairs(keys) do order[#order + 1] = k end
  table.sort(order)
  return json.encode(c, {keyorder = order})
end

-- The fields of a hit worth exporting, events included.
local base_fields = {"region", "hit", "tid", "cpu_start", "cpu_end", "t_start", "t_end", "time_ns", "wall_ns", "depth",
  "flags"}

-- The hits of @hits one at a time: an array, or a function that returns an iterator over them
-- (called once for each pass: a file's hits stream, never all in memory).
local function each(hits)
  if type(hits) == "function" then return hits() end
  local i = 0
  return function()
    i = i + 1
    return hits[i]
  end
end

--- CSV of hits: a header, then one row per hit. hits: an array, or a function that returns an
-- iterator (f:hits). events: the event names to add as columns.
function export.csv(out, hits, events, region_names)
  local fields = {}
  for i = 2, #base_fields do fields[#fields + 1] = base_fields[i] end
  for _, e in ipairs(events) do fields[#fields + 1] = e end
  csv.write(out, {"region", table.unpack(fields)})
  local row, names, n = {}, {}, #fields
  for h in each(hits) do
    local name = names[h.region]
    if not name then
      name = region_names and region_names[h.region] or h.region
      names[h.region] = name
    end
    row[1] = name
    for i = 1, n do row[i + 1] = h[fields[i]] end
    csv.write(out, row, n + 1)
  end
end

-- The JSON text export.json gives a hit object @o (keys in sorted order @keys, events in sorted
-- order @evs), written here without dkjson, which costs some 30 us a hit: when every value is an
-- integer or a string. nil for anything else (it goes through export.json).
local function hit_json(o, keys, evs, quoted)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = o[k]
    if k == "events" then
      local e = {}
      for i, name in ipairs(evs) do
        if math.type(v[name]) ~= "integer" then return nil end
        e[i] = quoted[name] .. ":" .. v[name]
      end
      v = "{" .. table.concat(e, ",") .. "}"
    elseif k == "args" and v then
      for _, a in ipairs(v) do
        if math.type(a) ~= "integer" then return nil end
      end
      v = "[" .. table.concat(v, ",") .. "]"
    elseif type(v) == "string" then
      v = quoted[v]
    elseif v ~= nil and math.type(v) ~= "integer" then
      return nil
    end
    if v ~= nil then parts[#parts + 1] = quoted[k] .. ":" .. v end
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

--- JSON lines: one object per hit, with the event deltas under "events". hits: as for csv.
function export.jsonl(out, hits, events, region_names)
  local keys, evs = {"events", "args"}, {}
  for _, f in ipairs(base_fields) do keys[#keys + 1] = f end
  for i, e in ipairs(events) do evs[i] = e end
  table.sort(keys)
  table.sort(evs)
  local quoted = setmetatable({}, {__index = function(t, str)
    t[str] = json.encode(str)
    return t[str]
  end})
  for h in each(hits) do
    local o = {}
    for _, f in ipairs(base_fields) do o[f] = h[f] end
    if region_names then o.region = region_names[h.region] or h.region end
    o.events = {}
    for _, e in ipairs(events) do o.events[e] = h[e] end
    if h.args and #h.args > 0 then o.args = h.args end
    out:write(hit_json(o, keys, evs, quoted) or export.json(o), "\n")
  end
end

--- Chrome/Perfetto trace JSON: each hit a complete ("X") slice on its thread's track, with the
-- counter deltas as args; opens in ui.perfetto.dev and chrome://tracing. hits: as for csv (read
-- twice: the first pass finds the earliest start and the threads). pid: the process.
function export.trace(out, hits, events, region_names, pid)
  local t0, seen, tids = nil, {}, {}
  for h in each(hits) do
    if not t0 or h.t_start < t0 then t0 = h.t_start end
    if not seen[h.tid] then
      seen[h.tid] = true
      tids[#tids + 1] = h.tid
    end
  end
  t0 = t0 or 0
  local sep = ""
  local function put(e)
    out:write(sep, export.json(e))
    sep = ",\n"
  end
  out:write('{"displayTimeUnit":"ns","traceEvents":[\n')
  for h in each(hits) do
    local args = {time_ns = h.time_ns, wall_ns = h.wall_ns, hit = h.hit, cpu_start = h.cpu_start,
      cpu_end = h.cpu_end}
    for _, e in ipairs(events) do args[e] = h[e] end
    put{name = region_names and region_names[h.region] or ("region " .. h.region), cat = "perfsh",
      ph = "X", ts = (h.t_start - t0) / 1000, dur = (h.t_end - h.t_start) / 1000, pid = pid or 0, tid = h.tid,
      args = args}
  end
  table.sort(tids)
  for _, tid in ipairs(tids) do
    put{name = "thread_name", ph = "M", pid = pid or 0, tid = tid, args = {name = "thread " .. tid}}
  end
  out:write(sep ~= "" and "\n" or "", "]}\n")
end

local function fmt_time(ns)
  if ns >= 1e9 then return ("%.2fs"):format(ns / 1e9) end
  if ns >= 1e6 then return ("%.2fms"):format(ns / 1e6) end
  if ns >= 1e3 then return ("%.2fus"):format(ns / 1e3) end
  return ("%dns"):format(math.floor(ns + 0.5))
end
export.fmt_time = fmt_time

--- A terminal histogram of values (ns): log-scale buckets (powers of 2^(1/2)), bars scaled to
-- width, with the buckets holding p50, p99 and max marked.
function export.histogram(out, values, opts)
  opts = opts or {}
  local width = opts.width or 50
  local n = #values
  if n == 0 then
    out:write("(no hits)\n")
    return
  end
  local st = core.stats(values)
  local lo = math.max(st.min, 1)
  local step = 2 ^ 0.5
  local base = math.floor(math.log(lo, step))
  local counts, top = {}, 0
  for _, v in ipairs(values) do
    local b = math.floor(math.log(math.max(v, 1), step)) - base
    counts[b] = (counts[b] or 0) + 1
    if b > top then top = b end
  end
  local most = 0
  for b = 0, top do most = math.max(most, counts[b] or 0) end
  local function bucket(v) return math.floor(math.log(math.max(v, 1), step)) - base end
  local marks = {}
  for _, m in ipairs{{"p50", st.p50}, {"p99", st.p99}, {"max", st.max}} do
    local b = bucket(m[2])
    marks[b] = (marks[b] and (marks[b] .. ",") or "") .. m[1]
  end
  out:write(("%s: %d hits, p50 %s, p99 %s, max %s\n"):format(opts.title or "time", n, fmt_time(st.p50),
    fmt_time(st.p99), fmt_time(st.max)))
  for b = 0, top do
    local c = counts[b] or 0
    local from = step ^ (b + base)
    local bar = ("#"):rep(c > 0 and math.max(1, math.floor(c / most * width + 0.5)) or 0)
    out:write(("  %9s %-" .. width .. "s %7d%s\n"):format(fmt_time(from), bar, c,
      marks[b] and ("  <- " .. marks[b]) or ""))
  end
end

return export
