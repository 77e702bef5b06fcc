--- perfsh.presets: named event sets, given as -e @NAME to perfsh stat, tail and count.
-- Each preset is a list of rows; a row lists one quantity's events by perf's generic names,
-- the preferred one first and its fallbacks after it. A preset keeps, for each row, the first
-- event that opens on this machine, and says in one line which rows it dropped.
--   presets.expand("cache")  -> {"cache-references", ...}, {"LLC-loads", ...} (kept, dropped)
--   presets.events("stat", {"@ipc", "task-clock"})  -> the list with the preset put in
local fail = require "perfsh.fail"
local presets = {}

presets.sets = {
  -- instructions per cycle; TSC ticks stand in for the reference cycles (the msr PMU)
  ipc = {{"instructions"}, {"cycles", "cpu-cycles"}, {"ref-cycles", "msr/tsc/"}},
  -- last-level and L1 data cache traffic
  cache = {{"cache-references", "LLC-loads"}, {"cache-misses", "LLC-load-misses"}, {"L1-dcache-loads"},
    {"L1-dcache-load-misses"}},
  -- branches and their mispredictions
  branch = {{"branches", "branch-instructions", "branch-loads"}, {"branch-misses", "branch-load-misses"}},
  -- address translation: TLB loads and misses, and the page faults (software: translations no
  -- TLB or page walk completed)
  tlb = {{"dTLB-loads"}, {"dTLB-load-misses"}, {"iTLB-loads"}, {"iTLB-load-misses"}, {"page-faults"}},
}

--- The names of the presets, sorted.
function presets.names()
  local out = {}
  for k in pairs(presets.sets) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- Whether @event opens on this thread, alone; else nil and why.
local function opens(event)
  local core = require "perfsh.core"
  local ok, g, why = pcall(core.group, {event})
  if ok and g then
    g:close()
    return true
  end
  return nil, ok and why or g
end

--- The events of preset @name that open here (opens(event) -> true | nil, why; default: open it
-- on this thread), and the rows dropped (their first names) with the first reason.
-- Raises for an unknown preset.
function presets.expand(name, opener)
  local set = presets.sets[name]
  if not set then
    error(("no preset '%s'; give one of @%s"):format(tostring(name), table.concat(presets.names(), ", @")), 0)
  end
  local kept, dropped, reason = {}, {}, nil
  for _, row in ipairs(set) do
    local found
    for _, e in ipairs(row) do
      local ok, why = (opener or opens)(e)
      if ok then
        found = e
        break
      end
      reason = reason or why
    end
    if found then kept[#kept + 1] = found else dropped[#dropped + 1] = row[1] end
  end
  return kept, dropped, reason
end

-- Why events do not open, in a few words: the kernel's reason without "perf_event_open(x): ".
local function short(why)
  why = tostring(why or "they do not open here"):gsub("^perf_event_open%([^)]*%):%s*", "")
  return (why:gsub("%s*%(.*$", ""))
end

--- Print each preset, its rows (event | fallback ...) and what it counts here (perfsh --list
-- presets). Returns 0.
function presets.print(out, opener)
  out = out or io.stdout
  out:write("preset event sets (-e @NAME; a row's first event that opens here is counted):\n")
  for _, name in ipairs(presets.names()) do
    local rows = {}
    for i, row in ipairs(presets.sets[name]) do rows[i] = table.concat(row, " | ") end
    local kept = presets.expand(name, opener)
    out:write(("  @%-8s %s\n  %-9s here: %s\n"):format(name, table.concat(rows, ", "), "",
      #kept > 0 and table.concat(kept, ",") or "none open"))
  end
  return 0
end

--- Expand every "@NAME" in the event list @list (recipe @recipe names the messages): a note on
-- stderr names what a preset dropped; a preset with nothing left raises one line.
function presets.events(recipe, list, opener)
  local out = {}
  for _, e in ipairs(list) do
    local name = e:match("^@(.*)$")
    if not name then
      out[#out + 1] = e
    else
      local ok, kept, dropped, why = pcall(presets.expand, name, opener)
      if not ok then fail.raise(("perfsh %s: %s"):format(recipe, kept)) end
      if #kept == 0 then
        fail.raise(("perfsh %s: preset @%s: none of its events open here (%s: %s dropped); give events with -e "
          .. "(perfsh --list lists them)"):format(recipe, name, short(why), table.concat(dropped, ", ")))
      end
      if #dropped > 0 then
        io.stderr:write(("perfsh %s: note: preset @%s: dropped %s (%s); counting %s\n"):format(recipe, name,
          table.concat(dropped, ", "), short(why), table.concat(kept, ",")))
      end
      for _, k in ipairs(kept) do out[#out + 1] = k end
    end
  end
  return out
end

return presets
