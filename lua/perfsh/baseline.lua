--- perfsh.baseline: the baselines of perfsh check. What they hold (schema 2), how a file is read
-- back (every field checked: a wrong one is one line naming it), what identifies the measurement
-- (the program, its build, the regions, the engine, the events, the catcher) and the atomic write.
--
-- A baseline belongs to a program: a check accepts the program when its file name is the
-- baseline's (a rebuild, wherever it is built: the regression case) or its build id is (the same
-- build under another name), and refuses any other.
local fail = require "perfsh.fail"
local core = require "perfsh.core"
local json = require "dkjson"
local outfile = require "perfsh.outfile"

local M = {}

M.version = 2

--- Raise the gate's error @code ("baseline", "identity", "undetectable", ...) with the message
-- "perfsh check: " .. fmt:format(...) (a perfsh.fail failure: perfsh.check raises them).
function M.fail(code, fmt, ...)
  fail.raise("perfsh check: " .. fmt:format(...), code)
end

--- The code of an error the gate raised (M.fail) or any perfsh.fail failure, or "error" for any other.
function M.code(e)
  return fail.code(e) or "error"
end

--- The file a command's program @prog is: argv[1] as given, or found in $PATH like execvp.
function M.program_file(prog)
  if prog:find("/", 1, true) then return prog end
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    local f = io.open(dir .. "/" .. prog)
    if f then
      f:close()
      return dir .. "/" .. prog
    end
  end
  return prog
end

--- What identifies the program of @cmd: {path = argv[1], build_id = hex or false}.
function M.program(cmd)
  local id = core.build_id(M.program_file(cmd[1]))
  return {path = cmd[1], build_id = id or false}
end

local function basename(p)
  return (p:gsub("/+$", ""):match("[^/]*$"))
end

local function short(id)
  return id and id:sub(1, 16) or "none"
end

--- Refuse (exit 2) a baseline @b of @file measured on another program than @prog (M.program);
-- returns a note when the program was rebuilt since, nil when it is the same build.
function M.check_program(b, file, prog)
  local was = b.program
  local same_build = was.build_id and was.build_id == prog.build_id
  if not same_build and basename(was.path) ~= basename(prog.path) then
    M.fail("identity", "%s was measured on %s (build id %s), not %s (build id %s); record a baseline of %s "
      .. "with --save-baseline", file, was.path, short(was.build_id), prog.path, short(prog.build_id), prog.path)
  end
  if not same_build and (was.build_id or prog.build_id) then
    return ("%s was rebuilt since the baseline (build id %s, now %s)"):format(prog.path, short(was.build_id),
      short(prog.build_id))
  end
end

-- Schema 2, checked field by field. A type is "string", "number", "runs" (an integer >= 1), "cpu"
-- (an integer >= 0), "id"
-- (a hex string or false), or a table: {array = T} (a non-empty array of T), {map = T} (a
-- non-empty object of T), or {fields = {name = T}, optional = {name = true}}.
local numbers = {array = "number"}
local event_counters = {fields = {median = "number", runs = numbers, hit = numbers, floor = numbers}}
local event_callgrind = {fields = {median = "number", runs = numbers}}
local function region(ev)
  return {fields = {hits = "number", floor = "string", events = {map = ev}}, optional = {floor = true}}
end
local schema = {fields = {perfsh_check = "number", engine = "string", events = {array = "string"}, runs = "runs",
  command = {array = "string"}, program = {fields = {path = "string", build_id = "id"}}, catcher = "string",
  cpu = "cpu", regions = {map = region(event_counters)}}, optional = {catcher = true, cpu = true}}

