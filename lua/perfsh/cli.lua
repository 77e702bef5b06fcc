--- perfsh.cli: a small option parser for recipes, and the exit conventions they share.
local cli = {}

--- Parse argv against a spec.
-- spec = { {"-e", "--events", arg = true, repeatable = true, key = "events"}, {"--csv", key = "csv"}, ... }
-- Options stop at "--" or at the first word that is not an option; the rest is the command.
-- Returns opts, rest; raises "perfsh NAME: ..." for unknown options or missing values.
function cli.parse(name, spec, argv)
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
  return opts, rest
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

--- Run main(argv) of a recipe; errors print one line (no traceback) and exit 2.
function cli.main(fn, argv)
  local ok, result = xpcall(fn, function(e)
    if type(e) == "string" and e:match("^perfsh ") then return e end
    return debug.traceback(e, 2)
  end, argv)
  if not ok then
    io.stderr:write(tostring(result), "\n")
    os.exit(2)
  end
  os.exit(result or 0)
end

return cli
