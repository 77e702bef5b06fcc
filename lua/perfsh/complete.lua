--- perfsh.complete: what Tab offers at the REPL prompt, as a pure function of the line.
--   complete.candidates(line, cursor, env) -> sorted candidates, start
-- line: the text typed; cursor: the number of bytes before the cursor; start: the 1-based
-- position where the word the candidates replace begins. env:
--   globals   the table names are looked up in (_G at the REPL)
--   events()  the event names that open on this machine
--   symbols() the function names of the loaded target(s), or nil
--   sources() the source files of the loaded target(s), or nil
local complete = {}

local function sorted_unique(list)
  local seen, out = {}, {}
  for _, s in ipairs(list) do
    if not seen[s] then seen[s], out[#out + 1] = true, s end
  end
  table.sort(out)
  return out
end

local function starts(s, prefix) return s:sub(1, #prefix) == prefix end

-- The keys of a table and of the tables its metatables' __index chain leads to. methods: only
-- functions; names beginning with "__" only when the prefix asks for them.
local function fields(v, prefix, methods)
  local out, seen = {}, {}
  local hidden = not starts(prefix, "__")
  for _ = 1, 8 do
    if type(v) == "table" and not seen[v] then
      seen[v] = true
      for k, x in pairs(v) do
        if type(k) == "string" and k:match("^[%a_][%w_]*$") and starts(k, prefix)
          and (not methods or type(x) == "function") and not (hidden and starts(k, "__")) then
          out[#out + 1] = k
        end
      end
    end
    local mt = getmetatable(v)
    if type(mt) ~= "table" or type(rawget(mt, "__index")) ~= "table" then break end
    v = rawget(mt, "__index")
  end
  return out
end

-- Look a field up without running code: raw gets through tables and their __index tables.
local function get(v, k)
  for _ = 1, 8 do
    if type(v) == "table" then
      local x = rawget(v, k)
      if x ~= nil then return x end
    end
    local mt = getmetatable(v)
    if type(mt) ~= "table" or type(rawget(mt, "__index")) ~= "table" then return nil end
    v = rawget(mt, "__index")
  end
end

-- The start of the string literal the cursor is in, or nil, or false in a comment.
local function open_string(text)
  local i, quote, start = 1, nil, nil
  while i <= #text do
    local c = text:sub(i, i)
    if quote then
      if c == "\\" then i = i + 1 elseif c == quote then quote = nil end
    elseif c == '"' or c == "'" then
      quote, start = c, i
    elseif text:sub(i, i + 1) == "--" then
      return false
    end
    i = i + 1
  end
  return quote and start or nil
end

-- What a string at the end of @before names: "events", "region" or nil.
local function string_kind(before)
  local b = before:gsub("%s+", " ")
  if b:match("events ?= ?{[^}]*$") or b:match("perfsh%.group ?%(? ?{[^}]*$")
    or b:match("perfsh%.group ?%( ?$") or b:match("perfsh%.group ?$") then
    return "events"
  end
  if b:match("region ?%(? ?{[^}]*$") or b:match("region ?%( ?$") or b:match("region ?$") then
    return "region"
  end
end

local function from_list(list, prefix, out)
  for _, s in ipairs(list or {}) do
    if starts(s, prefix) then out[#out + 1] = s end
  end
end

-- Source files whose path, or any tail of it after a "/", begins with @prefix; each as
-- that tail plus ":" (a line number follows).
local function sources(list, prefix, out)
  for _, f in ipairs(list or {}) do
    local p = 1
    while p do
      if starts(f:sub(p), prefix) then
        out[#out + 1] = f:sub(p) .. ":"
        break
      end
      p = f:find("/", p, true)
      p = p and p + 1
    end
  end
end

local function call(f)
  if type(f) ~= "function" then return nil end
  local ok, v = pcall(f)
  return ok and v or nil
end

function complete.candidates(line, cursor, env)
  local text = line:sub(1, cursor or #line)
  local q = open_string(text)
  if q == false then return {}, #text + 1 end
  if q then
    local word, kind = text:sub(q + 1), string_kind(text:sub(1, q - 1))
    local out = {}
    if kind == "events" then
      from_list(call(env.events), word, out)
    elseif kind == "region" then
      local key = text:sub(1, q - 1):match("([%a_]+)%s*=%s*$")
      if key ~= "from" and key ~= "to" and key ~= "range" then from_list(call(env.symbols), word, out) end
      -- a path typed so far stays; candidates continue it (examples/su -> examples/sum.c:)
      if key ~= "func" then sources(call(env.sources), word, out) end
    end
    return sorted_unique(out), q + 1
  end
  local expr = text:match("[%w_%.:]*$")
  local start = #text - #expr + 1
  if expr:match("^%d") then return {}, start end
  local head, sep, last = expr:match("^(.*)([%.:])([%w_]*)$")
  if head == "" then return {}, #text - #last + 1 end
  if not head then
    return sorted_unique(fields(env.globals or {}, expr)), start
  end
  local v = env.globals or {}
  for name in head:gmatch("[^%.:]+") do
    v = get(v, name)
    if v == nil then return {}, #text - #last + 1 end
  end
  if head:find(":", 1, true) then return {}, #text - #last + 1 end
  if type(v) == "string" then v = string end
  return sorted_unique(fields(v, last, sep == ":")), #text - #last + 1
end

return complete
