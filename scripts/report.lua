-- report: print a report from a saved .psnap file
-- usage: perfsh report FILE.psnap [options]
local cli = require "perfsh.cli"
local perfsh = cli.perfsh
local report = require "perfsh.report"
local export = require "perfsh.export"
local topo = require "perfsh.topology"

local def = {
  operands = true,
  description = [[
Prints the tables perfsh stat prints, from hits saved with perfsh stat --save FILE (or t:save(FILE)
in a script). A cut or damaged file gives its intact records, with one line on stderr saying what
was lost; a file with nothing readable left exits with status 2.]],
  example = {"perfsh stat -r sum --save sum.psnap examples/sum", "perfsh report sum.psnap --per-thread"},
  options = {
    {"--csv", nil, "region,event,hits,total,mean,min,p50,p99,max,scaling rows"},
    {"--per-thread", nil, "one table per region and thread"},
    {"--every-call", nil, "one row per hit"},
    {"--hist", nil, "a histogram of each region's hit times"},
    {"--per-cpu", nil, "each region by CPU, core and L3 domain"},
    {"--jsonl", nil, "every hit as one JSON object per line"},
    {"--hits-csv", nil, "every hit as one CSV row"},
    {"--trace", "FILE", "write a Chrome/Perfetto trace (JSON)"},
    {"-r --region", "NAME", "only this region (may be repeated)", count = "*", target = "regions"},
  },
}

local function main(opts, rest)
  if #rest ~= 1 then error("perfsh report: give one .psnap file (perfsh report --help)", 0) end
  local ok, f = pcall(perfsh.load, rest[1])
  if not ok then error("perfsh report: " .. cli.reason(f), 0) end
  local regions = f.regions
  if opts.regions then
    local want, picked = {}, {}
    for _, n in ipairs(opts.regions) do want[n] = true end
    for _, r in ipairs(f.regions) do if want[r.name] then picked[#picked + 1] = r end end
    if #picked == 0 then
      local names = {}
      for _, r in ipairs(f.regions) do names[#names + 1] = r.name end
      error(("perfsh report: no region %s in %s (it has: %s)"):format(table.concat(opts.regions, ", "), rest[1],
        table.concat(names, ", ")), 0)
    end
    regions = picked
  end
  local events = f:events()
  local names = {}
  for _, r in ipairs(f.regions) do names[r.id] = r.name end
  -- the tables are computed in C over the mapped records; hit tables only for the exports
  local hits = {}
  if opts.jsonl or opts.hits_csv or opts.trace then
    for _, r in ipairs(regions) do for h in r:hits() do hits[#hits + 1] = h end end
    table.sort(hits, function(a, b) return a.seq < b.seq end)
  end
  if opts.jsonl then
    export.jsonl(io.stdout, hits, events, names)
    return 0
  end
  if opts.hits_csv then
    export.csv(io.stdout, hits, events, names)
    return 0
  end
  if opts.trace then
    local out, why = io.open(opts.trace, "w")
    if not out then error("perfsh report: cannot write the trace: " .. why, 0) end
    export.trace(out, hits, events, names, tonumber(f.meta.pid))
    out:close()
  end
  report.regions(io.stdout, regions, {
    csv = opts.csv, every_call = opts.every_call, per_thread = opts.per_thread, events = events,
    detached = f.meta.detached == "1",
    header = ("perfsh report: %s: %s; %d records%s; events %s"):format(rest[1], f.meta.command or "?",
      f.info.records, report.losses(f:losses()), table.concat(events, ",")),
  })
  if not opts.csv and opts.hist then
    for _, r in ipairs(regions) do
      export.histogram(io.stdout, r:series("time_ns"), {title = "region " .. r.name .. ", on-CPU time per hit"})
      io.stdout:write("\n")
    end
  end
  if not opts.csv and opts.per_cpu then
    for _, r in ipairs(regions) do topo.print_breakdown(io.stdout, r, events) end
  end
  f:close()
  return 0
end

cli.run(def, main)
