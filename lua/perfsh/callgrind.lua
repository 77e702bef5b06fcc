--- perfsh.callgrind: the deterministic engine. Runs a command under valgrind's callgrind,
-- collecting only inside one function (--toggle-collect), and reads callgrind's output file:
-- exact, repeatable instruction counts (Ir) and, with its simulators, cache and branch events,
-- on machines without a hardware PMU.
local fail = require "perfsh.fail"
local report = require "perfsh.report"

local M = {}

--- The events callgrind can give, in the order of its "events:" line.
M.events = {"Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi", "Bim"}
local needs = {Dr = "cache", Dw = "cache", I1mr = "cache", D1mr = "cache", D1mw = "cache", ILmr = "cache",
  DLmr = "cache", DLmw = "cache", Bc = "branch", Bcm = "branch", Bi = "branch", Bim = "branch"}
local aliases = {
  instructions = {"Ir"},
  cache = {"Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"},
  branch = {"Bc", "Bcm", "Bi", "Bim"},
  all = M.events,
}

--- The callgrind events a list of names asks for (callgrind's names, or instructions, cache,
-- branch, all; @cache and @branch as the presets of the counters engine); raises
-- "perfsh NAME: ..." for a name callgrind does not count.
function M.resolve(name, list)
  local out, seen = {}, {}
  local function add(e)
    if not seen[e] then
      seen[e] = true
      out[#out + 1] = e
    end
  end
  if list and #list == 0 then list = nil end
  for _, e in ipairs(list or {"Ir"}) do
    e = e:gsub("^@", "") -- the presets @cache and @branch: callgrind's simulators
    if aliases[e] then
      for _, a in ipairs(aliases[e]) do add(a) end
    elseif needs[e] or e == "Ir" then
      add(e)
    else
      fail.raise(("perfsh %s: --engine callgrind does not count '%s'; give some of %s (or instructions, cache, "
        .. "branch, all)"):format(name, e, table.concat(M.events, ",")))
    end
  end
  return out
end

--- valgrind's options for events: the cache and branch simulators when they are needed.
function M.sim_flags(events)
  local flags, on = {}, {}
  for _, e in ipairs(events) do
    local sim = needs[e]
    if sim and not on[sim] then
      on[sim] = true
      flags[#flags + 1] = "--" .. sim .. "-sim=yes"
    end
  end
  table.sort(flags)
  return flags
end

-- The function name a callgrind name stands for: "sum", "ns::K::f(int)" -> "ns::K::f"; a
-- recursion level ("walk'2") is not the function itself.
local function base_name(n)
  if n:find("'%d+$") then return nil end
  return (n:gsub("%b()$", ""))
end

--- Parse the text of a callgrind output file. Returns {events = names, totals = {event = n},
-- calls = the calls of func from outside it, seen = whether func ran at all}.
function M.parse(text, func)
  local res = {events = {}, totals = {}, calls = 0, seen = false}
  local names = {fn = {}, cfn = {}}
  local npos = 1
  local fn, cfn, pending_calls
  local totals_line
  for line in text:gmatch("[^\n]+") do
    local key, val = line:match("^(%a+)=(.*)$")
    if key == "fn" or key == "cfn" then
      -- name compression: "(id) name" defines, "(id)" refers (fn and cfn share the ids)
      local id, name = val:match("^%((%d+)%)%s*(.*)$")
      if id then
        if name ~= "" then names.fn[id] = name else name = names.fn[id] or "" end
      else
        name = val
      end
      if key == "fn" then fn = name else cfn = name end
      if base_name(name) == func then res.seen = true end
    elseif key == "calls" then
      pending_calls = math.tointeger(tonumber(val:match("^(%d+)")))
    elseif pending_calls then
      -- the cost line after calls=: the inclusive cost of those calls
      if cfn and base_name(cfn) == func and not (fn and fn:match("^" .. func:gsub("%p", "%%%0") .. "[(']"))
        and fn ~= func then
        res.calls = res.calls + pending_calls
      end
      pending_calls = nil
    elseif line:match("^events:") then
      for e in line:sub(8):gmatch("%S+") do res.events[#res.events + 1] = e end
    elseif line:match("^positions:") then
      npos = 0
      for _ in line:sub(11):gmatch("%S+") do npos = npos + 1 end
    elseif line:match("^totals:") or (not totals_line and line:match("^summary:")) then
      totals_line = line:match("^%a+:%s*(.*)$")
    end
  end
  if #res.events == 0 then error("callgrind output without an events: line", 0) end
  local i = 0
  for v in (totals_line or ""):gmatch("%S+") do
    i = i + 1
    if res.events[i] then res.totals[res.events[i]] = tonumber(v) end
  end
  for _, e in ipairs(res.events) do res.totals[e] = res.totals[e] or 0 end
  res.npos = npos
  return res
end

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function have_valgrind()
  local ok = os.execute("command -v valgrind >/dev/null 2>&1")
  return ok
end

-- Whether the program @prog defines the function @func (nm, in its symbol table).
local function defines(prog, func)
  local p = io.popen(("command -v %s 2>/dev/null"):format(quote(prog)))
  local path = p:read("l")
  p:close()
  if not path then return nil end
  p = io.popen(("nm --defined-only %s 2>/dev/null"):format(quote(path)))
  local found = false
  for l in p:lines() do
    local name = l:match("^%x*%s+[tTwWiI]%s+(%S+)$")
    if name and (name == func or name:match("^(.-)@") == func) then found = true end
  end
  p:close()
  return found
end

--- Check that @func can be measured by this engine: a plain function name. Raises one line.
local not_a_function = {sdt = "an SDT probe", marker = "a marker (an SDT pair)", addr = "an address",
  addr_range = "an address range", line_range = "a line range", libfunc = "a library function"}

function M.check_region(name, r)
  local _, rs = require("perfsh.cli").region_spec(r, name)
  local how = not_a_function[rs.kind]
  if how then
    fail.raise(("perfsh %s: --engine callgrind measures functions of the program only; '%s' is %s: use the default "
      .. "engine (--engine counters)"):format(name, r, how))
  end
end

--- Run @cmd (argv) under callgrind, collecting inside @func only, counting @events (quiet:
-- the command's stdout goes to /dev/null).
-- Returns {totals = {event = n}, hits = calls of func, status = exit status}; raises one line.
function M.measure(name, cmd, func, events, quiet)
  if not have_valgrind() then
    fail.raise(("perfsh %s: --engine callgrind needs valgrind, which is not installed (apt-get install valgrind)")
      :format(name))
  end
  M.check_region(name, func)
  local out = os.tmpname()
  local args = {"valgrind", "-q", "--tool=callgrind", "--callgrind-out-file=" .. out, "--dump-instr=no",
    "--collect-atstart=no", "--toggle-collect=" .. (func:find("::", 1, true) and (func .. "*") or func)}
  for _, f in ipairs(M.sim_flags(events)) do args[#args + 1] = f end
  -- through core.run, which passes SIGINT, SIGTERM and SIGHUP on to valgrind (os.execute would
  -- ignore SIGINT while it waits)
  local argv = {"sh", "-c", quiet and 'exec "$@" >/dev/null' or 'exec "$@"', "sh"}
  table.move(args, 1, #args, #argv + 1, argv)
  table.move(cmd, 1, #cmd, #argv + 1, argv)
  io.stdout:flush()
  local run, why = require("perfsh.core").run(argv, {})
  if not run then fail.raise(("perfsh %s: %s"):format(name, why)) end
  local how, code = run.exited and "exit" or "signal", run.exited and run.code or run.signo
  local ok = run.exited and run.code == 0
  local f = io.open(out)
  local text = f and f:read("a") or ""
  if f then f:close() end
  os.remove(out)
  if text == "" then
    fail.raise(("perfsh %s: callgrind wrote no output for %s (valgrind %s %s)"):format(name, table.concat(cmd, " "),
      how, tostring(code)))
  end
  local res = M.parse(text, func)
  if not res.seen and defines(cmd[1], func) == false then
    fail.raise(("perfsh %s: region '%s': no function '%s' in %s"):format(name, func, func, cmd[1]))
  end
  local status = ok and 0 or (how == "signal" and 128 + code or code)
  local totals = {}
  for _, e in ipairs(events) do totals[e] = res.totals[e] or 0 end
  return {totals = totals, hits = res.calls, status = status}
end

-- Region stats as report.print_table takes them: totals and means; per-hit spread is known
-- only for one hit (callgrind sums the calls).
local function stats_of(m, events)
  local st = {hits = m.hits}
  for _, e in ipairs(events) do
    local sum = m.totals[e]
    local mean = m.hits > 0 and sum / m.hits or 0 / 0
    local one = m.hits == 1 and sum or 0 / 0
    st[e] = {count = m.hits, sum = sum, mean = mean, min = one, p50 = one, p99 = one, max = one}
  end
  return st
end

local unsupported = {pid = "-p", every_call = "--every-call", per_thread = "--per-thread", save = "--save",
  trace = "--trace", hist = "--hist", per_cpu = "--per-cpu", sample = "--sample", every = "--every",
  groups = "-g", seconds = "--seconds", follow_fork = "--follow-fork", list = "--list", every_level = "--every-level",
  backend = "--backend", ring_pages = "--ring-pages"}

--- perfsh stat --engine callgrind: opts as scripts/stat.lua parsed and checked them (regions
-- and a command given), cmd the command, output(file) the report's file (-o, committed here:
-- cli.output; nil: stdout).
function M.stat(opts, cmd, output)
  for key, flag in pairs(unsupported) do
    if opts[key] then
      fail.raise(("perfsh stat: --engine callgrind does not take %s; drop it or use --engine counters"):format(flag))
    end
  end
  local events = M.resolve("stat", opts.events and require("perfsh.cli").split(opts.events))
  for _, r in ipairs(opts.regions) do M.check_region("stat", r) end
  local out = output(opts.output)
  local results, status = {}, 0
  for i, r in ipairs(opts.regions) do
    results[i] = M.measure("stat", cmd, r, events)
    status = results[i].status
  end
  if opts.csv then report.csv_header(out) end
  if not opts.csv then
    out:write(("perfsh stat: %s, exit %d; engine callgrind (simulated, deterministic); events %s\n\n")
      :format(table.concat(cmd, " "), status, table.concat(events, ",")))
  end
  for i, r in ipairs(opts.regions) do
    local st = stats_of(results[i], events)
    if opts.csv then
      report.csv_rows(out, r, events, st)
    else
      report.print_table(out, ("region %s (func, %d hit%s)"):format(r, st.hits, st.hits == 1 and "" or "s"),
        events, st)
      out:write("\n")
    end
  end
  if not opts.csv then
    out:write("callgrind: every instruction of the region and of what it calls, one valgrind run per region;\n"
      .. "min, p50, p99 and max are known for one hit only (callgrind sums the calls).\n")
  end
  if out ~= io.stdout then require("perfsh.cli").commit("stat", out) end
  return status
end

return M
