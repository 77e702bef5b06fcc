--- perfsh.export: hits out of perfsh: CSV, JSON lines, Chrome/Perfetto trace JSON, and a
-- terminal histogram.
local core = require "perfsh.core"

local export = {}

--- JSON text of a Lua value (tables with only 1..n keys are arrays).
function export.json(v)
  local t = type(v)
  if t == "nil" then return "null" end
  if t == "boolean" then return tostring(v) end
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return "null" end
    if math.type(v) == "integer" then return tostring(v) end
    return ("%.17g"):format(v)
  end
  if t == "string" then
    return '"' .. v:gsub('[%c"\\]', function(c)
      local map = {['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t"}
      return map[c] or ("\\u%04x"):format(c:byte())
    end) .. '"'
  end
  if t == "table" then
    local n = #v
    local is_array = next(v) == nil and getmetatable(v) == export.array_mt or n > 0
    if is_array then
      for k in pairs(v) do
        if math.type(k) ~= "integer" or k < 1 or k > n then is_array = false break end
      end
    end
    local parts = {}
    if is_array then
      for i = 1, n do parts[i] = export.json(v[i]) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local val = v[k]
      if val == nil then val = v[tonumber(k)] end
      parts[#parts + 1] = export.json(k) .. ":" .. export.json(val)
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  error("cannot encode a " .. t .. " as JSON", 2)
end
export.array_mt = {}

-- The fields of a hit worth exporting, events included.
local base_fields = {"region", "hit", "tid", "cpu_start", "cpu_end", "t_start", "t_end", "time_ns", "wall_ns", "depth",
  "flags"}

--- CSV of hits: a header, then one row per hit. events: the event names to add as columns.
function export.csv(out, hits, events, region_names)
  local head = {"region"}
  for i = 2, #base_fields do head[#head + 1] = base_fields[i] end
  for _, e in ipairs(events) do head[#head + 1] = e end
  out:write(table.concat(head, ","), "\n")
  for _, h in ipairs(hits) do
    local row = {region_names and region_names[h.region] or h.region}
    for i = 2, #base_fields do row[#row + 1] = h[base_fields[i]] end
    for _, e in ipairs(events) do row[#row + 1] = h[e] end
    for i, v in ipairs(row) do
      v = tostring(v)
      if v:find('[,"\n]') then v = '"' .. v:gsub('"', '""') .. '"' end
      row[i] = v
    end
    out:write(table.concat(row, ","), "\n")
  end
end

--- JSON lines: one object per hit, with the event deltas under "events".
function export.jsonl(out, hits, events, region_names)
  for _, h in ipairs(hits) do
    local o = {}
    for _, f in ipairs(base_fields) do o[f] = h[f] end
    if region_names then o.region = region_names[h.region] or h.region end
    o.events = {}
    for _, e in ipairs(events) do o.events[e] = h[e] end
    if h.args and #h.args > 0 then o.args = h.args end
    out:write(export.json(o), "\n")
  end
end

--- Chrome/Perfetto trace JSON: each hit a complete ("X") slice on its thread's track, with the
-- counter deltas as args; opens in ui.perfetto.dev and chrome://tracing. pid: the process.
function export.trace(out, hits, events, region_names, pid)
  local evs, tids = {}, {}
  local t0
  for _, h in ipairs(hits) do
    if not t0 or h.t_start < t0 then t0 = h.t_start end
  end
  t0 = t0 or 0
  for _, h in ipairs(hits) do
    local args = {time_ns = h.time_ns, wall_ns = h.wall_ns, hit = h.hit, cpu_start = h.cpu_start,
      cpu_end = h.cpu_end}
    for _, e in ipairs(events) do args[e] = h[e] end
    evs[#evs + 1] = {name = region_names and region_names[h.region] or ("region " .. h.region), cat = "perfsh",
      ph = "X", ts = (h.t_start - t0) / 1000, dur = (h.t_end - h.t_start) / 1000, pid = pid or 0, tid = h.tid,
      args = args}
    tids[h.tid] = true
  end
  for tid in pairs(tids) do
    evs[#evs + 1] = {name = "thread_name", ph = "M", pid = pid or 0, tid = tid, args = {name = "thread " .. tid}}
  end
  out:write('{"displayTimeUnit":"ns","traceEvents":[\n')
  for i, e in ipairs(evs) do
    out:write(export.json(e), i < #evs and ",\n" or "\n")
  end
  out:write("]}\n")
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
