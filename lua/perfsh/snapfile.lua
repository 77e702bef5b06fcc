--- perfsh.snapfile: a .psnap file read back: perfsh.load("run.psnap").
-- It has .regions (perfsh.region objects), :events(), .meta, .info; r:hits() and r:stats()
-- work as on a live tracee.
local core = require "perfsh.core"
local Region = require "perfsh.region"

local snapfile = {}

local File = {}
File.__index = File
File.__name = "perfsh.snapfile"

function File:events() return self.info.events end
function File:record(i) return self.ud:record(i) end
function File:stats_of(id, by) return self.ud:stats(id, by) end
function File:series_of(id, k) return self.ud:series(id, k) end

function File:region_meta(id)
  local m = self.meta
  local args = m["args." .. id]
  local names
  if args then
    names = {}
    for a in args:gmatch("[^,]+") do names[#names + 1] = a end
  end
  return {
    id = id, name = self.info.regions[id + 1] or ("region " .. id), kind = m["kind." .. id] or "?",
    entries = tonumber(m["entries." .. id]), sampled = m["sampled." .. id] == "1", args = names,
    entry_counter = m["counter." .. id], running = tonumber(m["running." .. id]),
  }
end

--- The records the run that wrote the file lost ({catcher, lost, dropped, total}, as t:losses()).
function File:losses()
  local m = self.meta
  local lost, dropped = tonumber(m.lost) or 0, tonumber(m.dropped) or 0
  return {catcher = m.catcher, lost = lost, dropped = dropped, total = lost + dropped}
end

function File:close() self.ud:close() end
File.__close = File.close
function File:__tostring() return ("perfsh.snapfile(%s, %d records)"):format(self.path, self.info.records) end

--- Iterate every record of the file, in the order of the file; with ids (a set:
-- ids[r.id] = true), only the hits of those regions. One hit at a time: memory does not grow
-- with the file.
function File:hits(ids) return self.ud:hits(ids) end

--- perfsh.load(path [, {quiet = true}]): map a .psnap file. A truncated or damaged file gives
-- its intact records, with one line on stderr saying what was lost (info.warning; also
-- info.truncated, info.ignored_bytes; info.skipped: records skipped for values no catcher
-- writes, the warning says why; info.events_from: "copy" or "unknown" when the event names'
-- block was lost). info.lost counts the records lost to damage and the ones the run lost
-- (f:losses()). A file with no readable record that is not complete is an error that says what
-- survived of its header and names.
function snapfile.load(path, opts)
  local ud, msg = core.load(path)
  if not ud then error(msg, 2) end
  local info = ud:info()
  local f = setmetatable({ud = ud, path = path, info = info, meta = info.meta, regions = {}}, File)
  for id = 0, #info.regions - 1 do f.regions[#f.regions + 1] = Region.new(f, id) end
  info.lost = info.lost + f:losses().total
  if info.warning and not (opts and opts.quiet) then io.stderr:write("perfsh: ", info.warning, "\n") end
  return f
end

return snapfile
