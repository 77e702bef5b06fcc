-- ipc: instructions per cycle of a region, per hit
-- usage: perfsh ipc -r REGION [-r REGION...] [--csv] [--] CMD [ARGS...]
local fail = require "perfsh.fail"
local cli = require "perfsh.cli"
local csv = require "perfsh.csv"
local core = cli.core
local metrics = require "perfsh.metrics"

local def = {
  description = [[
Counts instructions and cycles over every hit of each region and prints the IPC of the whole region
(sum of instructions / sum of cycles) and the distribution of the per-hit IPC (min, p50, p90, p99,
max). Needs a hardware PMU.]],
  example = "perfsh ipc -r sum examples/sum",
  options = {
    {"-r --region", "R", "a function or a line range, as for perfsh stat; may be repeated", count = "*",
      target = "regions", hidden = "-f --function"},
    {"--csv", nil, "region,hits,ipc,min,p50,p90,p99,max rows"},
    cli.backend_option,
  },
}

local function main(opts, cmd)
  if not opts.regions then fail.raise("perfsh ipc: no region given (-r FUNCTION)") end
  if #cmd == 0 then fail.raise("perfsh ipc: no command given") end
  if not core.pmu_present() then
    fail.raise("perfsh ipc: needs the instructions and cycles counters, and this machine has no hardware PMU")
  end
  local backend = cli.regions_backend("ipc", opts.backend, opts.regions, nil, opts.pid ~= nil)
  local t = cli.start("ipc", cmd, nil, {events = {"instructions", "cycles"}, backend = backend})
  if t.note then io.stderr:write("perfsh ipc: note: ", t.note, "\n") end
  for _, r in ipairs(opts.regions) do cli.arm("ipc", t, r, cli.region_spec(r, "ipc")) end
  local status = t:run() -- nil: stopped by a signal (cli.finish says so)
  local _, lost = cli.caught(t)
  if lost ~= "" then io.stderr:write("perfsh ipc: ", lost:sub(3), "\n") end
  if opts.csv then csv.write(io.stdout, {"region", "hits", "ipc", "min", "p50", "p90", "p99", "max"}) end
  for _, r in ipairs(t.regions) do
    local per = {}
    for h in r:hits() do
      local ipc = not (h.unwound or h.exited) and metrics.value(h, "ipc")
      if ipc then per[#per + 1] = ipc end
    end
    local st, d = r:stats(), core.stats(per)
    if opts.csv then
      local row = {r.name, ("%d"):format(st.hits)}
      for _, v in ipairs{st.ipc or 0, d.min, d.p50, d.p90, d.p99, d.max} do row[#row + 1] = ("%.4f"):format(v) end
      csv.write(io.stdout, row)
    else
      print(("region %s: %d hits, IPC %.3f (per hit: min %.3f, p50 %.3f, p90 %.3f, p99 %.3f, max %.3f)")
        :format(r.name, st.hits, st.ipc or 0, d.min, d.p50, d.p90, d.p99, d.max))
    end
  end
  t:close()
  return cli.finish("ipc", true, nil, status)
end

cli.run(def, main)
