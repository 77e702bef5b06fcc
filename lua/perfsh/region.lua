--- perfsh.region: a region's hits and their statistics, from a live tracee or a loaded file,
-- and the logging of its slow hits while a live tracee runs (r:on_slow).
-- A region belongs to a source (src) that has:
--   src:record(i), src:stats_of(id [, "thread"|"cpu"]), src:series_of(id, k)   the records and
--                     their statistics (core/records/analysis.c)
--   src:events()      the event names, in record order
--   src:region_meta(id) -> {name, kind, entries, sampled, args = {names}, dropped, why, running, ...}
--   src:losses()      the records the run lost: {catcher, lost, dropped, total}
local tail = require "perfsh.tail"
local metrics = require "perfsh.metrics"

local Region = {}
Region.__index = Region
Region.__name = "perfsh.region"

-- Each argument of a record also by the name given in region{args = {...}}.
local function name_args(rec, names)
  if names then
    for k, name in ipairs(names) do rec[name] = rec.args[k] end
  end
  return rec
end

function Region.new(src, id)
  local meta = src:region_meta(id)
  return setmetatable({src = src, id = id, name = meta.name, kind = meta.kind}, Region)
end

--- r:hits() iterates this region's records: raw start/end values, deltas by event name,
-- time_ns (on-CPU), wall_ns, tid, cpu_start, cpu_end, hit (0-based), depth, unwound, exited,
-- sampled, args (and each argument by the name given in region{args = {...}}).
function Region:hits()
  local i, src, id = 0, self.src, self.id
  local names = src:region_meta(id).args
  return function()
    while true do
      i = i + 1
      local rec = src:record(i)
      if not rec then return nil end
      if rec.region == id then return name_args(rec, names) end
    end
  end
end

--- r:list() -> an array of the region's hits (see r:hits()).
function Region:list()
  local out = {}
  for h in self:hits() do out[#out + 1] = h end
  return out
end

--- r:series(field) -> one number per complete hit: an event's delta, "time_ns" or "wall_ns".
function Region:series(field)
  local k
  if field == "time_ns" then
    k = -1
  elseif field == "wall_ns" then
    k = -2
  else
    for i, name in ipairs(self.src:events()) do
      if name == field then k = i - 1 end
    end
  end
  if not k then
    error(("unknown field '%s' for series (events: %s, time_ns, wall_ns)"):format(tostring(field),
      table.concat(self.src:events(), ", ")), 2)
  end
  return self.src:series_of(self.id, k)
end

--- r:stats(): over the region's complete hits, for each event and for time_ns (on-CPU time
-- between the two breakpoints) and wall_ns: count, sum, mean, stddev, min, p50, p90, p99, max.
-- Also hits, incomplete, ratio_min (multiplexing), entries, ipc where instructions and cycles
-- are both counted, lost (records the run lost, of any region: a lost record's region is not
-- known), and for a sampled region scale and each event's estimated_total.
function Region:stats()
  local st = self.src:stats_of(self.id)
  local meta = self.src:region_meta(self.id)
  st.lost = self.src:losses().total
  st.ipc = metrics.of_totals(st, "ipc")
  st.entries = meta.entries
  st.late = meta.late_samples or 0
  st.entry_counter = meta.entry_counter -- "breakpoint", "uprobe" or "int3": what counted the entries
  if meta.sampled then
    -- every entry was counted; the sampled hits stand for all of them
    st.sampled = true
    st.scale = st.hits > 0 and (meta.entries or 0) / st.hits or 0
    for _, name in ipairs(self.src:events()) do
      if st[name] then st[name].estimated_total = st[name].sum * st.scale end
    end
    st.time_ns.estimated_total = st.time_ns.sum * st.scale
  end
  return st
end

--- r:on_slow{...}: log this region's slow hits while the program runs (see perfsh.tail).
-- Returns the logger (logger.logged: how many lines; logger.lines: the hit numbers logged).
function Region:on_slow(opts)
  local t = self.tracee
  if not t then error("on_slow needs a live tracee", 2) end
  local logger = tail.new(self, t:events(), opts)
  self.loggers = self.loggers or {}
  self.loggers[#self.loggers + 1] = logger
  self.logged_args = self.src:region_meta(self.id).args
  return logger
end

--- Hand one new record of this region to its slow-hit loggers (the tracee does, as it runs).
function Region:log_slow(rec)
  name_args(rec, self.logged_args)
  for _, lg in ipairs(self.loggers) do lg:feed(rec) end
end

--- The program has ended: close the slow-hit logs.
function Region:finish_slow()
  for _, lg in ipairs(self.loggers) do lg:finish() end
end

--- r:stats_by("thread"|"cpu"): an array of statistics as r:stats() gives them (without the sampling
-- and ipc fields), one per thread (field tid) or per CPU a hit started on (field cpu), in
-- increasing order; each also has migrated (hits that ended on another CPU).
function Region:stats_by(what)
  return self.src:stats_of(self.id, what)
end

function Region:info() return self.src:region_meta(self.id) end
function Region:__tostring() return ("perfsh.region(%s)"):format(self.name) end

return Region
