-- bench/gate_power.lua - the "Done when" procedure of perfsh check with the counters engine
-- (issue 16): a function of about 2.5 us a call, called 2,000 times (tests/fixtures/check_work.c
-- with N iterations), and the same function built with twice the work (-DWORK=2). Records a
-- baseline of the first build, then checks TRIES times the unchanged build and TRIES times the
-- slower one, each put at the baseline's path as a rebuild would be, and prints each verdict, the
-- change, the detectable change and the limit.
--
--   ./perfsh bench/gate_power.lua [TRIES [N [CALLS [WORK]]]] [-- CHECK-OPTIONS...]
--       defaults 5, 2800, 2000, 2 (the slower build's work factor: 1.1 is 10% more work)
--   ./perfsh bench/gate_power.lua 5 -- --backend uprobe
--   ./perfsh bench/gate_power.lua 5 5000000 1 1.1 -- --backend uprobe     (examples/sum-sized work)
--
-- Exits 0 when every unchanged try passed (exit 0) and every slower try failed (exit 1).
local args, opts = {}, {}
local into = args
for _, a in ipairs(arg) do
  if a == "--" and into == args then into = opts else into[#into + 1] = a end
end
local tries, n, calls, work = tonumber(args[1] or 5), args[2] or "2800", args[3] or "2000", args[4] or "2"
local perfsh = os.getenv("PERFSH") or "./perfsh"
local extra = table.concat(opts, " ")

local sh = dofile("tests/support.lua").sh

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir .. "/same " .. dir .. "/slow " .. dir .. "/run"))
local function build(sub, def)
  local _, err, rc = sh(("cc -O2 -g %s -o %s/%s/check_work tests/fixtures/check_work.c"):format(def, dir, sub))
  assert(rc == 0, err)
end
build("same", "")
build("slow", "-DWORK=" .. work)
local run = dir .. "/run/check_work"
local function put(sub) assert(os.execute(("cp %s/%s/check_work %s"):format(dir, sub, run))) end

put("same")
local out, err, rc = sh(("%s check --engine counters %s -r work --save-baseline %s/base.json %s %s %s"):format(perfsh,
  extra, dir, run, n, calls))
io.write(out, err)
if rc ~= 0 then
  os.execute("rm -rf " .. dir)
  os.exit(1)
end
local right = 0
for _, build_ in ipairs{"same", "slow"} do
  put(build_)
  for i = 1, tries do
    out, err, rc = sh(("%s check --baseline %s/base.json %s %s %s"):format(perfsh, dir, run, n, calls))
    local row = out:match("\n  work +time_ns +[^\n]*") or ""
    local w = {}
    for word in row:gmatch("%S+") do w[#w + 1] = word end
    local want = build_ == "same" and 0 or 1
    if rc == want then right = right + 1 end
    print(("%s build, try %d: exit %d (%s), change %s, detectable %s, limit %s; %s%s"):format(build_, i, rc,
      rc == want and "right" or "WRONG", w[6] or "?", w[7] or "?", w[8] or "?",
      out:match("\n(detectable: [^\n]*)") or "", err ~= "" and "; " .. err:gsub("\n$", "") or ""))
  end
end
print(("gate_power: %d of %d verdicts right (the unchanged build passes with exit 0, the slower fails with exit 1)")
  :format(right, 2 * tries))
os.execute("rm -rf " .. dir)
os.exit(right == 2 * tries and 0 or 1)
