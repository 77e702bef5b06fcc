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

return repl
