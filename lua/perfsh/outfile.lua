--- perfsh.outfile: output files written whole or not at all. Each goes to a temporary file
-- beside it (".NAME.XXXXXX", core/base/outfile.c), renamed over it by o:commit() once complete;
-- o:abort(), or a program that fails before, removes it: the old file stays as it was. A FIFO
-- or a device (/dev/stdout) is written in place.
--   local o = assert(outfile.open("p.txt"))      o:write(...) ... o:commit()
--   outfile.write("base.json", function(o) o:write(text) end)
--   local o = outfile.reserve("run.psnap")        -- C writes o.tmp; o:commit() renames it
local core = require "perfsh.core"

local outfile = {}

local Out = {}
Out.__index = Out

-- The pending outputs of this Lua state: outfile.abort_all() drops them (a recipe that fails).
local pending = setmetatable({}, {__mode = "k"})

--- Reserve @path: o.tmp is the temporary file to write (empty; the mode the file will have),
-- or nil where @path is written in place; o.path is where it goes. Returns o, or nil and why
-- ("cannot write p.txt: Permission denied").
function outfile.reserve(path)
  if type(path) ~= "string" then error("bad argument #1 to 'reserve' (file name expected)", 2) end
  local tmp, final = core.outfile(path)
  if tmp == nil then return nil, final end
  local o = setmetatable({path = final, tmp = tmp or nil, name = path}, Out)
  pending[o] = true
  return o
end

--- Reserve @path (outfile.reserve) and open it for writing: o:write, o:flush as a file's.
function outfile.open(path)
  local o, why = outfile.reserve(path)
  if not o then return nil, why end
  local f, ferr = io.open(o.tmp or o.path, "w")
  if not f then
    o:abort()
    return nil, ("cannot write %s: %s"):format(path, (tostring(ferr):gsub("^.-: ", "")))
  end
  o.file = f
  return o
end

function Out:write(...)
  local ok, why = self.file:write(...)
  if not ok then
    self.failed = self.failed or why
    return nil, why
  end
  return self
end

function Out:flush() self.file:flush() return self end

--- Close and rename the temporary file over the destination. Returns true, or nil and why
-- (the temporary file is then removed; nothing was written, the old file is kept).
function Out:commit()
  if self.done then return true end
  self.done = true
  pending[self] = nil
  local failed = self.failed
  if io.type(self.file) == "file" then
    local ok, why = self.file:close()
    if not ok then failed = failed or why end
    self.file = nil
  end
  if failed then
    if self.tmp then os.remove(self.tmp) end
    return nil, ("cannot write %s: %s"):format(self.name, failed)
  end
  if not self.tmp then return true end
  local ok, why = os.rename(self.tmp, self.path)
  if not ok then
    os.remove(self.tmp)
    return nil, ("cannot write %s: %s"):format(self.name, (tostring(why):gsub("^.-: ", "")))
  end
  return true
end

--- Drop what was written: the temporary file is removed, the old file stays. Idempotent.
function Out:abort()
  if self.done then return end
  self.done = true
  pending[self] = nil
  if io.type(self.file) == "file" then self.file:close() end
  self.file = nil
  if self.tmp then os.remove(self.tmp) end
end

Out.__gc = Out.abort
Out.__close = function(self, err)
  if err ~= nil then self:abort() end
end

--- Write @path whole with fn(o): committed when fn returns, dropped when it raises (the error
-- goes on). Returns true, or nil and why when @path cannot be written.
function outfile.write(path, fn)
  local o, why = outfile.open(path)
  if not o then return nil, why end
  local ok, err = pcall(fn, o)
  if not ok then
    o:abort()
    error(err, 0)
  end
  return o:commit()
end

--- Drop every output not committed yet (a program that ends on an error).
function outfile.abort_all()
  local all = {}
  for o in pairs(pending) do all[#all + 1] = o end
  for _, o in ipairs(all) do o:abort() end
end

return outfile
