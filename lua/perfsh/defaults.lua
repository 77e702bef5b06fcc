--- perfsh.defaults: the events counted when none are given, the one place they are defined,
-- and the catcher of hits the recipes use.
-- Each use has a set for a machine with a hardware PMU and one for a machine without (a VM
-- without PMU passthrough: software events only).
--   defaults.events()            -> {"instructions", "cycles"} or {"task-clock", "page-faults"}
--   defaults.events("command")   -> what perfsh count and perfsh.run count
local core = require "perfsh.core"

local defaults = {}


local sets = {
  -- a region's hits: perfsh stat, perfsh.spawn{} and perfsh.attach() (so the REPL too)
  region = {pmu = {"instructions", "cycles"}, none = {"task-clock", "page-faults"}},
  -- a whole command (perfsh count, perfsh.run): also its time on the CPU, or its context switches
  command = {pmu = {"instructions", "cycles", "task-clock"}, none = {"task-clock", "page-faults", "context-switches"}},
  -- slow hits (perfsh tail): also what often makes a hit slow
  tail = {pmu = {"instructions", "cycles", "cache-misses"}, none = {"task-clock", "page-faults", "context-switches"}},
  -- the one counter perfsh attribute splits over the work units
  attribute = {pmu = {"instructions"}, none = {"task-clock"}},
}

local function set_of(use, level)
  local set = sets[use or "region"]
  if not set then
    local names = {}
    for k in pairs(sets) do names[#names + 1] = k end
    table.sort(names)
    error(("bad argument #1 to 'default_events' (no use '%s'; use %s)"):format(tostring(use),
      table.concat(names, ", ")), level + 1)
  end
  return set
end

--- The events @use (default "region") counts here when none are given: a new array.
function defaults.events(use)
  local set = set_of(use, 2)
  local out = {}
  for i, e in ipairs(core.pmu_present() and set.pmu or set.none) do out[i] = e end
  return out
end

--- The catcher used when none is named (--backend, backend =): $PERFSH_BACKEND (auto, uprobe
-- or ptrace), else "auto" (uprobe where it works, so the program never stops for a hit and a
-- perfsh that dies leaves it unharmed; ptrace otherwise, with a note). A bad value is an error
-- naming the variable.
function defaults.backend()
  local b = os.getenv("PERFSH_BACKEND")
  if b == nil or b == "" then return "auto" end
  if b ~= "auto" and b ~= "uprobe" and b ~= "ptrace" then
    error(("PERFSH_BACKEND=%s; give auto, uprobe or ptrace"):format(b), 0)
  end
  return b
end

--- A recipe's usage text with @use's two sets put in at "{pmu}" and "{none}" (comma lists).
function defaults.usage(text, use)
  local set = set_of(use, 2)
  return (text:gsub("{pmu}", table.concat(set.pmu, ",")):gsub("{none}", table.concat(set.none, ",")))
end

return defaults
