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
    for _, e in ipairs(perfsh.events("clock")) do names[#names + 1] = e.name end
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
      "bad argument #1 to 'events' (kind 'gpu'; use hw, sw, cache, pmu or all)")
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
