-- kinds: the cost of a marker region per kind of hit (a field's value), inner markers costed apart, slow hits logged
-- usage: perfsh kinds -r marker:NAME [--field K] [--kind V=LABEL ...] [-r marker:INNER ...] [options] [--] CMD...
local failure = require "perfsh.fail"
local cli = require "perfsh.cli"
local core = require "perfsh.core"
local export = require "perfsh.export"
local perfsh = cli.perfsh

local def = {
  defaults = "tail",
  description = [[
Runs CMD, a program built with the marker library (perfsh/marker.h), under the marker catcher: the
program measures its markers itself and perfsh drains the records as it runs. The first -r region's
hits are broken down by the value of their field K (PS_MARK_FIELD(K, v)), each value a kind; every
other -r region is costed inside the hits of the first that enclose it, per kind (what share of a
kind's time it takes). Slow hits of the first region are logged as they happen, with their kind:
  hit=N time=T (Rx median) tid=... cpu=... EVENT=V (Rx median) ... kind=LABEL fields=F0,F1,F2,F3]],
  example = "perfsh kinds -r marker:iter --field 1 --kind 0=data --kind 1=listen -r marker:accept "
    .. "examples/epoll_server 20 10",
  options = {
    {"-r --region", "R", "marker:NAME; the first is broken down, the others are costed inside it", count = "*",
      target = "regions"},
    {"--field", "K", "the field (0 to 3) whose value is the kind of a hit (default 0)", number = "field"},
    {"--kind", "V=LABEL", "call the kind of value V LABEL (e.g. --kind 1=listen); may be repeated", count = "*",
      target = "labels"},
    {"--threshold-us", "X", "slow: on-CPU time above X microseconds", target = "threshold", number = "us"},
    {"--quantile", "Q", "slow: above F times the running Q-quantile of the earlier hits (after --warmup hits; "
      .. "default Q 0.99, F 2, warm-up 50)", number = "quantile"},
    {"--factor", "F", "the F of --quantile", number = "positive"},
    {"--warmup", "N", "the hits before --quantile judges", number = "count0"},
    {"--log", "FILE", "write the slow-hit lines to FILE instead of stdout"},
    {"-e --events", "LIST", "counters (default: {pmu} with a hardware PMU, else {none}); @ipc, @cache, @branch or "
      .. "@tlb put in a preset set; may be repeated", count = "*"},
  },
  epilog = "perfsh exits with CMD's status (128 + signal when a signal killed it).",
}

local NAME = "kinds"

local function fail(fmt, ...) failure.raise(("perfsh %s: " .. fmt):format(NAME, ...)) end

-- --kind V=LABEL ... -> {[V] = LABEL}
local function labels(list)
  local out = {}
  for _, s in ipairs(list or {}) do
    local v, label = s:match("^(%d+)=([^%s]+)$")
    if not v then fail("--kind %s: give VALUE=LABEL, e.g. --kind 1=listen", s) end
    out[tonumber(v)] = label
  end
  return out
end

local function quantile(sorted, q)
  if #sorted == 0 then return 0 end
  return sorted[core.rank(#sorted, q)]
end

-- count, total, mean, p50, p99 of @values
local function summary(values)
  table.sort(values)
  local sum = 0
  for _, v in ipairs(values) do sum = sum + v end
  return {n = #values, sum = sum, mean = #values > 0 and sum / #values or 0, p50 = quantile(values, 0.5),
    p99 = quantile(values, 0.99)}
end

-- The hits of @r per kind: {kinds = {value, ...} (sorted), by = {[value] = {hits}}}
local function by_kind(r, k)
  local by, kinds = {}, {}
  for h in r:hits() do
    if not h.unwound and not h.exited then
      local v = h.args[k + 1]
      if not by[v] then
        by[v] = {}
        kinds[#kinds + 1] = v
      end
      table.insert(by[v], h)
    end
  end
  table.sort(kinds)
  return {kinds = kinds, by = by}
end

local function print_kinds(out, r, k, name_of, groups, events)
  local total = 0
  for _, v in ipairs(groups.kinds) do total = total + #groups.by[v] end
  out:write(("\n%s by field %d: %d hits\n"):format(r.name, k, total))
  local head = {("  %-16s %8s %7s %12s %12s %12s %12s"):format("kind", "hits", "share", "time mean", "time p50",
    "time p99", "time total")}
  for _, e in ipairs(events) do head[#head + 1] = (" %16s"):format(e .. " mean") end
  out:write(table.concat(head), "\n")
  local function row(label, hits)
    local times = {}
    for i, h in ipairs(hits) do times[i] = h.time_ns end
    local s = summary(times)
    local line = {("  %-16s %8d %6.1f%% %12s %12s %12s %12s"):format(label, s.n, total > 0 and 100 * s.n / total or 0,
      export.fmt_time(s.mean), export.fmt_time(s.p50), export.fmt_time(s.p99), export.fmt_time(s.sum))}
    for _, e in ipairs(events) do
      local vals = {}
      for i, h in ipairs(hits) do vals[i] = h[e] end
      line[#line + 1] = (" %16.1f"):format(summary(vals).mean)
    end
    out:write(table.concat(line), "\n")
  end
  local all = {}
  for _, v in ipairs(groups.kinds) do
    row(name_of(v), groups.by[v])
    for _, h in ipairs(groups.by[v]) do all[#all + 1] = h end
  end
  if #groups.kinds > 1 then row("all", all) end
end

-- Each hit of @inner inside the hit of the outer region that encloses it on its thread: per
-- kind of that hit, the inner hits' on-CPU times; "outside" for those no outer hit encloses.
local function nest(groups, inner)
  local per_thread = {}
  for _, v in ipairs(groups.kinds) do
    for _, h in ipairs(groups.by[v]) do
      per_thread[h.tid] = per_thread[h.tid] or {}
      table.insert(per_thread[h.tid], {h = h, kind = v})
    end
  end
  for _, list in pairs(per_thread) do table.sort(list, function(a, b) return a.h.t_start < b.h.t_start end) end
  local times, outside = {}, {}
  for h in inner:hits() do
    local list, kind = per_thread[h.tid] or {}, nil
    -- the last outer hit that starts before this one (binary search), if it also ends after it
    local lo, hi = 1, #list
    while lo <= hi do
      local mid = (lo + hi) // 2
      if list[mid].h.t_start <= h.t_start then lo = mid + 1 else hi = mid - 1 end
    end
    local o = list[hi]
    if o and o.h.t_end >= h.t_end then kind = o.kind end
    if kind == nil then
      outside[#outside + 1] = h.time_ns
    else
      times[kind] = times[kind] or {}
      table.insert(times[kind], h.time_ns)
    end
  end
  return times, outside
end

local function print_nested(out, outer, inners, groups, name_of)
  if #inners == 0 then return end
  out:write(("\ninside %s, by kind\n"):format(outer.name))
  out:write(("  %-18s %-16s %8s %12s %12s %12s  %s\n"):format("region", "kind", "hits", "time mean", "time p99",
    "time total", "share of the kind's time"))
  local kind_total = {}
  for _, v in ipairs(groups.kinds) do
    local s = 0
    for _, h in ipairs(groups.by[v]) do s = s + h.time_ns end
    kind_total[v] = s
  end
  for _, r in ipairs(inners) do
    local times, outside = nest(groups, r)
    for _, v in ipairs(groups.kinds) do
      if times[v] then
        local s = summary(times[v])
        out:write(("  %-18s %-16s %8d %12s %12s %12s  %.1f%%\n"):format(r.name, name_of(v), s.n,
          export.fmt_time(s.mean), export.fmt_time(s.p99), export.fmt_time(s.sum),
          kind_total[v] > 0 and 100 * s.sum / kind_total[v] or 0))
      end
    end
    if #outside > 0 then
      local s = summary(outside)
      out:write(("  %-18s %-16s %8d %12s %12s %12s\n"):format(r.name, "(outside)", s.n, export.fmt_time(s.mean),
        export.fmt_time(s.p99), export.fmt_time(s.sum)))
    end
  end
end

local function main(opts, cmd)
  local regions = opts.regions or {}
  if #regions == 0 then fail("no region given; name the marker to break down with -r marker:NAME") end
  if #cmd == 0 then fail("no command given") end
  for _, r in ipairs(regions) do
    if cli.region_kind(r) ~= "marker" then
      cli.region_spec(r, NAME) -- a bad one says what is wrong with it
      fail("region '%s': the kinds come from a marker's fields; give marker:NAME regions", r)
    end
  end
  local k = opts.field or 0 -- 0 to 3: checked by cli.parse
  local names = labels(opts.labels)
  local function name_of(v)
    return names[v] and ("%s(%d)"):format(names[v], v) or tostring(v)
  end
  local slow = cli.slow_options(NAME, opts)
  local events = opts.events and cli.events(NAME, opts.events) or perfsh.default_events("tail")
  cli.check_events(NAME, events)
  if #events == 0 then fail("the marker catcher needs at least one event (-e task-clock)") end

  local t = cli.start(NAME, cmd, nil, {events = events, backend = "marker"})
  local rs = {}
  for i, r in ipairs(regions) do
    local spec = cli.region_spec(r, NAME)
    rs[i] = cli.arm(NAME, t, r, spec)
  end
  local outer = rs[1]
  slow.suffix = function(h)
    return ("kind=%s fields=%s"):format(name_of(h.args[k + 1]), table.concat(h.args, ",", 1, 4))
  end
  local sok, logger = pcall(outer.on_slow, outer, slow)
  if not sok then
    t:close()
    fail("%s", cli.reason(logger))
  end

  local status
  local runok, why = pcall(function() status = t:run() end)
  local info, out = t:info(), io.stdout
  local how = status and (status.signal and (", killed by " .. status.signal) or (", exit " .. status.code)) or ""
  local caught, lost = cli.caught(t)
  out:write(("\nperfsh kinds: %s%s; events %s; caught by %s%s\n"):format(table.concat(t.argv, " "), how,
    table.concat(info.events, ","), caught, lost))
  local groups = by_kind(outer, k)
  print_kinds(out, outer, k, name_of, groups, info.events)
  local inners = {}
  for i = 2, #rs do inners[#inners + 1] = rs[i] end
  print_nested(out, outer, inners, groups, name_of)
  local thr = opts.threshold and ("on-CPU time above %sus"):format(opts.threshold)
    or ("above %s x the running p%g, after %d hits"):format(opts.factor or 2, (opts.quantile or 0.99) * 100,
      opts.warmup or 50)
  out:write(("\nslow %s hits (%s): %d logged%s\n"):format(outer.name, thr, #logger.lines,
    #logger.lines == 0 and "" or opts.log and " to " .. opts.log or " above"))
  t:close()
  return cli.finish(NAME, runok, why, status)
end

cli.run(def, main)
