--- perfsh.tracee: a traced program, its regions and their hits.
--   local t <close> = perfsh.spawn{"./bench", "arg", events = {"instructions", "cycles"}}
--   local r = t:region{func = "sum"}
--   t:run()
--   print(r:stats().instructions.mean)
local core = require "perfsh.core"

local tracee = {}

local Tracee = {}
Tracee.__index = Tracee
Tracee.__name = "perfsh.tracee"

local Region = require "perfsh.region"
local snapfile = require "perfsh.snapfile"
local defaults = require "perfsh.defaults"
local outfile = require "perfsh.outfile"

local function fail(msg, level)
  error(msg, (level or 1) + 1)
end

-- events = {...} and groups = {{...}, {...}}: one flat list and the size of each group.
-- Neither given: the events perfsh stat counts by default (events = {} counts none).
local function flatten(spec)
  if spec.events == nil and (spec.groups == nil or #spec.groups == 0) then
    return defaults.events("region"), nil
  end
  local flat, sizes = {}, {}
  if spec.events and #spec.events > 0 then
    for _, e in ipairs(spec.events) do flat[#flat + 1] = e end
    sizes[1] = #spec.events
  end
  for _, g in ipairs(spec.groups or {}) do
    for _, e in ipairs(g) do flat[#flat + 1] = e end
    sizes[#sizes + 1] = #g
  end
  return flat, #sizes > 1 and sizes or nil
end

local function wrap(ud, argv)
  return setmetatable({ud = ud, argv = argv, regions = {}, by_id = {}, args_by_id = {}, fed = 0},
    Tracee)
end

-- The catcher that backend names (nil: defaults.backend(), $PERFSH_BACKEND or "auto"), and
-- whether auto chose it: "auto" for a program perfsh starts (@spawning) takes "inproc" where the
-- agent can be preloaded (core.inproc_available), @sizes is nil (one group) and each of @events
-- can be counted as the agent counts it, silently (a region it refuses before the first run
-- moves the program to the next catcher: fall_back);
-- else "uprobe" where the uprobe PMU opens and every one of @events, in groups of @sizes (nil:
-- one group), can be read at a probe (core.uprobe_check, before the program starts), else
-- "ptrace" with a one-line note saying why; "uprobe" with an event it cannot read is refused in
-- one line.
local function catcher(backend, fname, events, sizes, spawning)
  if backend == nil then
    local ok, b = pcall(defaults.backend)
    if not ok then fail(("bad argument #1 to '%s' (%s)"):format(fname, b), 3) end
    backend = b
  end
  if backend == "uprobe" and core.uprobe_available() then
    local ok, why = core.uprobe_check(events, sizes)
    if not ok then fail(why .. ": use --backend ptrace or drop it", 3) end
  end
  if backend == "ptrace" or backend == "uprobe" or backend == "marker" or backend == "inproc" then return backend end
  if backend ~= "auto" then
    fail(("bad argument #1 to '%s' (backend '%s'; give auto, uprobe, ptrace, marker or inproc)"):format(fname,
      tostring(backend)), 3)
  end
  -- the agent reads one group, user-only, as a probe would: what the uprobe catcher cannot read
  -- (e.g. an msr event), it does not take either
  if spawning and not sizes and core.inproc_available() and core.uprobe_check(events) then
    return "inproc", nil, true
  end
  local ok, why = core.uprobe_available()
  if not ok then
    return "ptrace", ("backend auto: ptrace, as the uprobe catcher cannot work here (%s)"):format(why), true
  end
  ok, why = core.uprobe_check(events, sizes)
  if ok then return "uprobe", nil, true end
  return "ptrace", ("backend auto: ptrace, as %s"):format(why), true
end

-- Set the uprobe catcher's ring size on session ud (nil: the default); a bad one ends ud.
local function ring(ud, pages)
  if pages == nil then return end
  local ok, why = ud:uprobe_ring(math.tointeger(pages) or 0)
  if not ok then
    ud:close()
    fail(why, 3)
  end
end

-- Start @argv (spec's) under catcher @how on tracee @t (a new one where nil): its session
-- t.ud, with spec's follow_fork, ring_pages (where the uprobe catcher takes them: @auto only
-- for it) and spill (the file reserved once, at the first start).
local function start(t, spec, argv, events, sizes, how, auto)
  local ud, msg = core.spawn(argv, events, {stdin = spec.stdin, stdout = spec.stdout, stderr = spec.stderr,
    group_sizes = sizes, backend = how})
  if not ud then fail(msg, 3) end
  if spec.follow_fork then ud:follow_fork(true) end
  if not auto or how == "uprobe" then ring(ud, spec.ring_pages) end
  t = t or wrap(ud, argv)
  t.ud = ud
  if spec.spill then
    -- written to a temporary file beside it, renamed once complete (perfsh.outfile)
    local out, why = t.spill_out, nil
    if not out then out, why = outfile.reserve(spec.spill) end
    local ok = out ~= nil
    if ok then ok, why = ud:spill(out.tmp or out.path) end
    if not ok then
      if out then out:abort() end
      ud:close()
      fail(why, 3)
    end
    t.spill, t.spill_out, t.spill_read = spec.spill, out, out.tmp or out.path
  end
  return t
end

--- perfsh.spawn{"cmd", args..., events = {...}, groups = {{...}, ...}, stdout = FILE,
-- stderr = FILE, stdin = FILE, follow_fork = true, spill = "run.psnap"}: start a program
-- traced, stopped before it runs any code of its own. events form one group; each list in
-- groups another; without either, the events perfsh stat counts (perfsh.default_events()).
-- With spill, records go to the file as the ring fills (memory stays bounded) and are read
-- back from it; the file is written beside it under a temporary name and renamed when the
-- spill is complete (the program's end, or t:finish_spill()): t:close() before drops it.
-- Forked children are released (their breakpoints removed) unless follow_fork is set.
-- backend = "auto" (default: inproc where the agent is built and the events are one group read
-- in user space, a region it refuses before the first run starting the program again under
-- the next; else uprobe where it can work, else ptrace; t.note says why), "uprobe"
-- (the kernel samples the counters at each entry and return: the target never stops for a hit;
-- root or CAP_PERFMON), "ptrace" (breakpoints: the target stops at each hit), or "marker"
-- (the program's own marker library measures its markers, perfsh drains the records while it
-- runs: t:marker regions only, see t:markers), or "inproc" (an agent preloaded into the program
-- patches the entries of its functions and the points of its line ranges, armed before the first
-- run, and measures them as the marker library does: no trap; functions of the program and the
-- libraries it links, line ranges of its own file; see t:markers).
-- t.catcher is the one used. ring_pages = N (a power of two, default 256): the uprobe catcher's
-- ring per thread (ignored where auto takes ptrace); records a full ring drops are counted in
-- t:info().lost.
function tracee.spawn(spec)
  if type(spec) ~= "table" or type(spec[1]) ~= "string" then
    fail("bad argument #1 to 'spawn' (table {command, args..., events = {...}} expected)", 2)
  end
  local argv = {}
  for i, a in ipairs(spec) do argv[i] = tostring(a) end
  local events, sizes = flatten(spec)
  for i, name in ipairs(events) do
    local ok, why = core.resolve(tostring(name))
    if not ok then fail(("bad argument #1 to 'spawn' (event #%d: %s)"):format(i, why), 2) end
  end
  -- the agent does not follow forked children: auto takes it only without follow_fork
  local how, note, auto = catcher(spec.backend, "spawn", events, sizes, not spec.follow_fork)
  if how == "inproc" and spec.follow_fork then
    fail("bad argument #1 to 'spawn' (backend inproc does not follow forked children yet; use backend uprobe)", 2)
  end
  local t = start(nil, spec, argv, events, sizes, how, auto)
  t.catcher, t.note = how, note
  if auto and how == "inproc" then t.auto = {spec = spec, events = events, sizes = sizes, armed = {}} end
  return t
end

--- perfsh.attach(pid, {events = {...}, groups = ..., backend = ...}): trace a running process
-- (every thread); without events or groups, the events perfsh stat counts. backend as for
-- perfsh.spawn, but auto never takes inproc here (uprobe, else ptrace); with "uprobe", detaching is
-- closing the probes; with "inproc", the agent is loaded into the process at the first run (its
-- regions armed before), and it puts the original bytes back at t:detach() (or t:close()) or when
-- perfsh dies.
function tracee.attach(pid, opts)
  if math.type(pid) ~= "integer" then fail("bad argument #1 to 'attach' (process id expected)", 2) end
  local events, sizes = flatten(opts or {})
  local how, note, auto = catcher(opts and opts.backend, "attach", events, sizes, false)
  local ud, msg = core.attach(pid, events, {group_sizes = sizes, backend = how})
  if not ud then fail(msg, 2) end
  if opts and opts.follow_fork then ud:follow_fork(true) end
  if opts and (not auto or how == "uprobe") then ring(ud, opts.ring_pages) end
  local t = wrap(ud, {tostring(pid)})
  t.catcher, t.note = how, note
  t.attached = true
  return t
end

local function new_region(t, id)
  local r = Region.new(t, id)
  r.tracee = t
  t.regions[#t.regions + 1] = r
  t.by_id[id] = r
  return r
end

local policy

-- Arm region @spec (t:region's) on @self: the region, or nil, message, code (core.errors) where
-- the session cannot arm it; a bad @spec raises (level 3: the caller of t:region).
local function arm_on(self, spec)
  if type(spec) ~= "table" then fail("bad argument #1 to 'region' (table expected)", 3) end
  local ud = self.ud
  if spec.events then
    local ok, msg, code = ud:add_events(spec.events)
    if not ok then return nil, msg, code end
  end
  if spec.sample and self.catcher == "inproc" then
    -- the agent draws with the marker library's live policy, one for every region
    local smp = spec.sample
    if type(smp) ~= "table" or smp.window_ms or smp.period_ms or (smp.p == nil and smp.every == nil) then
      return nil, ("region '%s': --backend inproc samples with sample = {p = P} or {every = N}, not yet in time "
        .. "windows; use --backend uprobe"):format(tostring(spec.func or spec.range or spec.addr or "?")),
        core.errors.needs_uprobe
    end
    policy(self, {sample = smp.p, every = smp.every}, 4)
  end
  local every = spec.every_level and true or false
  local id, count, msg, code
  if spec.marker and self.catcher == "marker" then
    local _, why, wcode = self:marker_spec(spec.marker)
    if why then return nil, why, wcode end
    id, msg, code = ud:region_marker(spec.marker)
    count = 1
    if id and spec.sample then
      local smp = spec.sample
      if type(smp) ~= "table" or smp.window_ms or smp.period_ms or (smp.p == nil and smp.every == nil) then
        fail("bad argument #1 to 'region' (with the marker catcher, sample = {p = P} or {every = N}: the "
          .. "program draws for every marker alike)", 3)
      end
      policy(self, {sample = smp.p, every = smp.every}, 4)
    end
    if id then self.args_by_id[id] = spec.fields end
  elseif spec.marker then
    local pair, why, wcode = self:marker_spec(spec.marker)
    if not pair then return nil, why, wcode end
    id, msg, code = ud:region_sdt(pair, every, "marker:" .. spec.marker)
    count = 1
  elseif spec.sdt then
    local text, why, wcode = self:sdt_spec(spec.sdt)
    if not text then return nil, why, wcode end
    id, msg, code = ud:region_sdt(text, every)
    count = 1
  elseif spec.func then
    id, count, code = ud:region_func(spec.func, every, spec.inline == false)
    msg = count
    count = tonumber(count)
  elseif spec.range or (spec.from and spec.to) then
    local range = spec.range or (tostring(spec.from) .. "-" .. tostring(spec.to))
    id, msg, code = ud:region_range(range, every)
    count = 1
  elseif spec.addr then
    if spec.to then
      id, msg, code = ud:region_range(("0x%x-0x%x"):format(spec.addr, spec.to), every)
      count = 1
    else
      id, count, code = ud:region_func(("0x%x"):format(spec.addr), every, true)
      msg = count
    end
  else
    fail("bad argument #1 to 'region' (give func, from and to, range, or addr)", 3)
  end
  if not id then return nil, msg, code end
  if spec.args then
    if type(spec.args) ~= "table" then fail("bad argument #1 to 'region' (args = {names...})", 3) end
    local ok, why, wcode = ud:region_args(id, #spec.args)
    if not ok then return nil, why, wcode end
    self.args_by_id[id] = spec.args
  end
  if spec.sample and self.catcher ~= "marker" and self.catcher ~= "inproc" then
    if type(spec.sample) ~= "table" then fail("bad argument #1 to 'region' (sample = {p =, every =, ...})", 3) end
    local ok, why, wcode = ud:region_sample(id, spec.sample)
    if not ok then return nil, why, wcode end
  end
  local first = self.by_id[id] or new_region(self, id)
  for k = 1, (count or 1) - 1 do
    if not self.by_id[id + k] then new_region(self, id + k) end
  end
  if spec.events then first.events = spec.events end
  if spec.marker then first.name = "marker:" .. spec.marker end
  return first
end

-- What a region @spec names, for a note.
local function region_label(spec)
  if spec.marker then return "marker:" .. tostring(spec.marker) end
  local v = spec.func or spec.range or spec.sdt or (spec.from and spec.to and ("%s-%s"):format(spec.from, spec.to))
  if v then return tostring(v) end
  if math.type(spec.addr) == "integer" then return ("0x%x"):format(spec.addr) end
  return "?"
end

-- Auto took the in-process catcher and it refuses region @spec (core.errors.needs_uprobe)
-- before the program has run a single instruction of its own: the program is started again,
-- held the same way, under the catcher auto takes after it (uprobe, else ptrace), the regions
-- armed so far armed again (the same ids: the session numbers them, not the catcher), then
-- @spec. t.catcher and t.note say so; t.fell_back is the note for a recipe to print once.
local function fall_back(self, spec)
  local a = self.auto
  self.auto = nil
  local how, note = catcher("auto", "region", a.events, a.sizes, false)
  self.ud:close()
  start(self, a.spec, self.argv, a.events, a.sizes, how, true)
  local why = ("the in-process catcher cannot measure region '%s' yet"):format(region_label(spec))
  self.catcher = how
  self.note = note and ("%s; %s"):format(note, why) or ("backend auto: %s, as %s"):format(how, why)
  self.fell_back = self.note
  for _, old in ipairs(a.armed) do
    local r, msg, code = arm_on(self, old.spec)
    if not r then return nil, msg, code end
    if r ~= old.region then
      local what = region_label(old.spec)
      return nil, ("region '%s': armed again under the %s catcher as another region"):format(what, how),
        core.errors.usage
    end
  end
  return arm_on(self, spec)
end

-- arm_on, and where auto took the in-process catcher: the regions it armed kept (for a fall
-- back), and one it refuses before the first run (core.errors.needs_uprobe) armed elsewhere.
local function arm(self, spec)
  local r, msg, code = arm_on(self, spec)
  local a = self.auto
  if r and a then a.armed[#a.armed + 1] = {spec = spec, region = r} end
  if r or not a or code ~= core.errors.needs_uprobe or self.ran then return r, msg, code end
  return fall_back(self, spec)
end

--- t:region{func = "sum"} | {from = "bench.c:19", to = "bench.c:24"} | {range = "bench.c:19-24"}
-- | {addr = 0x401136} | {addr = 0x401136, to = 0x401150} | {sdt = "sdt:PROVIDER:NAME"} (the
-- uprobe catcher only: see Tracee:sdt_region) | {marker = "NAME"} (a marker of perfsh/marker.h, the
-- same: see Tracee:marker). Options: every_level = true (count
-- every level of a recursion), inline = false (skip inlined copies), events = {...} (added to
-- the group of every thread; only before the first run), sample = {p = 0.01} | {every = 100}
-- | {window_ms = 5, period_ms = 100} (record only some hits; see README). Returns the region;
-- inlined copies of a function are regions too (t.regions lists them all).
function Tracee:region(spec)
  local r, msg = arm(self, spec)
  if not r then fail(msg, 2) end
  return r
end

--- t:try_region(spec): t:region that returns nil, message, code instead of raising where the
-- region cannot be armed (a bad spec still raises). code is one of core.errors: needs_ptrace (the
-- uprobe catcher cannot catch it, the ptrace catcher can), usage, notfound, or an errno.
function Tracee:try_region(spec)
  return arm(self, spec)
end

--- t:marker("NAME" [, opts]) is the region of a marker of the marker library (perfsh/marker.h).
-- With the marker catcher (spawn{..., backend = "marker"}) the program measures it itself and
-- its records carry the marker's four fields (opts.fields = {"nfds", "listen"} names them);
-- sample = {p =} or {every =} sets the program's draw for all its markers (see t:markers).
-- With the uprobe catcher it is the SDT pair sdt:perfsh:NAME_begin,sdt:perfsh:NAME_end, armed
-- from outside, the program's markers themselves left off. opts as t:region's otherwise.
function Tracee:marker(name, opts)
  if type(name) ~= "string" then fail("bad argument #1 to 'marker' (a marker name expected)", 2) end
  local spec = {}
  for k, v in pairs(opts or {}) do spec[k] = v end
  spec.marker = name
  local r, msg = arm(self, spec)
  if not r then fail(msg, 2) end
  return r
end

-- The body of t:markers, its errors raised at @level.
policy = function(self, opts, level)
  if self.catcher ~= "marker" and self.catcher ~= "inproc" then
    fail("t:markers is for a program started with backend = \"marker\" or \"inproc\"", level)
  end
  if opts == nil then return self.ud:marker_status() end
  if type(opts) ~= "table" then fail("bad argument #1 to 'markers' (table expected)", level) end
  if opts.sample ~= nil and opts.every ~= nil then
    fail("bad argument #1 to 'markers' (give sample or every, not both)", level)
  end
  local pol = {on = opts.on, p = opts.sample, every = opts.every}
  if opts.slow_us ~= nil then
    if type(opts.slow_us) ~= "number" or opts.slow_us < 0 then
      fail("bad argument #1 to 'markers' (slow_us is microseconds >= 0)", level)
    end
    pol.slow_ns = math.floor(opts.slow_us * 1000)
  end
  local ok, why, code = self.ud:marker_policy(pol)
  if not ok and code == core.errors.usage then fail(("bad argument #1 to 'markers' (%s)"):format(why), level) end
  if not ok then fail(why, level) end
  return self.ud:marker_status()
end

--- t:markers() -> what the program's marker library says: state ("waiting" until it has
-- started, "running", or "off" with why), read ("read" or "rdpmc") and read_ns, threads, lost
-- (records its full rings dropped), unmatched, fast, and the policy: on, p, every, slow_ns.
-- t:markers{on = false | true, sample = P, every = N, slow_us = X}: change the policy, which
-- the program reads at its next hit (between runs, or from on_slow or until callbacks while it
-- runs). sample and every exclude each other; slow_us = 0 keeps every hit. Marker catcher only.
-- Under auto, a policy set here keeps the in-process catcher (no fall back after it).
function Tracee:markers(opts)
  if opts ~= nil then self.auto = nil end
  return policy(self, opts, 3)
end

-- The marker names of an executable: each NAME of a pair perfsh:NAME_begin, perfsh:NAME_end.
local function marker_names(probes)
  local have, names = {}, {}
  for _, p in ipairs(probes) do
    if p.provider == "perfsh" then have[p.name] = true end
  end
  for n in pairs(have) do
    local base = n:match("^(.+)_begin$")
    if base and have[base .. "_end"] then names[#names + 1] = base end
  end
  table.sort(names)
  return names
end

-- {marker = "NAME"}: the SDT pair of marker NAME, checked against the target's executable; nil,
-- one line naming the markers it has when it lacks NAME, code.
function Tracee:marker_spec(name)
  local exe = ("/proc/%d/exe"):format(self.ud:info().pid)
  local label = self.attached and exe or self.argv[1]
  local probes, why, code = core.sdt(exe)
  if not probes then return nil, ("region 'marker:%s': %s"):format(name, why), code end
  local names = marker_names(probes)
  for _, n in ipairs(names) do
    if n == name then return ("sdt:perfsh:%s_begin,sdt:perfsh:%s_end"):format(name, name) end
  end
  if #names == 0 then
    return nil, ("region 'marker:%s': %s has no markers (it was built without perfsh/marker.h, or with "
      .. "-DPERFSH_MARKER_OFF)"):format(name, label), core.errors.notfound
  end
  return nil, ("region 'marker:%s': no marker '%s' in %s; its markers: %s"):format(name, name, label,
    table.concat(names, ", ")), core.errors.notfound
end

-- {sdt = "sdt:PROVIDER:NAME"} (a point event: a record per hit, its start and end the values
-- there) or {sdt = "PROVIDER:START,sdt:PROVIDER:END"} (a pair, as a line range): the probes are
-- looked up in the target's executable (a missing one with "did you mean", nothing armed) and
-- armed by the uprobe catcher only. Returns the spec with its "sdt:", or nil, why, code.
function Tracee:sdt_spec(text)
  text = tostring(text)
  if not text:match("^sdt:") then text = "sdt:" .. text end
  local exe = ("/proc/%d/exe"):format(self.ud:info().pid)
  local ok, why, code = core.sdt_check(exe, text, self.attached and exe or self.argv[1])
  if not ok then return nil, ("region '%s': %s"):format(text, why), code end
  return text
end

--- t:run() runs until the program ends and returns its status ({exited, code, signo, signal}).
-- t:run{hits = N} / {seconds = S} / {until = function(t) ... end} pause earlier and return nil, "paused".
-- hits = N under the uprobe catcher keeps exactly N: the records the kernel wrote past the Nth
-- wait in its rings for the next run, which takes them first.
-- Hand the records written since the last call to the regions that log slow hits.
function Tracee:feed_loggers()
  local n = self.ud:nrecords()
  for i = self.fed + 1, n do
    local rec = self:record(i)
    local r = rec and self.by_id[rec.region]
    if r and r.loggers then r:log_slow(rec) end
  end
  self.fed = n
end

-- Whether a region logs slow hits (r:on_slow).
local function logging(self)
  for _, r in ipairs(self.regions) do
    if r.loggers then return true end
  end
  return false
end

-- Run in chunks so that the loggers see hits while the program runs.
local CHUNK = 256
local function run_feeding(self, max_hits, deadline)
  local done = 0
  while true do
    local chunk = CHUNK
    if max_hits > 0 then chunk = math.min(chunk, max_hits - done) end
    local before = self.ud:nrecords()
    local how, msg = self.ud:run(chunk, deadline, true) -- the program goes on between chunks
    if not how then return nil, msg end
    if how == "interrupted" then how = "paused" chunk = math.huge end
    if self.spill then self:reload_spill(false) end
    self:feed_loggers()
    local got = self.ud:nrecords() - before
    done = done + got
    if how == "exited" then return how end
    if max_hits > 0 and done >= max_hits then return "paused" end
    if deadline > 0 and core.now() >= deadline then return "paused" end
    if got < chunk then return "paused" end -- interrupted
  end
end

function Tracee:run(opts)
  opts = opts or {}
  self.ran, self.auto = true, nil
  local deadline = opts.seconds and core.now() + math.floor(opts.seconds * 1e9) or 0
  local how, msg
  if logging(self) and not opts["until"] then
    how, msg = run_feeding(self, opts.hits or 0, deadline)
  elseif opts["until"] then
    repeat
      how, msg = self.ud:run(1, deadline, true) -- the program goes on while until() looks
    until how ~= "paused" or opts["until"](self) or (deadline > 0 and core.now() >= deadline)
    if how == "interrupted" then how = "paused" end
  else
    how, msg = self.ud:run(opts.hits or 0, deadline)
    if how == "interrupted" then how = "paused" end -- a signal (Ctrl-C) pauses too
  end
  if how == "paused" then -- a pause holds the program, whichever way the run went
    local ok, why = self.ud:hold()
    if not ok then how, msg = nil, why end
  end
  if not how then fail(msg, 2) end
  local info = self.ud:info()
  if info.notice then io.stderr:write("perfsh: ", (info.notice:gsub("\n", "\nperfsh: ")), "\n") end
  if self.spill and not self.spill_done then
    self:reload_spill(how == "exited")
    self.spill_done = how == "exited"
  end
  if how == "paused" then return nil, "paused" end
  for _, r in ipairs(self.regions) do
    if r.loggers then r:finish_slow() end
  end
  return self.ud:status()
end

--- The program's end ({exited, code, signo, signal}), or nil while it runs.
function Tracee:status() return self.ud:status() end

--- Counts of the session: pid, stops, records, dropped (records perfsh could not keep), events,
-- catcher ("ptrace", "uprobe" or "marker"), lost (records the uprobe or marker catcher's rings dropped).
function Tracee:info() return self.ud:info() end

--- The records the run lost so far: {catcher, lost, dropped, total} (see t:info()); r:stats().lost
-- is total, and the file t:save or spill writes keeps them.
function Tracee:losses()
  local info = self.ud:info()
  return {catcher = info.catcher, lost = info.lost, dropped = info.dropped, total = info.lost + info.dropped}
end

--- Detach: breakpoints and return addresses restored; the program goes on untraced.
function Tracee:detach()
  local ok, msg = self.ud:detach()
  if not ok then fail(msg, 2) end
  return true
end

function Tracee:close()
  for _, r in ipairs(self.regions) do
    if r.loggers then r:finish_slow() end -- slow-hit log files put in place
  end
  if self.file then self.file:close() self.file = nil end
  self.ud:close()
  -- a spill never finished (t:finish_spill, the program's end) leaves the old file as it was
  if self.spill_out then self.spill_out:abort() end
end
Tracee.__close = Tracee.close
function Tracee:__tostring() return tostring(self.ud) end

--- Iterate over every record of the session (all regions), in the order they ended.
function Tracee:hits()
  local i = 0
  return function()
    i = i + 1
    return self:record(i)
  end
end

--- What a region is, for perfsh.region: the C side's info plus the argument names.
function Tracee:region_meta(id)
  local info = self.ud:region_info(id)
  info.args = self.args_by_id[id]
  if info.kind == "marker" or self.catcher == "inproc" then
    local st = self.ud:marker_status()
    info.sampled = st and (st.p < 1 or st.every > 1) or nil
    info.entry_counter = info.kind == "marker" and "marker" or "agent"
  end
  return info
end

function Tracee:events() return self.ud:info().events end

-- Records come from memory, or from the spill file (reloaded after each run).
function Tracee:record(i)
  if self.spill then return self.file and self.file.ud:record(i) end
  return self.ud:record(i)
end
function Tracee:stats_of(id, by)
  if self.spill then
    if self.file then return self.file.ud:stats(id, by) end
    return self.ud:stats(id, by) -- nothing spilled yet: empty statistics
  end
  return self.ud:stats(id, by)
end
function Tracee:series_of(id, k)
  if self.spill then return self.file and self.file.ud:series(id, k) or {} end
  return self.ud:series(id, k)
end

-- After a run: make what was spilled readable (complete once the program has ended).
function Tracee:reload_spill(final)
  if self.file then self.file:close() self.file = nil end
  local ok, why
  if final then
    for k, v in pairs(self:region_metadata()) do self.ud:spill_meta(k, v) end
    ok, why = self.ud:spill_close()
  else
    ok, why = self.ud:spill_flush()
  end
  if not ok then fail(why, 3) end
  if final and self.spill_out then
    local out = self.spill_out
    self.spill_out = nil
    ok, why = out:commit()
    if not ok then fail(why, 3) end
    self.spill_read = out.path
  end
  -- mid-run, a file without records has nothing to read yet (a reader refuses it: not closed)
  if final or self.ud:nrecords() > 0 then self.file = snapfile.load(self.spill_read, {quiet = true}) end
end

--- After the last run of a program that is still running (paused, interrupted): write what
-- was spilled completely, metadata included, so that the file reads like one of a full run.
function Tracee:finish_spill()
  if self.spill and not self.spill_done then
    self.spill_done = true
    self:reload_spill(true)
  end
end

--- t:save(path): write every record so far to a .psnap file (perfsh.load and perfsh report
-- read it). Returns the number of records.
function Tracee:region_metadata()
  local meta = {command = table.concat(self.argv, " "), pid = tostring(self.ud:info().pid)}
  for _, r in ipairs(self.regions) do
    local info = self:region_meta(r.id) -- kind.ID, entries.ID, sampled.ID: the C side writes them
    meta["counter." .. r.id] = info.entry_counter
    if info.args then meta["args." .. r.id] = table.concat(info.args, ",") end
  end
  return meta
end

function Tracee:save(path)
  if self.spill then fail("the records are in the spill file " .. self.spill .. " already", 2) end
  local n, msg = self.ud:save(path, self:region_metadata())
  if not n then fail(msg, 2) end
  return n
end

tracee.Tracee, tracee.Region = Tracee, Region
return tracee
