-- examples/check.lua - a regression gate for CI: fail when a function gets slower.
--
--   perfsh examples/check.lua ./examples/sum sum 20000
--
-- Runs the program, counts every call of the function, and exits 1 when the median cost per
-- call is over budget (instructions where the machine has a PMU, else on-CPU microseconds).
local perfsh = require "perfsh"

local prog, func, budget = arg[1], arg[2], tonumber(arg[3])
if not (prog and func and budget) then
  io.stderr:write("usage: perfsh examples/check.lua PROGRAM FUNCTION BUDGET\n")
  os.exit(2)
end

local hw = perfsh.core.pmu_present()
local t <close> = perfsh.spawn{prog, events = {hw and "instructions" or "task-clock"}, stdout = "/dev/null"}
local r = t:region{func = func}
local status = t:run()
local st = r:stats()
local median = hw and st.instructions.p50 or st.time_ns.p50 / 1000
local unit = hw and "instructions" or "us on-CPU"
print(("%s: %d calls, median %.1f %s per call, budget %.1f"):format(func, st.hits, median, unit, budget))
if status.code ~= 0 or st.hits == 0 then
  print("FAIL: the program did not run to the end, or never called " .. func)
  os.exit(1)
end
if median > budget then
  print(("FAIL: %s is %.1f%% over budget"):format(func, 100 * (median / budget - 1)))
  os.exit(1)
end
print("ok")