local function what_is(v)
  if type(v) == "string" then return ("%q"):format(#v > 20 and v:sub(1, 20) .. "..." or v) end
  if type(v) == "table" then return next(v) == nil and "empty" or (#v > 0 and "an array" or "an object") end
  return tostring(v)
end

-- Check @v against @t at @path; returns nil or "PATH is X, not Y".
local function check(v, t, path)
  local want
  if t == "string" or t == "number" then
    if type(v) == t and (t ~= "number" or v == v) then return nil end
    want = "a " .. t
  elseif t == "runs" or t == "cpu" then
    if math.type(v) == "integer" and v >= (t == "runs" and 1 or 0) then return nil end
    want = t == "runs" and "a count of runs (1 or more)" or "a CPU number"
  elseif t == "id" then
    if v == false or type(v) == "string" and v:match("^%x+$") then return nil end
    want = "a build id (hex) or false"
  elseif t.array then
    if type(v) == "table" and #v > 0 and next(v, #v) == nil then
      for i, x in ipairs(v) do
        local why = check(x, t.array, ("%s[%d]"):format(path, i))
        if why then return why end
      end
      return nil
    end
    want = "an array of " .. (type(t.array) == "string" and t.array .. "s" or "values")
  elseif t.map then
    if type(v) == "table" and next(v) ~= nil and #v == 0 then
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = k end
      table.sort(keys)
      for _, k in ipairs(keys) do
        local why = check(v[k], t.map, path .. "." .. k)
        if why then return why end
      end
      return nil
    end
    want = "an object with one entry or more"
  else
    if type(v) == "table" and (#v == 0 or next(v) == nil) then
      local keys = {}
      for k in pairs(t.fields) do keys[#keys + 1] = k end
      table.sort(keys)
      for _, k in ipairs(keys) do
        if v[k] == nil then
          if not (t.optional and t.optional[k]) then
            return ("%s has no '%s'"):format(path == "" and "the file" or path, k)
          end
        else
          local why = check(v[k], t.fields[k], path == "" and k or path .. "." .. k)
          if why then return why end
        end
      end
      return nil
    end
    want = "an object"
  end
  return ("%s is %s, not %s"):format(path == "" and "the file" or path, what_is(v), want)
end

--- The baseline in @file, every field checked; raises one line (code "baseline") saying what is
-- wrong and to record it again.
function M.read(file)
  local f, why = io.open(file)
  if not f then M.fail("baseline", "cannot read the baseline: %s; make one with --save-baseline", why) end
  local text = f:read("a")
  f:close()
  local b, _, err = json.decode(text)
  if type(b) ~= "table" then
    M.fail("baseline", "baseline %s is not valid JSON (%s); make it again with --save-baseline", file,
      err or "not an object")
  end
  if b.perfsh_check ~= M.version then
    M.fail("baseline", "%s is not a perfsh check baseline of this version (perfsh_check: %s, this perfsh reads %d);"
      .. " make it again with --save-baseline", file, what_is(b.perfsh_check), M.version)
  end
  local s = schema
  if b.engine == "callgrind" then
    s = {fields = {}, optional = schema.optional}
    for k, t in pairs(schema.fields) do s.fields[k] = t end
    s.fields.regions = {map = region(event_callgrind)}
  end
  why = check(b, s, "")
  if not why and b.engine ~= "counters" and b.engine ~= "callgrind" then
    why = ("engine is %s, not counters or callgrind"):format(what_is(b.engine))
  end
  for r, reg in pairs(why and {} or b.regions) do
    for _, e in ipairs(b.events) do
      if not why and not reg.events[e] then why = ("regions.%s.events has no %s"):format(r, e) end
    end
  end
  if why then M.fail("baseline", "%s: %s; make it again with --save-baseline", file, why) end
  return b
end

local keyorder = {"perfsh_check", "engine", "events", "runs", "catcher", "cpu", "command", "program", "path",
  "build_id",
  "regions", "hits", "floor", "median", "hit"}

--- Write baseline @doc to @file (atomically); raises one line on failure.
function M.write(file, doc)
  doc.perfsh_check = M.version
  local text = json.encode(doc, {indent = true, keyorder = keyorder}) .. "\n"
  local ok, why = outfile.write(file, function(o) o:write(text) end)
  if not ok then M.fail("output", "--save-baseline: %s", why) end
end

return M
