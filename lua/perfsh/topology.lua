--- perfsh.topology: where the hits ran. Each hit records the CPU at its start and its end;
-- the machine's topology (package, core, L3 domain, from sysfs) groups them.
local core = require "perfsh.core"
local report = require "perfsh.report"

local topology = {}

--- The machine's CPUs: topo[cpu] = {cpu, package, die, core, l3}; topo.n CPUs online.
function topology.read(root)
  return core.topology(root)
end

-- The keys a hit started on @cpu is grouped under: its CPU, its core, its L3 domain.
local function places(topo, cpu)
  local c = topo[cpu]
  if not c then return ("cpu%d"):format(cpu), "unknown", "unknown" end
  return ("cpu%d"):format(cpu), ("pkg%d/core%d"):format(c.package, c.core),
    c.l3 >= 0 and ("L3 #%d"):format(c.l3) or "L3 unknown"
end

--- Group a region's complete hits by CPU, by core and by L3 domain (by the CPU the hit
-- started on) and count the hits that ended on another CPU than they started on.
-- Returns {cpu = {[key] = {hits...}}, core = {...}, l3 = {...}, migrated = n, total = n}.
function topology.breakdown(hits, topo)
  topo = topo or core.topology()
  local out = {cpu = {}, core = {}, l3 = {}, migrated = 0, total = 0}
  local function add(t, k, h)
    t[k] = t[k] or {}
    table.insert(t[k], h)
  end
  for _, h in ipairs(hits) do
    if not (h.unwound or h.exited) then
      out.total = out.total + 1
      if h.cpu_end ~= h.cpu_start then out.migrated = out.migrated + 1 end
      local cpu, core_key, l3 = places(topo, h.cpu_start)
      add(out.cpu, cpu, h)
      add(out.core, core_key, h)
      add(out.l3, l3, h)
    end
  end
  return out
end

local function keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

--- Print the breakdown of a region as tables: hits and mean of each event per CPU, core, L3.
-- The statistics of each CPU (region:stats_by("cpu"), from the records in C) add up to those of a
-- core and of an L3 domain: hits, and the sums that make the means.
function topology.print_breakdown(out, region, events, topo)
  topo = topo or core.topology()
  local b = {cpu = {}, core = {}, l3 = {}, migrated = 0, total = 0}
  local function add(t, k, st)
    local a = t[k] or {hits = 0, time_ns = 0}
    t[k] = a
    a.hits, a.time_ns = a.hits + st.hits, a.time_ns + st.time_ns.sum
    for _, e in ipairs(events) do a[e] = (a[e] or 0) + st[e].sum end
  end
  for _, st in ipairs(region:stats_by("cpu")) do
    if st.hits > 0 then
      b.total, b.migrated = b.total + st.hits, b.migrated + st.migrated
      local cpu, core_key, l3 = places(topo, st.cpu)
      add(b.cpu, cpu, st)
      add(b.core, core_key, st)
      add(b.l3, l3, st)
    end
  end
  out:write(("region %s by CPU (the CPU a hit started on; %d of %d hits migrated before they ended)\n")
    :format(region.name, b.migrated, b.total))
  for _, level in ipairs{"cpu", "core", "l3"} do
    local head = ("  %-16s %8s %14s"):format(level == "cpu" and "cpu" or level == "core" and "core" or "L3 domain",
      "hits", "time mean us")
    for _, e in ipairs(events) do head = head .. ("  %16s"):format(e .. " mean") end
    out:write(head, "\n")
    for _, k in ipairs(keys(b[level])) do
      local a = b[level][k]
      local line = ("  %-16s %8d %14.3f"):format(k, a.hits, a.time_ns / a.hits / 1000)
      for _, e in ipairs(events) do line = line .. ("  %16s"):format(report.human(a[e] / a.hits)) end
      out:write(line, "\n")
    end
  end
  out:write("\n")
end

return topology
