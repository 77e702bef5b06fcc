--- perfsh.cli: the recipes' options (lua-argparse) and header comments, and the exit conventions they share.
local fail = require "perfsh.fail"
local cli = {}

--- The header comment a recipe file opens with:
--   -- NAME: one-line summary
--   -- usage: perfsh NAME ...
--   --        perfsh NAME ...      (more forms, optional)
-- Returns {name =, summary =, usage = {lines}}, or nil and why.
function cli.header(path)
  local f, why = io.open(path)
  if not f then return nil, why end
  local h = {usage = {}}
  local first = f:read("l") or ""
  h.name, h.summary = first:match("^%-%-%s*([%w_-]+):%s*(.-)%s*$")
  for line in f:lines() do
    local form = line:match("^%-%-%s*usage:%s*(.-)%s*$") or (#h.usage > 0 and line:match("^%-%-%s+(perfsh .-)%s*$"))
    if not form then break end
    h.usage[#h.usage + 1] = form
  end
  f:close()
  if not h.name or #h.usage == 0 then
    return nil, ("%s does not open with '-- NAME: summary' and '-- usage: perfsh NAME ...'"):format(path)
  end
  return h
end

-- The words of a "-r --region" names string.
local function words(s)
  local out = {}
  for w in (s or ""):gmatch("%S+") do out[#out + 1] = w end
  return out
end

-- Text of a help written over several source lines as argparse wraps it: the lines of a
-- paragraph joined; blank lines and indented lines (examples) kept as they are.
local function reflow(text)
  if not text then return nil end
  local out = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do
    local prev = out[#out]
    if prev and prev ~= "" and line ~= "" and not line:match("^%s") and not prev:match("^%s") then
      out[#out] = prev .. " " .. line
    else
      out[#out + 1] = line
    end
  end
  return table.concat(out, "\n")
end

--- The kinds of number an option may take (number = KIND in its row of cli.parser): what
-- the value must be, the test, and an example. cli.parse checks and converts every one.
local function finite(n) return n > -math.huge and n < math.huge end
local function whole(n) return math.tointeger(n) ~= nil end
cli.numbers = {
  seconds = {"a time in seconds above 0", function(n) return finite(n) and n > 0 end, "2.5"},
  us = {"a time in microseconds, 0 or more", function(n) return finite(n) and n >= 0 end, "500"},
  positive = {"a number above 0", function(n) return finite(n) and n > 0 end, "2"},
  probability = {"a probability above 0 and at most 1", function(n) return n > 0 and n <= 1 end, "0.01"},
  quantile = {"a quantile above 0 and below 1", function(n) return n > 0 and n < 1 end, "0.99"},
  count = {"a positive count", function(n) return whole(n) and n >= 1 end},
  count0 = {"a count of 0 or more", function(n) return whole(n) and n >= 0 end},
  pow2 = {"a power of two", function(n) return whole(n) and n >= 1 and n & (n - 1) == 0 end, "1024"},
  pid = {"a process id", function(n) return whole(n) and n >= 1 and n < 2 ^ 31 end},
  field = {"a field from 0 to 3", function(n) return whole(n) and n >= 0 and n <= 3 end},
}

-- @value of option @flag as a number of @kind (cli.numbers), or one line saying what it needs.
local function number_of(name, flag, kind, value)
  local k = assert(cli.numbers[kind], kind)
  local n = tonumber(value)
  if not n or n ~= n or not k[2](n) then
    fail.raise(("perfsh %s: %s needs %s%s, not '%s'"):format(name, flag, k[1], k[3] and (" (e.g. %s %s)"):format(flag,
      k[3]) or "", value))
  end
  return math.tointeger(n) or n
end

--- A recipe's option parser (lua-argparse) from a table:
--   {name = "stat", usage = {forms}, description = "...", example = "perfsh stat ..." (or a list),
--    epilog = "...",
--    options = {"Regions", {"-r --region", "R", "help", count = "*", target = "regions",
--               hidden = "-f --function"}, {"--seconds", "S", "help", number = "seconds"},
--               {"--csv", nil, "help"}, ...}}
-- A string in options starts a section of the help; an option with an argument name takes a
-- value, one without is a flag; number = KIND (cli.numbers) makes its value a number of that
-- kind. Returns the parser, for each name that takes a value the option's first long name,
-- {{key, flag, kind}, ...} of the numeric options (key: where argparse puts the value), and the
-- set of every option name (flags too).
function cli.parser(def)
  local argparse = require "argparse"
  local usage = {}
  for i, form in ipairs(def.usage) do usage[i] = (i == 1 and "Usage: " or "       ") .. form end
  local p = argparse("perfsh " .. def.name):usage(table.concat(usage, "\n")):add_help(false)
    :help_max_width(100):help_description_margin(26)
  if def.description then p:description(reflow(def.description)) end
  local examples = type(def.example) == "table" and def.example or {def.example}
  local epilog = #examples > 0 and ("Example:\n  " .. table.concat(examples, "\n  ")) or nil
  if def.epilog then epilog = epilog and (epilog .. "\n\n" .. def.epilog) or def.epilog end
  if epilog then p:epilog(reflow(epilog)) end
  local takes, numbers, known, section, members = {}, {}, {}, "Options", {}
  local function close()
    if #members > 0 then p:group(section, table.unpack(members)) end
    members = {}
  end
  local opts = {}
  for _, o in ipairs(def.options) do opts[#opts + 1] = o end
  opts[#opts + 1] = {"-h --help", nil, "show this help and exit"}
  for _, o in ipairs(opts) do
    if type(o) == "string" then
      close()
      section = o
    else
      for _, n in ipairs(words(o[1] .. " " .. (o.hidden or ""))) do known[n] = true end
      local e
      if o[2] then
        e = p:option(o[1], o[3]):argname(o[2])
        -- one line, "-r, --region R", not argparse's line per name
        local label = table.concat(words(o[1]), ", ") .. " " .. o[2]
        e._get_label_lines = function() return {label} end
        local names = words(o[1] .. " " .. (o.hidden or ""))
        local long
        for _, n in ipairs(names) do long = long or (n:match("^%-%-") and n) end
        for _, n in ipairs(names) do takes[n] = long end
        if o.number then
          local key = o.target or (long or names[1]):gsub("^%-+", ""):gsub("%-", "_")
          numbers[#numbers + 1] = {key, names[1], o.number}
        end
      else
        e = p:flag(o[1], o[3])
      end
      if o.hidden then e:hidden_name(o.hidden) end
      if o.count then e:count(o.count) end
      if o.target then e:target(o.target) end
      members[#members + 1] = e
    end
  end
  close()
  return p, takes, numbers, known
end

-- argv split where the options end: at "--" (dropped) or at the first word that is not an
-- option or an option's value (the target's command starts there). Each value is joined to its
-- option as --long=VALUE, so that a value may start with "-" (--every -1, -e -x). With @keep the
-- "--" stays, first in the rest, for a recipe that gives it a meaning (perfsh compare).
local function split_options(argv, takes, keep)
  local head, i = {}, 1
  while i <= #argv do
    local a = argv[i]
    if a == "--" then
      if not keep then i = i + 1 end
      break
    end
    if a:sub(1, 1) ~= "-" or #a == 1 then break end
    local long = takes[a]
    if not long and a:sub(1, 2) ~= "--" then
      -- -abc: flags until one takes a value: the rest of the word, or (the last) the next word
      local j = 2
      while j < #a and not takes["-" .. a:sub(j, j)] do j = j + 1 end
      long = j == #a and takes["-" .. a:sub(j, j)] or nil
      if long then a = a:sub(1, -2) end
    end
    if long and i < #argv then
      if a ~= argv[i] then head[#head + 1] = a end
      head[#head + 1] = long .. "=" .. argv[i + 1]
      i = i + 2
    else
      head[#head + 1] = argv[i]
      i = i + 1
    end
  end
  return head, {table.unpack(argv, i)}
end

-- The names of @known one edit away from @wrong (a character left out, added or replaced), quoted
-- and sorted, as argparse's own tip finds them.
local function near(known, wrong)
  local function drop(s, i) return s:sub(1, i - 1) .. s:sub(i + 1) end
  local pool, found, out = {}, {}, {}
  for name in pairs(known) do
    for i = 1, #name do
      local k = drop(name, i)
      pool[k] = pool[k] or {}
      table.insert(pool[k], name)
    end
  end
  for i = 1, #wrong + 1 do
    local k = drop(wrong, i)
    if known[k] then
      found[k] = true
    else
      for _, name in ipairs(pool[k] or {}) do found[name] = true end
    end
  end
  for name in pairs(found) do out[#out + 1] = "'" .. name .. "'" end
  table.sort(out)
  return out
end

-- The option words of @head (argv up to the command, values joined as --long=VALUE) checked
-- against the parser's names before argparse sees them: an unknown option, or one that takes a
-- value given last without it, ends the recipe with one line ("perfsh NAME: unknown option '--x'
-- (perfsh NAME --help lists them)", "perfsh NAME: -r needs a value (perfsh NAME --help)").
local function check_options(name, head, takes, known)
  local function unknown(opt)
    local tip = near(known, opt)
    tip = #tip == 1 and ("; did you mean " .. tip[1] .. "?")
      or #tip > 1 and ("; did you mean one of these: " .. table.concat(tip, " ") .. "?") or ""
    fail.raise(("perfsh %s: unknown option '%s'%s (perfsh %s --help lists them)"):format(name, opt, tip, name))
  end
  for i, a in ipairs(head) do
    if a == "--" then return end
    local eq = a:find("=", 1, true)
    if a:sub(1, 2) == "--" then
      if not known[a:sub(1, (eq or 0) - 1)] then unknown(a:sub(1, (eq or 0) - 1)) end
    elseif a:sub(1, 1) == "-" and #a > 1 then
      for j = 2, #a do -- -abc: flags until one that takes a value (the rest of the word)
        local opt = "-" .. a:sub(j, j)
        if not known[opt] then unknown(opt) end
        if takes[opt] then break end
      end
    end
    if takes[a] and i == #head then
      fail.raise(("perfsh %s: %s needs a value (perfsh %s --help)"):format(name, a, name))
    end
  end
end

-- An argparse error that check_options let through, as one line: its first, with where the help is.
local function parse_error(name, err)
  fail.raise(("perfsh %s: %s (perfsh %s --help)"):format(name, tostring(err):match("^[^\n]*"), name))
end

--- Parse argv with the recipe's parser (cli.parser(def)). Options stop at "--" or at the first
-- word that is not an option; the rest is the command. With def.operands (a recipe without a
-- command: perfsh report FILE) the operands may come anywhere among the options instead. With
-- def.keep_separator the "--" that ends the options, when given, stays first in the rest (the rest
-- after it unsplit: perfsh compare splits -- CMD1 -- CMD2 itself).
-- --help prints the help and exits 0; bad options raise one line (parse_error).
-- Returns opts (argparse's result: names with "-" as "_", or the option's target), rest.
function cli.parse(def, argv, ...)
  if type(def) == "string" then return cli.parse(cli.from_spec(def, argv, ...)) end
  local p, takes, numbers, known = cli.parser(def)
  local head, rest
  if def.operands then
    p:argument("operands"):args("*"):hidden(true)
    head = argv
  else
    head, rest = split_options(argv, takes, def.keep_separator)
  end
  check_options(def.name, head, takes, known)
  local ok, opts = p:pparse(head)
  if not ok then parse_error(def.name, opts) end
  if opts.help then
    io.write(def.help_text or (p:get_help() .. "\n"))
    os.exit(0, true)
  end
  opts.help = nil
  if def.operands then
    rest, opts.operands = opts.operands, nil
  end
  for _, o in ipairs(numbers) do
    local key, flag, kind = o[1], o[2], o[3]
    local v = opts[key]
    if type(v) == "table" then
      for i, x in ipairs(v) do v[i] = number_of(def.name, flag, kind, x) end
    elseif v ~= nil then
      opts[key] = number_of(def.name, flag, kind, v)
    end
    if kind == "pid" and v ~= nil and rest and #rest > 0 then
      fail.raise(("perfsh %s: %s %s attaches to a running process and '%s' is a command to start; give one, not both")
        :format(def.name, flag, v, table.concat(rest, " ")))
    end
  end
  return cli.clean(opts), rest
end

--- The older form of a recipe's options, cli.parse(name, spec, argv, usage) with spec =
-- {{"-e", "--events", arg = true, repeatable = true, key = "events"}, {"--csv", key = "csv"}},
-- as a table for cli.parse: returns def, argv. --help prints usage as it is.
function cli.from_spec(name, spec, argv, usage)
  local options = {}
  for i, o in ipairs(spec) do
    options[i] = {table.concat(o, " "), o.arg and "VALUE" or nil, "", count = o.repeatable and "*" or nil,
      target = o.key}
  end
  return {name = name, usage = {"perfsh " .. name .. " [options] ..."}, options = options, help_text = usage}, argv
end

--- argparse's result without the empty lists of repeatable options not given (nil instead).
function cli.clean(opts)
  for k, v in pairs(opts) do
    if type(v) == "table" and #v == 0 then opts[k] = nil end
  end
  return opts
end

--- Run the recipe of the calling script: its name and usage forms come from the header comment
-- the script opens with (cli.header), the rest of def as for cli.parser; def.defaults names the
-- use (perfsh.defaults) whose event sets fill "{pmu}" and "{none}" in the help texts.
-- main(opts, cmd) returns the exit status; errors end the recipe as cli.main does.
function cli.run(def, main)
  local path = debug.getinfo(2, "S").source:gsub("^@", "")
  local h = assert(cli.header(path))
  def.name, def.usage = def.name or h.name, def.usage or h.usage
  if def.defaults then
    local defaults = require "perfsh.defaults"
    local function fill(text) return text and defaults.usage(text, def.defaults) end
    def.description, def.epilog = fill(def.description), fill(def.epilog)
    for _, o in ipairs(def.options) do
      if type(o) == "table" then o[3] = fill(o[3]) end
    end
  end
  -- SIGINT, SIGTERM and SIGHUP, whatever perfsh inherited: a recipe that runs a target only
  -- has its runs end (t:run pauses, core.run passes them on), reports what was measured and
  -- exits 128 + the signal (cli.main); one that does not (def.stop_on_signal) stops at once
  if not def.stop_on_signal then cli.core.defer_signals() end
  cli.main(function(argv)
    local opts, cmd = cli.parse(def, argv)
    return main(opts, cmd)
  end, arg, def.name)
end

--- The signal (SIGINT, SIGTERM, SIGHUP) that stopped the recipe's runs, and its number, or
-- nil; with @name, also one line on stderr: "perfsh NAME: SIGINT: stopped (what)".
function cli.stopped(name, what)
  local signame, signo = cli.core.signal()
  if signame and name then
    io.stderr:write(("perfsh %s: %s: stopped%s\n"):format(name, signame, what and (" (" .. what .. ")") or ""))
  end
  return signame, signo
end

--- Raise "perfsh NAME: SIGNAME: stopped before the runs were done; nothing is compared" where a
-- signal (SIGINT, SIGTERM, SIGHUP) stopped the runs of a comparing recipe (cli.main exits 128 + it).
function cli.check_stopped(name)
  local signame = cli.stopped()
  if signame then
    fail.raise(("perfsh %s: %s: stopped before the runs were done; nothing is compared"):format(name, signame))
  end
end

--- The --backend option of the recipes that catch region hits (a row of cli.parser's options).
cli.backend_option = {"--backend", "B", "how hits are caught: ptrace (the target stops at each hit), uprobe (the "
  .. "kernel samples the counters at each probe: the target never stops for a hit; root or CAP_PERFMON; sdt: "
  .. "regions take it), marker (the program's marker library measures its marker:NAME regions itself; the "
  .. "default for them), inproc (an agent preloaded into the program patches its functions' entries "
  .. "and line ranges' points and measures them without a trap; with -p it is loaded into the running process, "
  .. "and the bytes are put back at the detach or when perfsh dies; functions of the program and of the "
  .. "libraries it links, line ranges of the program's own file) or auto (for a program perfsh starts, inproc "
  .. "where it measures every region, else uprobe where it works and the regions allow it, else ptrace, with a "
  .. "note saying why; for -p, uprobe, else ptrace); default: auto, or $PERFSH_BACKEND"}

--- The catcher of hits a recipe asks perfsh.spawn/attach for: --backend @value, else the
-- default (perfsh.defaults.backend(): $PERFSH_BACKEND or auto). auto where @need (what needs the ptrace catcher, e.g.
-- "region f.c:1-2", or nil) says so takes ptrace, with a note; the rest is for spawn to decide.
function cli.backend(name, value, need)
  local b = value
  if not b then
    local ok, d = pcall(require("perfsh.defaults").backend)
    if not ok then fail.raise(("perfsh %s: %s"):format(name, d)) end
    b = d
  end
  if b ~= "auto" and b ~= "uprobe" and b ~= "ptrace" then
    fail.raise(("perfsh %s: --backend %s; give auto, uprobe or ptrace"):format(name, b))
  end
  if b == "auto" and need then
    io.stderr:write(("perfsh %s: note: backend auto: ptrace, as %s needs it\n"):format(name, need))
    return "ptrace"
  end
  return b
end

--- The catcher of a recipe's @regions, as cli.backend(name, value, need) gives it, except that
-- regions that are all markers of a program perfsh starts (@attaching false) take the marker
-- catcher (the program measures them itself) unless --backend says otherwise or @groups (several
-- counter groups, which the marker catcher does not count); and that SDT and marker regions,
-- which otherwise only the uprobe catcher arms, take it under auto or a ptrace that no --backend
-- gave: one line when the uprobe catcher cannot work here, or @need (what needs the ptrace
-- catcher) asks for the other.
function cli.regions_backend(name, value, regions, need, attaching, groups)
  local sdt, markers = nil, #regions > 0
  for _, r in ipairs(regions) do
    local rs = cli.region_spec(r, name)
    if rs.sdt or rs.marker then sdt = r end
    if not rs.marker then markers = false end
  end
  if value == "inproc" then
    for _, r in ipairs(regions) do
      local kind = cli.region_spec(r, name) and select(2, cli.region_spec(r, name)).kind
      if kind ~= "func" and kind ~= "libfunc" and kind ~= "line_range" and kind ~= "addr_range" then
        fail.raise(("perfsh %s: --backend inproc measures functions (the program's and its libraries') and "
          .. "the program's line ranges, not yet '%s'; use --backend uprobe"):format(name, r))
      end
    end
    if need then
      fail.raise(("perfsh %s: --backend inproc cannot do this yet (%s); use --backend uprobe"):format(name, need))
    end
    return "inproc"
  end
  if value == "marker" then
    for _, r in ipairs(regions) do
      if not cli.region_spec(r, name).marker then
        fail.raise(("perfsh %s: --backend marker measures marker:NAME regions only, and '%s' is not one"):format(name,
          r))
      end
    end
    if attaching then
      fail.raise(("perfsh %s: --backend marker measures a program perfsh starts; for a running one (-p), arm its "
        .. "markers with --backend uprobe"):format(name))
    end
    return "marker"
  end
  local asked = value or cli.backend(name, nil)
  if markers and not attaching and not groups and (asked == "auto" or not value and asked == "ptrace") then
    return "marker"
  end
  if sdt and asked == "auto" or sdt and not value and asked == "ptrace" then
    local ok, why = require("perfsh.core").uprobe_available()
    if need or not ok then
      fail.raise(("perfsh %s: region '%s': SDT probes need the uprobe catcher, %s"):format(name, sdt, need
        and "and " .. need .. " the ptrace catcher; measure them in separate runs"
        or "which cannot work here (" .. why .. ")"))
    end
    return "uprobe" -- not the in-process catcher, which auto would try first
  end
  return cli.backend(name, asked, need)
end

--- --engine E of a recipe: counters or callgrind (nil: @default).
function cli.engine(name, value, default)
  if value and value ~= "counters" and value ~= "callgrind" then
    fail.raise(("perfsh %s: --engine must be counters or callgrind, not '%s'"):format(name, value))
  end
  return value or default
end

--- The events of -e/-g lists (a,b,c; the option may be repeated), each @PRESET replaced by the
-- events of that preset that open here (perfsh.presets; a note names what it dropped).
function cli.events(name, values)
  return require("perfsh.presets").events(name, cli.split(values))
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
    if not ok then fail.raise(("perfsh %s: %s"):format(name, why)) end
    if seen[e] then fail.raise(("perfsh %s: event '%s' is given twice; name each event once"):format(name, e)) end
    seen[e] = true
  end
end

--- An output file of option @flag (-o, --save, --log, ...), reserved before anything runs
-- (perfsh.outfile): it is written to a temporary file beside @path, which o:commit() renames
-- over @path at the end, so a run that fails leaves the old file as it was. With @open, o is
-- also open for writing (o:write). nil for no @path; one line when it cannot be written.
function cli.output(name, flag, path, open)
  if not path then return nil end
  local outfile = require "perfsh.outfile"
  local o, why = (open and outfile.open or outfile.reserve)(path)
  if not o then
    fail.raise(("perfsh %s: %s: %s; give a file in a directory you can write"):format(name, flag, why))
  end
  return o
end

--- Put output file @o (cli.output) in place; a failure is one line on stderr. Returns whether
-- it was written.
function cli.commit(name, o)
  if not o then return true end
  local ok, why = o:commit()
  if not ok then io.stderr:write("perfsh ", name, ": ", why, "\n") end
  return ok
end

--- A region named on a command line, parsed by core.region_spec (core/binary/regionspec.c, the one
-- parser of the grammar): FILE:L1-L2, FILE:L1-FILE:L2 or 0xA-0xB is a line or address range,
-- sdt:PROVIDER:NAME[,sdt:PROVIDER:NAME] SDT probes, marker:NAME a marker of perfsh/marker.h (its SDT
-- pair, {marker = NAME}), anything else a function (LIB:FUNC, 0xADDR). Returns the t:region spec
-- and core.region_spec's result.
-- A bad one ends the recipe with one line, e.g. for a single line FILE:N.
function cli.region_spec(r, name)
  local rs, why = require("perfsh.core").region_spec(r)
  if not rs then fail.raise(("perfsh %s: %s"):format(name or "stat", why)) end
  if rs.kind == "marker" then return {marker = rs.marker}, rs end
  if rs.kind == "line_range" or rs.kind == "addr_range" then return {range = r}, rs end
  if rs.kind == "sdt" then return {sdt = r}, rs end
  return {func = r}, rs
end

--- The kind of region @r as core.region_spec parses it ("func", "libfunc", "addr", "addr_range",
-- "line_range", "sdt" or "marker"), nil for one it refuses.
function cli.region_kind(r)
  local rs = require("perfsh.core").region_spec(tostring(r))
  return rs and rs.kind
end

--- Start the target of a recipe: spawn cmd, or attach to pid (a string from -p). spec holds
-- the other perfsh.spawn/attach options (events, groups, spill, follow_fork, ...); regions, the
-- recipe's -r names: an address that is no instruction of the process's program is refused
-- before it is attached (a spawned program is checked before its first instruction).
function cli.start(name, cmd, pid, spec, regions)
  local perfsh = require "perfsh"
  local ok, t = pcall(function()
    if pid then
      local n = math.tointeger(tonumber(pid))
      if not n then error(("-p needs a process id, not '%s'"):format(pid), 0) end
      for _, r in ipairs(regions or {}) do
        local good, why = require("perfsh.core").code_check(n, r)
        if not good then error(("region '%s': %s"):format(r, why), 0) end
      end
      return perfsh.attach(n, spec)
    end
    local s = {}
    for k, v in pairs(spec) do s[k] = v end
    for i, a in ipairs(cmd) do s[i] = a end
    return perfsh.spawn(s)
  end)
  if not ok then fail.raise(("perfsh %s: %s"):format(name, cli.reason(t))) end
  return t
end

--- Arm region @spec (labelled @label on the command line) on tracee @t: the region, or nil, why
-- (without the "region 'SPEC': " the session may put first: the recipe names it by @label), code
-- (core.errors, e.g. needs_ptrace; nil for a spec t:region refuses). Where auto's in-process
-- catcher refused it and the program was started again under another (t.fell_back), recipe
-- @name says so in one note.
function cli.try_arm(t, spec, name)
  local ok, r, why, code = pcall(t.try_region, t, spec)
  if t.fell_back then
    io.stderr:write(("perfsh %s: note: %s\n"):format(name or "stat", t.fell_back))
    t.fell_back = nil
  end
  if not ok then why = cli.reason(r) end
  if ok and r then return r end
  return nil, (why:gsub("^region '[^']*': ", "")), code
end

--- Arm a region on tracee t; a bad name ends the recipe with one line, nothing started.
function cli.arm(name, t, label, spec)
  local r, why = cli.try_arm(t, spec, name)
  if not r then
    t:close()
    fail.raise(("perfsh %s: region '%s': %s"):format(name, label, why))
  end
  return r
end

--- Split "a,b,c" lists (commas or blanks) (repeatable options give several) into one flat array.
function cli.split(values)
  local out = {}
  for _, v in ipairs(values or {}) do
    for item in v:gmatch("[^,%s]+") do out[#out + 1] = item end
  end
  return out
end

--- The end of a recipe that ran a target: a run that failed (@runok false, @why) is one line on
-- stderr and exit 1; a run paused, 0 (stopped by a signal: one line, and cli.main exits 128 +
-- the signal); else the target's status (cli.status).
function cli.finish(name, runok, why, status)
  if not runok then
    io.stderr:write("perfsh ", name, ": ", cli.reason(why), "\n")
    return 1
  end
  if not status then
    cli.stopped(name, "what was measured is above")
    return 0
  end
  return cli.status(status.exited, status.code, status.signo)
end

--- The options of r:on_slow from a recipe's --threshold-us (opts.threshold), --quantile,
-- --factor, --warmup and --log (numbers checked by cli.parse: number = "us", "quantile", ...).
function cli.slow_options(name, opts)
  if opts.threshold and opts.quantile then
    fail.raise(("perfsh %s: give --threshold-us or --quantile, not both"):format(name))
  end
  if opts.log then cli.output(name, "--log", opts.log):abort() end -- on_slow writes it whole
  return {
    threshold_us = opts.threshold,
    quantile = not opts.threshold and (opts.quantile or 0.99) or nil,
    factor = opts.factor or (opts.threshold and 1 or 2),
    warmup = opts.warmup,
    log = opts.log,
  }
end

--- What caught the hits of tracee @t, for a recipe's header, and its losses (", N ... lost" or
-- "", report.losses): the catcher's name, or for the marker catcher what the program's library says.
function cli.caught(t)
  local info, lost = t:info(), require("perfsh.report").losses(t:losses())
  if info.catcher ~= "marker" then return info.catcher, lost end
  local ms = t:markers()
  local caught = ms.state == "running" and ("the program's marker library (counters read by %s)"):format(ms.read)
    or ("the program's marker library, which is %s"):format(ms.state == "off" and "off: " .. ms.why
      or "not running (no marker was reached)")
  return caught, lost
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

--- Run main(argv) of recipe @name; a failure (perfsh.fail) prints one line and exits 2, any other
-- error (a bug) its traceback. After
-- SIGINT, SIGTERM or SIGHUP (cli.run) the exit status is 128 + the signal.
function cli.main(fn, argv, name)
  local ok, result = xpcall(fn, function(e)
    if fail.is(e) then return tostring(e) end
    if cli.core.signal() then return false end -- stopped by a signal where it was (cli.run)
    return debug.traceback(e, 2)
  end, argv)
  local _, signo = cli.core.signal()
  if not ok then
    require("perfsh.outfile").abort_all() -- the old output files stay as they were
    if result then
      io.stderr:write(tostring(result), "\n")
    else
      cli.stopped(name or "perfsh")
    end
    -- closing the state closes the tracees: an attached process is detached
    os.exit(signo and 128 + signo or 2, true)
  end
  os.exit(signo and 128 + signo or result or 0, true)
end

-- cli.perfsh, cli.core, cli.defaults: the modules every recipe uses, required when first used
local modules = {perfsh = "perfsh", core = "perfsh.core", defaults = "perfsh.defaults"}
return setmetatable(cli, {__index = function(_, k)
  if modules[k] then return require(modules[k]) end
end})
