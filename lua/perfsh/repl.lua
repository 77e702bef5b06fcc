--- perfsh.repl: how the REPL shows values.
local repl = {}

local function is_array(t)
  local n = #t
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then return false end
  end
  return true
end

local function key_text(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return k end
  return "[" .. repl.format(k, 0) .. "]"
end

--- Text of a value: tables with sorted keys, nested up to @depth levels (default 3).
function repl.format(v, depth, indent)
  depth, indent = depth or 3, indent or ""
  local t = type(v)
  if t == "string" then return ("%q"):format(v) end
  if t == "number" and math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 2^53 then
    return ("%.1f"):format(v)
  end
  if t == "function" then
    local name = require("perfsh.help").name_of(v)
    if name then return ("function %s (help \"%s\")"):format(name, name) end
  end
  if t ~= "table" or getmetatable(v) and getmetatable(v).__tostring then return tostring(v) end
  if depth <= 0 then return "{...}" end
  if next(v) == nil then return "{}" end
  local parts = {}
  if is_array(v) then
    for _, x in ipairs(v) do parts[#parts + 1] = repl.format(x, depth - 1, indent .. "  ") end
    local line = "{" .. table.concat(parts, ", ") .. "}"
    if #line <= 100 then return line end
    return "{\n" .. indent .. "  " .. table.concat(parts, ",\n" .. indent .. "  ") .. "\n" .. indent .. "}"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "number" or ta == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  for _, k in ipairs(keys) do
    parts[#parts + 1] = indent .. "  " .. key_text(k) .. " = " .. repl.format(v[k], depth - 1, indent .. "  ")
  end
  return "{\n" .. table.concat(parts, ",\n") .. "\n" .. indent .. "}"
end

--- print(...) for the REPL.
function repl.print(...)
  local out = {}
  for i = 1, select("#", ...) do out[i] = repl.format((select(i, ...))) end
  print(table.concat(out, "\t"))
end

-- The program file of a tracee (a value with __name perfsh.tracee): its /proc exe while it
-- runs, else argv[1] (looked up in PATH when it has no "/").
local function program_of(t)
  local ok, info = pcall(function() return t.ud:info() end)
  local f = ok and info and info.pid and io.open(("/proc/%d/exe"):format(info.pid))
  if f then
    f:close()
    return ("/proc/%d/exe"):format(info.pid)
  end
  local prog = type(t.argv) == "table" and t.argv[1]
  if type(prog) ~= "string" or prog:find("/", 1, true) then return prog end
  for d in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    f = io.open(d .. "/" .. prog)
    if f then
      f:close()
      return d .. "/" .. prog
    end
  end
end

local cache = {}

-- The values of the REPL's names: its kept locals (perfsh.replenv), then the globals.
local function values()
  local out = {}
  for _, t in ipairs{require("perfsh.replenv").env(), _G} do
    for _, v in pairs(t) do out[#out + 1] = v end
  end
  return ipairs(out)
end

-- What core.symbols or core.source_files give for every tracee among the REPL's names.
local function of_targets(what)
  local core = require "perfsh.core"
  local out = {}
  for _, v in values() do
    local mt = type(v) == "table" and getmetatable(v)
    if mt and rawget(mt, "__name") == "perfsh.tracee" then
      local path = program_of(v)
      local key = path and what .. "\0" .. path
      if key and not cache[key] then cache[key] = core[what](path) or {} end
      for _, s in ipairs(key and cache[key] or {}) do out[#out + 1] = s end
    end
  end
  return out
end

local event_names

--- Tab at the prompt: the completions of the word before @cursor (bytes) in @line, and where
-- that word starts (perfsh.complete does the work; this gives it the REPL's names).
function repl.complete(line, cursor)
  local env = {
    globals = require("perfsh.replenv").env(),
    events = function()
      if not event_names then
        event_names = {}
        for _, e in ipairs(require("perfsh.core").events("all")) do
          if e.usable then event_names[#event_names + 1] = e.name end
        end
      end
      return event_names
    end,
    symbols = function() return of_targets("symbols") end,
    sources = function() return of_targets("source_files") end,
  }
  return require("perfsh.complete").candidates(line, cursor, env)
end

--- A line that begins with ":" is a command: ":help [topic]". Returns the text to print.
function repl.command(line)
  local cmd, rest = line:match("^:(%S*)%s*(.-)%s*$")
  if cmd == "help" or cmd == "h" then return require("perfsh.help").text(rest) end
  return ("unknown command ':%s'; :help lists the functions"):format(cmd or "")
end

return repl
