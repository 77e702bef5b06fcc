-- Event names: libpfm4, sysfs, raw; suggestions; listing.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")

describe("perfsh.core.resolve()", function()
  local rows = {
    {"instructions", 0, 1, true, false, "libpfm4"},
    {"instructions:k", 0, 1, false, true, "libpfm4"},
    {"perf::cycles", 0, 0, true, false, "libpfm4"},
    {"task-clock", 1, 1, true, false, "libpfm4"},
    {"context-switches", 1, 3, true, false, "libpfm4"},
    {"r00c0", 4, 0xc0, true, false, nil},
  }
  for _, row in ipairs(rows) do
    it("resolves " .. row[1], function()
      local e = assert(core.resolve(row[1]))
      assert.are.equal(row[1], e.name)
      assert.are.equal(row[2], e.type)
      assert.are.equal(row[3], e.config)
      assert.are.equal(row[4], e.user)
      assert.are.equal(row[5], e.kernel)
      if row[6] then assert.are.equal(row[6], e.source) end
    end)
  end

  it("fails on an unknown name with the closest known names", function()
    local e, msg = core.resolve("instrs")
    assert.is_nil(e)
    assert.are.equal("unknown event 'instrs'; did you mean 'instructions', ",
      msg:sub(1, #"unknown event 'instrs'; did you mean 'instructions', "))
    assert.truthy(msg:match("%?$"))
  end)
end)

describe("perfsh.group{} with a bad name", function()
  it("raises a bad-argument error that suggests the right name", function()
    local ok, err = pcall(perfsh.group, {"task-clock", "instrs"})
    assert.is_false(ok)
    assert.truthy(err:find("bad argument #1 to 'group' (unknown event 'instrs'; did you mean 'instructions'", 1, true))
  end)
  it("rejects a name that is not a string", function()
    assert.has.error(function() perfsh.group{"task-clock", 42} end,
      "bad argument #1 to 'group' (event #2 is a number, not a name)")
  end)
end)

describe("perfsh.events()", function()
  it("lists software events as usable everywhere", function()
    local found = {}
    for _, e in ipairs(perfsh.events("sw")) do
      assert.are.equal("sw", e.kind)
      found[e.name] = e.usable
    end
    assert.is_true(found["task-clock"])
    assert.is_true(found["page-faults"])
    assert.is_true(found["context-switches"])
  end)
  it("filters by substring", function()
    local names = {}
    for _, e in ipairs(perfsh.events("clock")) do
      assert.truthy(e.name:find("clock", 1, true))
      if e.kind ~= "tracepoint" then names[#names + 1] = e.name end
    end
    table.sort(names)
    assert.are.same({"cpu-clock", "task-clock"}, names)
  end)
  it("marks hardware events usable exactly when the PMU is present", function()
    for _, e in ipairs(perfsh.events("hw")) do
      if e.name == "instructions" then assert.are.equal(core.pmu_present(), e.usable) end
    end
  end)
  it("rejects an unknown kind", function()
    assert.has.error(function() perfsh.events{kind = "gpu"} end,
      "bad argument #1 to 'events' (kind 'gpu'; use hw, sw, cache, pmu, tracepoint or all)")
  end)
end)

describe("require 'perfsh' in a plain lua5.4", function()
  it("loads perfsh.core from the build and sets no global", function()
    if support.build ~= "build" then
      pending("a sanitizer build: plain lua5.4 cannot load an ASan-linked core.so")
      return
    end
    local code = [[
      local before = {}
      for k in pairs(_G) do before[k] = true end
      local p = require "perfsh"
      for k in pairs(_G) do assert(before[k], "new global " .. k) end
      assert(p.core.version == p.version)
      print("ok " .. p.version)
    ]]
    local cmd = ("LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='%s/lib/?.so;;' lua5.4 -e %s")
      :format(support.build, support.q(code))
    local out, err, rc = support.sh(cmd)
    assert.are.equal("", err)
    assert.are.equal(0, rc)
    assert.are.equal("ok " .. core.version .. "\n", out)
  end)
end)

-- The event rows of the bad-input list and the events perf stat accepts: tracepoints, msr.
local function need_tracefs(pending)
  if core.tracefs() then return true end
  pending("tracefs is not mounted (or not readable) at /sys/kernel/tracing or /sys/kernel/debug/tracing")
  return false
end

local function need_msr(pending)
  local f = io.open("/sys/bus/event_source/devices/msr/events/tsc")
  if not f then
    pending("this kernel has no msr PMU in sysfs")
    return false
  end
  f:close()
  local g, why = core.group{"msr/tsc/"}
  if not g then
    pending("msr/tsc/ does not open here: " .. why)
    return false
  end
  g:close()
  return true
end

describe("tracepoints", function()
  it("resolve SUBSYS:NAME to the id in tracefs, counting kernel and user", function()
    if not need_tracefs(pending) then return end
    local f = io.open(core.tracefs() .. "/syscalls/sys_enter_write/id")
    if not f then pending("this kernel has no syscalls:sys_enter_write tracepoint") return end
    local id = math.tointeger(f:read("n"))
    f:close()
    local e = assert(core.resolve("syscalls:sys_enter_write"))
    assert.are.same({2, id, "tracepoint", true, true}, {e.type, e.config, e.source, e.user, e.kernel})
  end)
  it("suggest names of the same subsystem for a misspelling, in one line", function()
    if not need_tracefs(pending) then return end
    local e, msg = core.resolve("syscalls:sys_enter_wrte")
    assert.is_nil(e)
    assert.are.equal("unknown tracepoint 'syscalls:sys_enter_wrte'; did you mean 'syscalls:sys_enter_write', ",
      msg:sub(1, #"unknown tracepoint 'syscalls:sys_enter_wrte'; did you mean 'syscalls:sys_enter_write', "))
    assert.is_nil(msg:find("\n", 1, true))
    for cand in msg:gmatch("'([^']+)'") do
      if cand ~= "syscalls:sys_enter_wrte" then assert.truthy(cand:match("^syscalls:")) end
    end
  end)
  it("count exactly the writes of a command that writes N times, as perf stat does", function()
    if not need_tracefs(pending) then return end
    local out, err, rc = support.sh(support.perfsh ..
      " count --csv -e syscalls:sys_enter_write,task-clock ./examples/writes 123 | grep -v '^w$'")
    assert.are.equal("", err)
    assert.are.equal(0, rc)
    assert.are.equal("123", out:match("syscalls:sys_enter_write,(%d+),"))
  end)
end)

describe("msr/tsc/", function()
  it("opens, counting kernel and user, and says so in one note", function()
    if not need_msr(pending) then return end
    local g = perfsh.group{"task-clock", "msr/tsc/"}
    assert.are.same({"msr/tsc/: counting kernel and user (the msr PMU refuses user-only counting)"}, g:notes())
    g:enable()
    core.spin(1000000)
    local r = g:read()
    g:close()
    assert.is_true(r["msr/tsc/"] > 0)
  end)
  it("counts with a tracepoint in one perfsh count, like perf stat", function()
    if not need_msr(pending) or not need_tracefs(pending) then return end
    local out, err, rc = support.sh(support.perfsh ..
      " count --csv -e msr/tsc/,syscalls:sys_enter_write ./examples/writes 40 | grep -v '^w$'")
    assert.are.equal(0, rc)
    assert.are.equal("perfsh count: note: msr/tsc/: counting kernel and user (the msr PMU refuses user-only"
      .. " counting)\n", err)
    assert.are.equal("40", out:match("syscalls:sys_enter_write,(%d+),"))
    assert.is_true(tonumber(out:match("msr/tsc/,(%d+),")) > 0)
  end)
  it("counts per hit in perfsh stat, with the same note", function()
    if not need_msr(pending) then return end
    local out, err, rc = support.sh(support.perfsh .. " stat --csv -r sum -e task-clock,msr/tsc/ ./examples/sum")
    assert.are.equal(0, rc)
    assert.are.equal("perfsh stat: note: msr/tsc/: counting kernel and user (the msr PMU refuses user-only"
      .. " counting)\n", err)
    local hits, total = out:match("\nsum,msr/tsc/,(%d+),(%d+),")
    assert.are.equal("1", hits)
    assert.is_true(tonumber(total) > 0)
  end)
end)

describe("bad event lists", function()
  it("name an unknown event in one line with suggestions of the same kind", function()
    local _, err, rc = support.sh(support.perfsh .. " count -e task-clock,instrs:u true")
    assert.are_not.equal(0, rc)
    assert.are.equal("perfsh count: unknown event 'instrs:u'; did you mean 'instructions:u', 'cycles:u' or"
      .. " 'branches:u'?\n", err)
  end)
  it("refuse a duplicate", function()
    local _, err = support.sh(support.perfsh .. " count -e task-clock,page-faults,task-clock true")
    assert.are.equal("perfsh count: event 'task-clock' is given twice; name each event once\n", err)
    assert.has.error(function() perfsh.group{"page-faults", "page-faults"} end,
      "bad argument #1 to 'group' (duplicate event page-faults in the group; name it once)")
  end)
  it("refuse more events than a group holds", function()
    local names = {}
    for i = 1, 17 do names[i] = "task-clock" end
    assert.has.error(function() perfsh.group(names) end,
      "bad argument #1 to 'group' (a group holds at most 16 events (got 17); split them)")
  end)
end)

describe("perfsh --list", function()
  it("shows sysfs PMU events and tracepoints, and filters by a word", function()
    local out, err, rc = support.sh(support.perfsh .. " --list")
    assert.are.equal("", err)
    assert.are.equal(0, rc)
    assert.truthy(out:find("\nsoftware events:\n", 1, true))
    assert.truthy(out:find("\nPMU events (sysfs and libpfm4 native names):\n", 1, true))
    assert.truthy(out:find("\ntracepoints (SUBSYS:NAME", 1, true))
    local g = core.group{"msr/tsc/"}
    if g then
      g:close()
      assert.truthy(out:find("\n  msr/tsc/ ", 1, true))
    end
    if core.tracefs() then
      assert.truthy(out:find("\n  syscalls:sys_enter_write ", 1, true))
      out = support.sh(support.perfsh .. " --list syscalls")
      assert.truthy(out:match("^tracepoints %(SUBSYS:NAME[^\n]*\n  %S*syscalls:"))
      for line in out:gmatch("\n  (%S+)") do assert.truthy(line:find("syscalls", 1, true)) end
      out = support.sh(support.perfsh .. " --list tracepoint")
      assert.truthy(out:find("\n  sched:sched_switch ", 1, true))
    end
  end)
  it("says when nothing matches", function()
    local out, err, rc = support.sh(support.perfsh .. " --list no-such-event-anywhere")
    assert.are.equal("", out)
    assert.are.equal(2, rc)
    assert.are.equal("perfsh: no event here matches 'no-such-event-anywhere' (perfsh --list shows them all)\n", err)
  end)
end)
