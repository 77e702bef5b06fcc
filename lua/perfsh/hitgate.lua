--- perfsh.hitgate: how perfsh check measures with the counters engine, and how much a change must
-- be to count.
--
-- What a hit costs: a region's hit, caught at a breakpoint (ptrace) or a probe (uprobe), holds
-- the function's own work and the catcher's: without a PMU, task-clock and time_ns are the
-- thread's on-CPU time between the two catch points, which includes the end of the kernel's
-- handling of the trap at the start and the beginning of the trap at the end (on the machines
-- this was written on, 7 us a hit with ptrace and 15 us with uprobes, against 2.5 us of work),
-- and that cost moves between runs (where the scheduler puts perfsh and the program, what else
-- runs). So each run is measured per hit, and the catcher's cost is measured too and taken away:
--
--   - every run takes, per region and event, a low percentile of the hits for times (M.typical:
--     what a preemption, an interrupt or another program's use of the caches adds to a hit is
--     never negative, and on a loaded machine it comes and goes many times a second), the median
--     for counts;
--   - after every run, two runs of the same program catch empty hits of each function region at
--     sites in its own code (core.empty_hit_sites: its entry instruction to the next, and an
--     instruction just before one of its returns, as a range and as a function region), from
--     which floor = return hit + (entry range - return range): a hit with the same start and
--     the same end as the function's, and nothing of its work;
--   - a run's figure is its median hit less its floor (the function's own cost a hit);
--   - perfsh and the program run on one CPU, the one perfsh is on when the measurement starts,
--     so the catcher's cost does not jump with where the scheduler puts them.
--
-- The test: the change is the median of the runs' figures now less the baseline's; its noise is
-- the spread of the runs about their side's median (a standard deviation pooled over both sides,
-- runs further than 4 robust deviations from their median left out) and, for times, what moves
-- between the baseline's session and this one (M.SESSION); a change counts only beyond M.Z = 4
-- standard errors of it: that is the smallest change the runs could detect.
local fail = require "perfsh.fail"
local cli = require "perfsh.cli"
local core = require "perfsh.core"
local perfsh = require "perfsh"

local M = {}

M.Z = 4

--- The median of @xs as the gate takes it (core.median: the mean of the two middle values of an
-- even count); NaN for none.
M.median = core.median

