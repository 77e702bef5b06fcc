--- perfsh.cli: a small option parser for recipes, and the exit conventions they share.
local cli = {}

--- Parse argv against a spec.
-- spec = { {"-e", "--events", arg = true, repeatable = true, key = "events"}, {"--csv", key = "csv"}, ... }
-- Options stop at "--" or at the first word that is not an option; the rest is the command.
-- Returns opts, rest; raises "perfsh NAME: ..." for unknown options or missing values.
function cli.parse(name, spec, argv, usage)
  if usage then
    spec[#spec + 1] = {"-h", "--help", key = "help"}
  end
  local by_flag = {}
  for _, o in ipairs(spec) do
    for _, flag in ipairs(o) do by_flag[flag] = o end
  end
  local opts, rest, i = {}, {}, 1
  while i <= #argv do
    local a = argv[i]
    if a == "--" then
      i = i + 1
      break
    end
    local flag, inline = a:match("^(%-%-[%w-]+)=(.*)$")
    flag = flag or a
    local o = by_flag[flag]
    if not o then
      if a:sub(1, 1) == "-" and #a > 1 then
        error(("perfsh %s: unknown option '%s' (perfsh %s --help lists them)"):format(name, a, name), 0)
      end
      break
    end
    local value = true
    if o.arg then
      if inline then
        value = inline
      else
        i = i + 1
        value = argv[i]
        if value == nil then error(("perfsh %s: %s needs a value"):format(name, flag), 0) end
      end
    end
    if o.repeatable then
      opts[o.key] = opts[o.key] or {}
      table.insert(opts[o.key], value)
    else
      opts[o.key] = value
    end
    i = i + 1
  end
  for j = i, #argv do rest[#rest + 1] = argv[j] end
  if usage and opts.help then
    io.write(usage)
    os.exit(0)
  end
  return opts, rest
end

--- The reason in an error message, without the "file:line: " a Lua error puts first, nor the
-- "bad argument #N to 'f' (...)" wrapper of an API call a recipe made.
function cli.reason(err)
  local why = tostring(err):gsub("^[^\n]-:%d+: ", "")
  return why:match("^bad argument #%d+ to '[^']*' %((.*)%)$") or why
end

--- Every name must resolve, and come once; else "perfsh NAME: unknown event ...".
function cli.check_events(name, events)
  local core = require "perfsh.core"
  local seen = {}
  for _, e in ipairs(events) do
    local ok, why = core.resolve(e)
    if not ok then error(("perfsh %s: %s"):format(name, why), 0) end
    if seen[e] then error(("perfsh %s: event '%s' is given twice; name each event once"):format(name, e), 0) end
    seen[e] = true
  end
end

--- The value of a numeric option when ok(n) holds, else one line saying what it needs.
function cli.number(name, flag, value, what, ok)
  local n = tonumber(value)
  if not n or n ~= n or not ok(n) then
    error(("perfsh %s: %s needs %s, not '%s'"):format(name, flag, what, value), 0)
  end
  return n
end

--- Fail now, before anything runs, when @path cannot be written (a file of option @flag).
function cli.writable(name, flag, path)
  local existed = io.open(path, "r")
  if existed then existed:close() end
  local f, why = io.open(path, "a")
  if not f then
    error(("perfsh %s: %s: cannot write %s; give a file in a directory you can write"):format(name, flag,
      cli.reason(why)), 0)
  end
  f:close()
  if not existed then os.remove(path) end
end

--- A region named on a command line (parsed by core/regionspec.c): FILE:L1-L2, FILE:L1-FILE:L2
-- or 0xA-0xB is a line or address range, sdt:PROVIDER:NAME[,sdt:PROVIDER:NAME] SDT probes,
-- anything else a function (LIB:FUNC, 0xADDR).
-- A bad one ends the recipe with one line, e.g. for a single line FILE:N.
function cli.region_spec(r, name)
  local core = require "perfsh.core"
  local rs, why = core.region_spec(r)
  if not rs then error(("perfsh %s: %s"):format(name or "stat", why), 0) end
  if rs.kind == "line_range" or rs.kind == "addr_range" then return {range = r} end
  if rs.kind == "sdt" then return {sdt = r} end
  return {func = r}
end

--- Start the target of a recipe: spawn cmd, or attach to pid (a string from -p). spec holds
-- the other perfsh.spawn/attach options (events, groups, spill, follow_fork, ...).
function cli.start(name, cmd, pid, spec)
  local perfsh = require "perfsh"
  local ok, t = pcall(function()
    if pid then
      local n = math.tointeger(tonumber(pid))
      if not n then error(("-p needs a process id, not '%s'"):format(pid), 0) end
      return perfsh.attach(n, spec)
    end
    local s = {}
    for k, v in pairs(spec) do s[k] = v end
    for i, a in ipairs(cmd) do s[i] = a end
    return perfsh.spawn(s)
  end)
  if not ok then error(("perfsh %s: %s"):format(name, cli.reason(t)), 0) end
  return t
end

--- Arm a region on tracee t; a bad name ends the recipe with one line, nothing started.
function cli.arm(name, t, label, spec)
  local ok, r = pcall(t.region, t, spec)
  if not ok then
    t:close()
    local why = cli.reason(r):gsub("^region '[^']*': ", "")
    error(("perfsh %s: region '%s': %s"):format(name, label, why), 0)
  end
  return r
end

--- Split "a,b,c" lists (repeatable options give several) into one flat array.
function cli.split(values)
  local out = {}
  for _, v in ipairs(values or {}) do
    for item in v:gmatch("[^,]+") do out[#out + 1] = item end
  end
  return out
end

--- The exit status a target's end maps to: its code, or 128 + the signal.
function cli.status(exited, code, signo)
  if exited then return code end
  return 128 + (signo or 0)
end

--- A target killed by a signal: one stderr line naming the signal and the regions it was in
-- (the hits each thread never returned from: its last records, closed as unwound at its end).
function cli.report_death(name, t, status)
  local trailing, names, inside = {}, {}, {}
  for _, r in ipairs(t.regions) do names[r.id] = r.name end
  for h in t:hits() do
    if not (h.unwound or h.exited) then
      trailing[h.tid] = nil
    else
      trailing[h.tid] = trailing[h.tid] or {}
      table.insert(trailing[h.tid], h.region)
    end
  end
  for _, ids in pairs(trailing) do
    for _, id in ipairs(ids) do
      if names[id] and not inside[names[id]] then
        inside[names[id]] = true
        inside[#inside + 1] = names[id]
      end
    end
  end
  io.stderr:write(("perfsh %s: %s killed by %s%s\n"):format(name, table.concat(t.argv, " "), status.signal,
    #inside > 0 and (" in region " .. table.concat(inside, ", ")) or " outside every region"))
end

--- Run main(argv) of a recipe; errors print one line (no traceback) and exit 2.
function cli.main(fn, argv)
  local ok, result = xpcall(fn, function(e)
    if type(e) == "string" and e:match("^perfsh ") then return e end
    return debug.traceback(e, 2)
  end, argv)
  if not ok then
    io.stderr:write(tostring(result), "\n")
    os.exit(2, true) -- closing the state closes the tracees: an attached process is detached
  end
  os.exit(result or 0, true)
end

return cli
