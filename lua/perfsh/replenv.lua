--- perfsh.replenv: the REPL's environment, where a chunk's top-level locals live on.
-- Typed line by line, `local t = perfsh.spawn{...}` then `t:run()` must work as in a script.
-- Each chunk runs with _ENV = replenv.env(): names read there first, then the globals;
-- assignments to globals go to _G as usual. replenv.rewrite(code) appends to a chunk that
-- declares top-level locals one call that copies them into the environment when the chunk
-- ends (or before its top-level return), so the chunk itself runs unchanged: its locals
-- keep their scope, `local function f` can call itself, and `local x <close>` is closed at
-- the end of its chunk, as Lua says, and not kept.
local replenv = {}

local KEEP = "\0perfsh_keep" -- the key of the copying function in the environment

local env
local function keep(...)
  for i = 1, select("#", ...), 2 do
    local name, value = select(i, ...)
    rawset(env, name, value)
  end
end

--- The REPL's environment (one per Lua state): its own names (the locals kept), then, through
-- __index tables (so Tab completion walks them), the copying function and the globals.
function replenv.env()
  if not env then
    env = setmetatable({}, {__index = setmetatable({[KEEP] = keep}, {__index = _G}), __newindex = _G})
  end
  return env
end

-- The tokens of Lua @code that matter here: names and keywords with their byte offset;
-- strings, comments and numbers skipped; other characters as themselves.
local function tokens(code)
  local out, i, n = {}, 1, #code
  local function long_bracket(at)
    local eq = code:match("^%[(=*)%[", at)
    if not eq then return nil end
    local _, stop = code:find("]" .. eq .. "]", at, true)
    return (stop or n) + 1
  end
  while i <= n do
    local c = code:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif code:sub(i, i + 1) == "--" then
      i = long_bracket(i + 2) or ((code:find("\n", i, true) or n) + 1)
    elseif c == "[" and long_bracket(i) then
      i = long_bracket(i)
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n and code:sub(j, j) ~= c do
        j = j + (code:sub(j, j) == "\\" and 2 or 1)
      end
      i = j + 1
    elseif c:match("[%a_]") then
      local word = code:match("^[%w_]+", i)
      out[#out + 1] = {word, i}
      i = i + #word
    elseif c:match("%d") or c == "." and code:sub(i + 1, i + 1):match("%d") then
      i = i + #code:match("^[%w_.]+", i)
    else
      out[#out + 1] = {c, i}
      i = i + 1
    end
  end
  return out
end

local opens = {["function"] = true, ["if"] = true, ["do"] = true, ["repeat"] = true}
local closes = {["end"] = true, ["until"] = true}

--- The names of @code's top-level locals, less the <close> ones, in order (a name once), and
-- the offset of its top-level return (nil: none).
function replenv.top_locals(code)
  local toks, depth, names, seen, ret = tokens(code), 0, {}, {}, nil
  local function add(name)
    if not seen[name] then
      seen[name] = true
      names[#names + 1] = name
    end
  end
  local k = 1
  while k <= #toks do
    local w = toks[k][1]
    if opens[w] then
      depth = depth + 1
    elseif closes[w] then
      depth = depth - 1
    elseif depth == 0 and w == "return" then
      ret = ret or toks[k][2]
    elseif depth == 0 and w == "local" and toks[k + 1] and toks[k + 1][1] == "function" then
      if toks[k + 2] then add(toks[k + 2][1]) end
      depth = depth + 1 -- the function's body
      k = k + 2
    elseif depth == 0 and w == "local" then
      repeat
        k = k + 1
        local name = toks[k] and toks[k][1]
        if not name or not name:match("^[%a_]") then break end
        local attrib = toks[k + 1] and toks[k + 1][1] == "<" and toks[k + 2] and toks[k + 2][1]
        if attrib then k = k + 3 end
        if attrib ~= "close" then add(name) end
        k = k + 1
      until not toks[k] or toks[k][1] ~= ","
      k = k - 1
    end
    k = k + 1
  end
  return names, ret
end

--- @code with one call that keeps its top-level locals in the environment added where the
-- chunk ends (before a top-level return), or nil when it declares none.
function replenv.rewrite(code)
  local names, ret = replenv.top_locals(code)
  if #names == 0 then return nil end
  local args = {}
  for _, name in ipairs(names) do args[#args + 1] = ("%q, %s"):format(name, name) end
  local call = (";_ENV[%q](%s)"):format(KEEP, table.concat(args, ", "))
  if ret then return code:sub(1, ret - 1) .. call .. " " .. code:sub(ret) end
  return code .. "\n" .. call
end

return replenv
