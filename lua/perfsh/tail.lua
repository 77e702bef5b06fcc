--- perfsh.tail: log the slow hits of a region while the program runs.
--   r:on_slow{threshold_us = 500}                   hits above an absolute time
--   r:on_slow{quantile = 0.99, factor = 2}          hits above factor x the running quantile
--                                                   of the hits before them, after warm-up
--   log = "slow.log" | io.stderr | function(line, hit) ... end
--                                                   (a file is written under a temporary name,
--                                                   renamed at the program's end or t:close())
--   decide = function(hit, ctx) return true end     a last word per hit (ctx: threshold_ns,
--                                                   median_ns, medians = {event = median})
--   suffix = function(hit) return "kind=listen" end  more words at the end of each line
-- Each logged line begins "hit=N" (N: the hit's 0-based index among the region's hits), then
-- the hit's time and each counter with its ratio to the median hit so far, so the line says
-- what made the hit slow ("cache-misses=140000 (14.0x median)").
local core = require "perfsh.core"
local export = require "perfsh.export"

local tail = {}

local Logger = {}
Logger.__index = Logger

function tail.new(region, events, opts)
  if type(opts) ~= "table" then error("bad argument #1 to 'on_slow' (table expected)", 3) end
  if not opts.threshold_us and not opts.quantile then
    error("bad argument #1 to 'on_slow' (give threshold_us or quantile)", 3)
  end
  if opts.quantile and (opts.quantile <= 0 or opts.quantile >= 1) then
    error("bad argument #1 to 'on_slow' (quantile is between 0 and 1)", 3)
  end
  local out = opts.log or io.stdout
  local close
  if type(out) == "string" then
    -- written whole: renamed into place when the logger finishes (perfsh.outfile)
    local f, why = require("perfsh.outfile").open(out)
    if not f then error("on_slow: " .. tostring(why), 3) end
    out, close = f, true
  end
  local self = setmetatable({
    region = region, events = events, opts = opts, out = out, close_out = close,
    time = core.hist(), hists = {}, seen = 0, logged = 0, lines = {},
    warmup = opts.warmup or 50, factor = opts.factor or 1,
  }, Logger)
  for _, e in ipairs(events) do self.hists[e] = core.hist() end
  return self
end

local function ratio_text(v, median)
  if not median or median <= 0 then return v > 0 and "(new)" or "(=median)" end
  return ("(%.1fx median)"):format(v / median)
end

--- Look at one complete hit: log it if it is slow, then learn from it.
function Logger:feed(h)
  if h.unwound or h.exited then return end
  local t = h.time_ns
  local thr
  if self.opts.threshold_us then
    thr = self.opts.threshold_us * 1000
  elseif self.seen > 0 and self.seen >= self.warmup then
    thr = self.factor * self.time:quantile(self.opts.quantile)
  end
  if thr and t > thr then
    local medians = {}
    for _, e in ipairs(self.events) do medians[e] = self.seen > 0 and self.hists[e]:quantile(0.5) or nil end
    local median_ns = self.seen > 0 and self.time:quantile(0.5) or nil
    local ok = true
    if self.opts.decide then
      ok = self.opts.decide(h, {threshold_ns = thr, median_ns = median_ns, medians = medians})
    end
    if ok then
      local parts = {("hit=%d"):format(h.hit), ("time=%s %s"):format(export.fmt_time(t), ratio_text(t, median_ns)),
        ("tid=%d"):format(h.tid), ("cpu=%d"):format(h.cpu_start)}
      for _, e in ipairs(self.events) do
        parts[#parts + 1] = ("%s=%d %s"):format(e, h[e], ratio_text(h[e], medians[e]))
      end
      if self.opts.suffix then parts[#parts + 1] = self.opts.suffix(h) end
      local line = table.concat(parts, " ")
      self.logged = self.logged + 1
      self.lines[#self.lines + 1] = h.hit
      if type(self.out) == "function" then
        self.out(line, h)
      else
        self.out:write(line, "\n")
        self.out:flush()
      end
    end
  end
  self.time:add(t)
  for _, e in ipairs(self.events) do self.hists[e]:add(math.max(h[e], 0)) end
  self.seen = self.seen + 1
end

--- The end of the log (the program's end, or t:close()): a log file is put in place.
function Logger:finish()
  if self.close_out then
    self.close_out = false
    local ok, why = self.out:commit()
    if not ok then io.stderr:write("perfsh: on_slow: ", why, "\n") end
  end
end

return tail
