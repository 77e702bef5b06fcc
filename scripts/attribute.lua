-- attribute: solve for the cost of each work unit of a function
-- usage: perfsh attribute -r FUNC --args A,B,C [-e EVENT] [--csv] [--] CMD [ARGS...]
local fail = require "perfsh.fail"
local cli = require "perfsh.cli"
local csv = require "perfsh.csv"
local perfsh = cli.perfsh

local def = {
  defaults = "attribute",
  description = [[
Records FUNC's first integer arguments (x86-64: rdi, rsi, rdx, ...) at each call, named A, B, C...,
and the counter EVENT over the call, then solves EVENT = a*A + b*B + c*C + k by least squares (SVD,
LAPACKE dgelsd) and prints the cost per unit of each argument and the constant, with the fit's
residual and condition number.]],
  example = "perfsh attribute -r touch_pages --args A,B,C -e page-faults examples/attribute 60 pages",
  options = {
    {"-r --region", "FUNC", "the function whose calls are measured", target = "func", hidden = "-f --function"},
    {"--args", "A,B,C", "names of the function's first integer arguments, in order"},
    {"-e --event", "EVENT", "what to attribute (default: {pmu} with a hardware PMU, else {none}); time_ns "
      .. "(on-CPU time) also works", hidden = "--events"},
    {"--csv", nil, "name,cost rows (const is the constant term)"},
    {"--no-const", nil, "fit without a constant term"},
    cli.backend_option,
  },
}

local function main(opts, cmd)
  if not opts.func then fail.raise("perfsh attribute: no function given (-r FUNC)") end
  if not opts.args then fail.raise("perfsh attribute: name the arguments with --args A,B,C") end
  if #cmd == 0 then fail.raise("perfsh attribute: no command given") end
  local names = cli.split{opts.args}
  local event = opts.event or perfsh.default_events("attribute")[1]
  local events = {}
  if event ~= "time_ns" then
    events = {event}
    cli.check_events("attribute", events)
  end
  local t = cli.start("attribute", cmd, nil, {events = events, backend = cli.backend("attribute", opts.backend)})
  if t.note then io.stderr:write("perfsh attribute: note: ", t.note, "\n") end
  local r = cli.arm("attribute", t, opts.func, {func = opts.func, args = names, inline = false})
  local status = t:run() -- nil: stopped by a signal (cli.finish says so)
  local sok, res = pcall(perfsh.attribute, r:list(), names, event, {const = not opts.no_const})
  t:close()
  if not sok then fail.raise("perfsh attribute: " .. cli.reason(res)) end
  if opts.csv then
    csv.write(io.stdout, {"name", "cost"})
    for _, n in ipairs(names) do csv.write(io.stdout, {n, ("%.6g"):format(res.costs[n])}) end
    if not opts.no_const then csv.write(io.stdout, {"const", ("%.6g"):format(res.const)}) end
  else
    print(("perfsh attribute: %s over %d calls of %s"):format(event, res.n, opts.func))
    for _, n in ipairs(names) do print(("  %-12s %16.4f per unit"):format(n, res.costs[n])) end
    if not opts.no_const then print(("  %-12s %16.4f per call"):format("const", res.const)) end
    print(("  fit: rms residual %.4g, condition number %.3g, rank %d"):format(res.rms, res.cond, res.rank))
  end
  return cli.finish("attribute", true, nil, status)
end

cli.run(def, main)