--- The spread of the values of @groups (arrays) about their own medians: a standard deviation
-- pooled over the groups, the values further than 4 robust deviations (1.4826 x the median
-- absolute deviation) from their group's median left out. Returns it and how many were left out.
function M.spread(groups)
  local res = {}
  for _, g in ipairs(groups) do
    local m = M.median(g)
    for _, x in ipairs(g) do res[#res + 1] = x - m end
  end
  local df = #res - #groups
  if df < 1 then return 0 / 0, 0 end
  local abs = {}
  for i, r in ipairs(res) do abs[i] = math.abs(r) end
  local mad = 1.4826 * M.median(abs) * #res / df
  local sum, kept = 0, 0
  for _, r in ipairs(res) do
    if mad == 0 or math.abs(r) <= 4 * mad then
      sum, kept = sum + r * r, kept + 1
    end
  end
  local k = kept - #groups
  return k >= 1 and math.sqrt(sum / k) or mad, #res - kept
end

--- The standard error of the difference of the medians of arrays @a and @b (M.spread), and
-- how many runs its spread left out.
function M.std_error(a, b)
  local s, out = M.spread({a, b})
  return 1.2533 * s * math.sqrt(1 / #a + 1 / #b), out
end

-- What the runs of one session cannot see: a baseline and a check run at different times, and a
-- function's own time moves between them with what else the machine does (on the VM this was
-- written on, by 2% to 5% between sessions of the same build, more than their runs' spread said).
-- Each side's median is taken to be off by this fraction of it (one standard deviation) besides
-- the spread of its runs.
M.SESSION = 0.015

--- The standard error of the change of event @name from the runs @a (baseline) to @b (now),
-- of median @base: M.std_error, with M.SESSION of @base for each side where @name is a time.
function M.change_error(name, a, b, base)
  local se, out = M.std_error(a, b)
  if M.is_time(name) then se = math.sqrt(se * se + 2 * (M.SESSION * math.abs(base)) ^ 2) end
  return se, out
end

--- The standard error of the change of a count of @base a hit that comes of chance (page faults,
-- context switches, cache misses: events a run may take or not), between runs of @ha and @hb
-- hits: that of the difference of two medians of Poisson counts of mean max(@base, 1). A count
-- of 1 a hit in one hit a run cannot tell 1 from 2; one over 2,000 hits can tell a few percent.
function M.count_error(base, ha, hb)
  local lam = math.max(math.abs(base), 1)
  return 1.2533 * math.sqrt(lam / math.max(ha or 1, 1) + lam / math.max(hb or 1, 1))
end

-- Events that count time: the noise of a loaded machine only ever adds to a hit.
local timelike = {time_ns = true, wall_ns = true, ["task-clock"] = true, ["cpu-clock"] = true, cycles = true,
  ["cpu-cycles"] = true, ["ref-cycles"] = true, ["bus-cycles"] = true}

--- Whether event @name counts time (or cycles).
function M.is_time(name)
  return timelike[(name:gsub(":.*$", ""))] or false
end

--- A run's figure of @xs, the values of event @name a hit: for times (and cycles) the 10th
-- percentile (what a preemption, an interrupt or a cache another program emptied adds to a hit
-- is never negative: the low end of the hits is the function's own cost least disturbed), for
-- counts the median; NaN without hits.
function M.typical(xs, name)
  if #xs == 0 then return 0 / 0 end
  table.sort(xs)
  return xs[core.rank(#xs, M.is_time(name) and 0.1 or 0.5)]
end

-- The floor's sites of region @r of the program at @path: core.empty_hit_sites, or nil, why.
local function floor_sites(path, r)
  local spec, rs = cli.region_spec(r, "check")
  if rs.kind == "marker" then return nil, "a marker region, no trap to take away" end
  if rs.kind == "libfunc" then return nil, "a function of a library" end
  if not spec.func then return nil, "not a function region" end
  local s, why = core.empty_hit_sites(path, rs.func)
  if not s then return nil, why end
  local tails = {}
  for _, t in ipairs(s.tails) do
    -- a tail of its own: not where the entry range starts or ends
    if t.at ~= s.entry and t.at ~= s.next and t.ret ~= s.next then tails[#tails + 1] = t end
  end
  s.tails = tails
  if not s.next and #tails == 0 then
    return nil, "its first instruction branches and no instruction before a return keeps the stack pointer"
  end
  return s
end

-- One run of @cmd with @arms ({label, spec}): per label {hits, typ = {name = M.typical value}} over
-- @names (events, then time_ns), and the catcher that caught them. With @optional, an arm the
-- catcher refuses is left out.
local function hit_run(cmd, arms, events, names, backend, optional)
  local spec = {events = events, stdout = "/dev/null", backend = backend}
  for i, a in ipairs(cmd) do spec[i] = a end
  local ok, t = pcall(perfsh.spawn, spec)
  if not ok then fail.raise(("perfsh check: %s"):format(cli.reason(t))) end
  local rs = {}
  for i, a in ipairs(arms) do
    if optional then
      local rok, r = pcall(t.region, t, a.spec)
      rs[i] = rok and r or nil
    else
      rs[i] = cli.arm("check", t, a.label, a.spec)
    end
  end
  local status = t:run()
  if not status and cli.stopped() then
    t:close()
    cli.check_stopped("check")
  end
  local out = {catcher = t.catcher}
  for i, a in pairs(rs) do
    local v = {hits = a:stats().hits, typ = {}}
    for _, n in ipairs(names) do v.typ[n] = M.typical(a:series(n), n) end
    out[arms[i].label] = v
  end
  t:close()
  if not status or not status.exited or status.code ~= 0 then
    local how = status and (status.signal or ("exit " .. tostring(status.code))) or "stopped"
    -- a floor run's empty hits are not worth a failed program: its region gets no floor
    if optional then return {failed = ("its floor runs ended with %s"):format(how)} end
    fail.raise(("perfsh check: %s failed (%s); measuring needs a run that succeeds"):format(table.concat(cmd, " "),
      how))
  end
  return out
end

-- The arms of the two floor runs of every region with sites.
local function floor_arms(plans, regions)
  local a, b = {}, {}
  for _, r in ipairs(regions) do
    local s = plans[r]
    if s then
      if s.next then a[#a + 1] = {label = r .. "\0entry", spec = {addr = s.entry, to = s.next}} end
      for k, t in ipairs(s.tails) do
        a[#a + 1] = {label = r .. "\0tail" .. k, spec = {addr = t.at, to = t.ret}}
        b[#b + 1] = {label = r .. "\0ret" .. k, spec = {addr = t.at}}
      end
    end
  end
  return a, b
end

-- The floor of region @r (sites @s) for @name from floor runs @fa and @fb, and how it was taken.
local function floor_of(s, fa, fb, r, name)
  local entry = s.next and fa[r .. "\0entry"]
  entry = entry and entry.hits > 0 and entry.typ[name]
  local best, most = nil, 0
  for k in ipairs(s.tails) do
    local rng, ret = fa[r .. "\0tail" .. k], fb and fb[r .. "\0ret" .. k]
    if rng and ret and rng.hits > most and ret.hits > 0 then best, most = k, rng.hits end
  end
  if best and entry then
    return fb[r .. "\0ret" .. best].typ[name] + entry - fa[r .. "\0tail" .. best].typ[name], "entry and return"
  elseif best then
    return fb[r .. "\0ret" .. best].typ[name], "return only"
  end
  return entry or nil, entry and "entry only" or nil
end

-- Run @fn with perfsh (and what it starts) on CPU @cpu (the baseline's: CPUs of one machine
-- differ), else the one it is on now; returns what fn returns and the CPU (nil where the kernel
-- would not pin it).
local function pinned(fn, cpu)
  local old = cpu and core.affinity({cpu})
  if not old then
    cpu = core.current_cpu()
    old = cpu and core.affinity({cpu})
  end
  if not old then cpu = nil end
  local ok, res = pcall(fn)
  if old then core.affinity(old) end
  if not ok then error(res, 0) end
  return res, cpu
end

-- Regions with fewer hits a run than this get no floor: their hits are the first of each probe
-- in the process, which pay what the catcher does once (the uprobe catcher maps its page of
-- out-of-line steps at the first), and the floor runs' single empty hits would not pay it alike.
M.FLOOR_HITS = 20

-- The runs: each measured run of @arms, then (for the regions @plans has sites of, and with
-- M.FLOOR_HITS hits in the first run) its two floor runs. Returns the rounds {m, fa, fb}, the
-- catcher, the CPU, and why[r] for the regions that got no floor that way.
local function rounds_of(cmd, regions, plans, events, names, runs, backend, on_cpu)
  local arms, why = {}, {}
  for i, r in ipairs(regions) do arms[i] = {label = r, spec = cli.region_spec(r, "check")} end
  local rounds, catcher, fa_arms, fb_arms = {}, nil, nil, nil
  local _, cpu = pinned(function()
    for i = 1, runs do
      local m = hit_run(cmd, arms, events, names, backend)
      for _, r in ipairs(regions) do
        if m[r].hits == 0 then
          fail.raise(("perfsh check: region '%s' has no hits in run %d; measure a function %s calls"):format(r, i,
            table.concat(cmd, " ")))
        end
        if i == 1 and plans[r] and m[r].hits < M.FLOOR_HITS then
          plans[r], why[r] = nil, ("%d hit%s a run, fewer than %d"):format(m[r].hits, m[r].hits == 1 and "" or "s",
            M.FLOOR_HITS)
        end
      end
      catcher = catcher or m.catcher
      if not fa_arms then fa_arms, fb_arms = floor_arms(plans, regions) end
      local round = {m = m, fa = #fa_arms > 0 and hit_run(cmd, fa_arms, events, names, backend, true) or {},
        fb = #fb_arms > 0 and hit_run(cmd, fb_arms, events, names, backend, true) or nil}
      why.floor = why.floor or round.fa.failed or round.fb and round.fb.failed
      rounds[i] = round
    end
  end, on_cpu)
  return rounds, catcher, cpu, why
end

-- The figures of region @r, event @n over @rounds: {median, runs = own cost a hit per run, hit =
-- the run's figure, floor = its floor}, and how the floor was taken (nil: none). Counts keep
-- what was counted; a run whose floor runs caught no empty hit takes the other runs' floor.
local function figures(rounds, plan, r, n)
  local hit, floor, own, how = {}, {}, {}, nil
  for i, round in ipairs(rounds) do
    hit[i] = round.m[r].typ[n]
    if plan and M.is_time(n) then
      local f, h = floor_of(plan, round.fa, round.fb, r, n)
      floor[i], how = f, how or h
    end
  end
  local present = {}
  for i = 1, #hit do present[#present + 1] = floor[i] end
  local typical = #present > 0 and M.median(present) or 0
  for i = 1, #hit do
    floor[i] = floor[i] or typical
    own[i] = hit[i] - floor[i]
  end
  return {median = M.median(own), runs = own, hit = hit, floor = floor}, how
end

--- Measure @regions of @cmd (program file @path) @runs times with the counters engine, each run
-- followed by its floor runs. Returns {region = {hits, floor = how, events = {name = {median,
-- runs = own cost a hit per run, hit = the run's figure, floor = its floor}}}}, the names
-- (@events and time_ns), the catcher and the CPU the runs were pinned to (@cpu, or the one perfsh
-- is on).
function M.measure(cmd, path, regions, events, runs, backend, cpu)
  local names = {table.unpack(events)}
  names[#names + 1] = "time_ns"
  local plans, why = {}, {}
  for _, r in ipairs(regions) do plans[r], why[r] = floor_sites(path, r) end
  local rounds, catcher, few
  rounds, catcher, cpu, few = rounds_of(cmd, regions, plans, events, names, runs, backend, cpu)
  local out = {}
  for _, r in ipairs(regions) do
    local hits, evs, how = {}, {}, nil
    for i, round in ipairs(rounds) do hits[i] = round.m[r].hits end
    for _, n in ipairs(names) do
      local h
      evs[n], h = figures(rounds, plans[r], r, n)
      how = how or h
    end
    out[r] = {hits = M.median(hits), events = evs,
      floor = how or ("none: " .. (few[r] or why[r] or few.floor or "no empty hit was caught"))}
  end
  return out, names, catcher, cpu
end

return M
