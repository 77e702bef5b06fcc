--- perfsh: hardware counters for exactly the code you care about.
-- local perfsh = require "perfsh"
local core = require "perfsh.core"

local perfsh = {version = core.version, core = core}

--- perfsh.default_events([use]): the events counted when none are given, hardware ones where
-- the machine has a PMU, software ones elsewhere (perfsh.defaults defines them). use: "region"
-- (default: perfsh stat, perfsh.spawn, perfsh.attach), "command" (perfsh count, perfsh.run),
-- "tail" or "attribute".
perfsh.default_events = require("perfsh.defaults").events

--- Open a group: perfsh.group{"instructions", "cycles", pid = 0, cpu = -1, inherit = false}.
-- Returns a perfsh.group (see README.md). Raises with a one-line reason when it cannot open.
function perfsh.group(spec)
  if type(spec) == "string" then spec = {spec} end
  if type(spec) ~= "table" then
    error(("bad argument #1 to 'group' (table of event names expected, got %s)"):format(type(spec)), 2)
  end
  for i, name in ipairs(spec) do
    if type(name) ~= "string" then
      error(("bad argument #1 to 'group' (event #%d is a %s, not a name)"):format(i, type(name)), 2)
    end
    local ok, why = core.resolve(name)
    if not ok then error(("bad argument #1 to 'group' (%s)"):format(why), 2) end
  end
  local g, msg = core.group(spec, spec)
  if not g then error(msg, 2) end
  return g
end

