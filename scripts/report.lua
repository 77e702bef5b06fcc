-- report: print a report from a saved .psnap file
-- usage: perfsh report FILE.psnap [options]
local fail = require "perfsh.fail"
local cli = require "perfsh.cli"
local perfsh = cli.perfsh
local report = require "perfsh.report"
local export = require "perfsh.export"
local topo = require "perfsh.topology"

local def = {
  operands = true,
  stop_on_signal = true, -- nothing runs: SIGINT, SIGTERM, SIGHUP stop it at once
  description = [[
Prints the tables perfsh stat prints, from hits saved with perfsh stat --save FILE (or t:save(FILE)
in a script). A cut or damaged file gives its intact records, with one line on stderr saying what
was lost; a record with values no catcher writes (a counter or a clock that runs backwards, a
thread id or CPU out of range, a region no block names) is skipped and counted there, by reason.
A file with no readable record that was not closed whole (cut anywhere before its first record,
damaged, or still being written) exits with status 2, saying what survived of its header and
names. --hits-csv, --jsonl and --trace stream the hits in the order of the file (for a file
perfsh stat saved, the order they ended in): their memory does not grow with the file.]],
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
  if #rest ~= 1 then fail.raise("perfsh report: give one .psnap file (perfsh report --help)") end
  local ok, f = pcall(perfsh.load, rest[1])
  if not ok then fail.raise("perfsh report: " .. cli.reason(f)) end
  local regions = f.regions
  if opts.regions then
    local want, picked = {}, {}
    for _, n in ipairs(opts.regions) do want[n] = true end
    for _, r in ipairs(f.regions) do if want[r.name] then picked[#picked + 1] = r end end
    if #picked == 0 then
      local names = {}
      for _, r in ipairs(f.regions) do names[#names + 1] = r.name end
      fail.raise(("perfsh report: no region %s in %s (it has: %s)"):format(table.concat(opts.regions, ", "), rest[1],
        table.concat(names, ", ")))
    end
    regions = picked
  end
  local events = f:events()
  local names = {}
  for _, r in ipairs(f.regions) do names[r.id] = r.name end
  -- the tables are computed in C over the mapped records; the exports stream the hits of the
  -- regions asked for, one at a time in the order of the file
  local want
  if opts.regions then
    want = {}
    for _, r in ipairs(regions) do want[r.id] = true end
  end
  local function hits() return f:hits(want) end
  if opts.jsonl then
    export.jsonl(io.stdout, hits, events, names)
    return 0
  end
  if opts.hits_csv then
    export.csv(io.stdout, hits, events, names)
    return 0
  end
  if opts.trace then
    local out = cli.output("report", "--trace", opts.trace, true)
    export.trace(out, hits, events, names, tonumber(f.meta.pid))
    if not cli.commit("report", out) then return 1 end
  end
  report.regions(io.stdout, regions, {
    csv = opts.csv, every_call = opts.every_call, per_thread = opts.per_thread, events = events,
    detached = f.meta.detached == "1", catcher = f:losses().catcher,
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