--- perfsh.event_notes(events): one line for each event that opens only as the kernel allows
-- ("msr/tsc/: counting kernel and user (the msr PMU refuses user-only counting)"), found by
-- opening it alone on this thread.
function perfsh.event_notes(events)
  local notes = {}
  for _, e in ipairs(events) do
    local ok, g = pcall(core.group, {e})
    if ok and g then
      for _, n in ipairs(g:notes()) do notes[#notes + 1] = n end
      g:close()
    end
  end
  return notes
end

local kinds = {hw = true, sw = true, cache = true, pmu = true, tracepoint = true, all = true}

--- perfsh.events([filter]): events known here, as {name, desc, kind, usable}.
-- filter: a kind (hw, sw, cache, pmu, tracepoint, all), a substring of the name, or {kind=, match=}.
function perfsh.events(filter)
  local kind, match = "all", nil
  if type(filter) == "table" then
    kind, match = filter.kind or "all", filter.match
  elseif kinds[filter] then
    kind = filter
  elseif filter ~= nil then
    match = tostring(filter)
  end
  if not kinds[kind] then
    error(("bad argument #1 to 'events' (kind '%s'; use hw, sw, cache, pmu, tracepoint or all)"):format(kind), 2)
  end
  return core.events(kind, match)
end

local kind_titles = {
  hw = "hardware events", sw = "software events", cache = "hardware cache events",
  pmu = "PMU events (sysfs and libpfm4 native names)",
  tracepoint = "tracepoints (SUBSYS:NAME; counting needs root or CAP_PERFMON)",
}

-- What an empty section says.
local function none_text(k)
  if (k == "hw" or k == "cache") and not core.pmu_present() then
    return "  (none: this machine has no hardware PMU that the kernel drives, e.g. a VM without"
      .. " PMU passthrough; software events work, raw codes need a PMU)"
  elseif k == "tracepoint" and not core.tracefs() then
    return "  (none: tracefs is not mounted or not readable; as root: mount -t tracefs nodev /sys/kernel/tracing)"
  end
  return "  (none usable here)"
end

--- Print the events that open on this machine (perfsh --list [kind | filter]), or the preset
-- event sets (perfsh --list presets). Returns 0 or 2.
-- A word that is not a kind filters every kind by substring: perfsh --list syscalls.
function perfsh.print_events(what)
  if what == "presets" then return require("perfsh.presets").print() end
  local kind, match = what or "all", nil
  if not kinds[kind] then kind, match = "all", what end
  local order = kind == "all" and {"hw", "sw", "cache", "pmu", "tracepoint"} or {kind}
  local any = false
  for _, k in ipairs(order) do
    local list, shown, refused = core.events(k, match), 0, {}
    if not match or #list > 0 then print(kind_titles[k] .. ":") end
    for _, e in ipairs(list) do
      if e.usable then
        print(("  %-32s %s"):format(e.name, e.desc))
        shown = shown + 1
      elseif k == "pmu" and e.name:find("/", 1, true) then
        refused[#refused + 1] = e.name
      end
    end
    any = any or shown > 0
    if #refused > 0 then
      print(("  (%d more in sysfs do not open on a task here, e.g. CPU-wide only: %s)")
        :format(#refused, table.concat(refused, ", ", 1, math.min(#refused, 4))))
    end
    if shown == 0 and not match then print(none_text(k)) end
  end
  if match and not any then
    io.stderr:write(("perfsh: no event here matches '%s' (perfsh --list shows them all)\n"):format(match))
    return 2
  end
  return 0
end

--- perfsh.sdt(path) -> the SDT probe sites (<sys/sdt.h>) of an ELF file, in note order:
-- {provider, name, addr, offset, semaphore, semaphore_offset, base, argstr, args = {{size, signed,
-- kind = "reg"|"mem"|"imm", text, reg, index, scale, sym, disp, value}, ...}} (args_error instead
-- of args where the argument string is not understood); nil, msg when the file cannot be read.
function perfsh.sdt(path)
  if type(path) ~= "string" then error("bad argument #1 to 'sdt' (path of an ELF file expected)", 2) end
  return core.sdt(path)
end

-- A command name without '/' that is no file here is looked up in PATH, as a shell would.
local function in_path(name)
  if name:find("/", 1, true) or io.open(name) then return name end
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    local f = io.open(dir .. "/" .. name)
    if f then
      f:close()
      return dir .. "/" .. name
    end
  end
  return name
end

--- Print the SDT probes of a binary (perfsh --list sdt BINARY), one line each. Returns 0 or 2.
function perfsh.print_sdt(path)
  if not path then
    io.stderr:write("perfsh: --list sdt needs a binary, e.g. perfsh --list sdt ./examples/sdt\n")
    return 2
  end
  path = in_path(path)
  local probes, why = core.sdt(path)
  if not probes then
    io.stderr:write("perfsh: ", why, "\n")
    return 2
  end
  if #probes == 0 then
    print(("%s has no SDT probes (no .note.stapsdt: it was built without <sys/sdt.h> probes)"):format(path))
    return 0
  end
  local width = 0
  for _, p in ipairs(probes) do width = math.max(width, #p.provider + 1 + #p.name) end
  for _, p in ipairs(probes) do
    local sema = p.semaphore ~= 0 and ("0x%x (offset 0x%x)"):format(p.semaphore, p.semaphore_offset) or "none"
    local args = p.args_error and (p.argstr .. " (not understood)") or (p.argstr ~= "" and p.argstr or "none")
    print(("%-" .. width .. "s  addr 0x%x  offset 0x%x  semaphore %s  args %s"):format(p.provider .. ":" .. p.name,
      p.addr, p.offset, sema, args))
  end
  return 0
end

--- List the recipes (perfsh recipes).
function perfsh.print_recipes()
  local host = package.loaded["perfsh.host"]
  local dir = host and host.scripts
  if not dir or dir == "" then
    io.stderr:write("perfsh: no recipe folder found beside the executable\n")
    return 1
  end
  local p = io.popen(("ls %q 2>/dev/null"):format(dir))
  local names = {}
  for f in p:lines() do
    local n = f:match("^(.-)%.lua$")
    if n then names[#names + 1] = n end
  end
  p:close()
  table.sort(names)
  local cli = require "perfsh.cli"
  for _, n in ipairs(names) do
    -- each recipe opens with "-- NAME: summary" and "-- usage: perfsh NAME ..." (cli.header)
    local h, why = cli.header(dir .. "/" .. n .. ".lua")
    print(("  %-12s %s"):format(n, h and h.summary or ("(no header: " .. tostring(why) .. ")")))
  end
  print("perfsh NAME --help shows a recipe's usage, options and an example")
  return 0
end

--- Count a whole command, like perf stat:
--   local r = perfsh.run{"./prog", "arg", events = {"instructions"}}
-- r has the counts by event name, raw, scaled, ratio, time_enabled, time_running, and
-- exited, code, signo, signal, wall_ns. Raises when the command cannot be started.
function perfsh.run(spec)
  if type(spec) ~= "table" or type(spec[1]) ~= "string" then
    error("bad argument #1 to 'run' (table {command, args..., events = {...}} expected)", 2)
  end
  local argv = {}
  for i, a in ipairs(spec) do argv[i] = tostring(a) end
  local r, msg = core.run(argv, spec.events or perfsh.default_events("command"))
  if not r then error(msg, 2) end
  return r
end

local tracee = require "perfsh.tracee"
perfsh.spawn = tracee.spawn
perfsh.attach = tracee.attach
perfsh.load = require("perfsh.snapfile").load
perfsh.attribute = require("perfsh.attribute").solve
local metrics = require "perfsh.metrics"
perfsh.metrics = metrics.formulas
perfsh.derive = metrics.derive
perfsh.interval = metrics.interval
perfsh.hist = core.hist
perfsh.stats = core.stats

--- The regression gate of perfsh check, from a script: measure regions over runs, write a
-- baseline or compare with one; returns the results (pass, rows per region and event) instead
-- of exiting: perfsh.check{"./prog", regions = {"work"}, engine = "callgrind", baseline = "b.json"}
function perfsh.check(spec)
  if type(spec) ~= "table" then
    error("bad argument #1 to 'check' (table {command..., regions = {...}} expected)", 2)
  end
  return require("perfsh.gate").check(spec)
end

perfsh.scale = core.scale
perfsh.now = core.now

return perfsh
