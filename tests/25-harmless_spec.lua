-- Nothing typed on perfsh's command line harms the program: an address region must begin an
-- instruction of the program's code (refused in one line before anything runs or is attached),
-- a function's entry and a range starting there share one breakpoint, and a detach leaves the
-- memory map as it was found.
local perfsh = require "perfsh"
local support = dofile("tests/support.lua")
local P = support.perfsh
local q = support.q

local dir = os.tmpname()
os.remove(dir)
local FX = dir .. "/fx" -- tests/fixtures/tracer_fx.c: "fx slow N" calls fx_work N times, 2 ms apart
local NAPPER = dir .. "/napper" -- tests/fixtures/napper.c: naps while its mark file exists

-- Start the napper napping 5 ms at a time until @mark is removed; its pipe and pid.
local function start_napper(mark)
  local p, pid = support.background(NAPPER, "5 -1 " .. q(mark))
  for _ = 1, 2000 do
    if io.open(mark) then break end
    os.execute("sleep 0.01")
  end
  return p, pid
end

-- Stop the napper: its output must be that of a run never traced ("code intact", the checksum
-- of as many naps run alone).
local function napper_unharmed(p, mark)
  os.remove(mark)
  local out = p:read("a")
  assert.is_true(p:close(), out)
  local k, sum, how = out:match("^naps = (%d+) sum = (%d+) code (%a+)\n$")
  assert.truthy(k, out)
  assert.are.equal("intact", how)
  assert.are.equal(support.sh(("%s 0 %d"):format(NAPPER, k)), out)
  return tonumber(k), sum
end

-- The file address of the @k-th instruction (from 1) of function @fn of @bin, from objdump.
local function insn(bin, fn, k)
  local out = support.sh(("objdump -d --no-show-raw-insn %s | awk '/<%s>:$/ {f = 1; next} "
    .. "f && /^ *[0-9a-f]+:/ {if (++n == %d) {sub(\":\", \"\", $1); print $1; exit}}'"):format(q(bin), fn, k))
  return assert(tonumber(out, 16), fn .. " has no instruction " .. k .. " in " .. bin)
end

-- The file address of section @name of @bin, and the end of the highest section.
local function section(bin, name)
  local out = support.sh("LC_ALL=C readelf -SW " .. q(bin))
  local addr, last = nil, 0
  for line in out:gmatch("[^\n]+") do
    local n, a, size = line:match("%]%s+(%S+)%s+%S+%s+(%x+)%s+%x+%s+(%x+)")
    if n then
      if n == name then addr = tonumber(a, 16) end
      last = math.max(last, tonumber(a, 16) + tonumber(size, 16))
    end
  end
  return assert(addr, "no section " .. name .. " in " .. bin), last
end

-- Each bad address form with the message perfsh gives for it (about program @bin), as typed:
-- inside the first instruction of @fn longer than a byte, 0, in .rodata, 0xffffffff, past the end.
local function bad_forms(bin, fn)
  local k, a1, a2 = 1, insn(bin, fn, 1), insn(bin, fn, 2)
  while a2 == a1 + 1 do
    k = k + 1
    a1, a2 = a2, insn(bin, fn, k + 1)
  end
  local rodata, last = section(bin, ".rodata")
  local abs = bin:match("^/") and bin or support.abspath(bin)
  local span = "; its code is at 0x%x+%-0x%x+$"
  return {
    {("0x%x"):format(a1 + 1), ("^0x%x is inside the instruction at 0x%x in %s %%(%s%%+0%%); boundaries near it: "
      .. "0x%x, 0x%x$"):format(a1 + 1, a1, fn, fn, a1, a2)},
    {"0x0", "^0x0 is outside every section of " .. abs:gsub("%p", "%%%0") .. span},
    {("0x%x"):format(rodata + 4), ("^0x%x is in %%.rodata, not in code"):format(rodata + 4) .. span},
    {"0xffffffff", "^0xffffffff is outside every section of " .. abs:gsub("%p", "%%%0") .. span},
    {("0x%x"):format(last + 0x1000), ("^0x%x is outside every section of "):format(last + 0x1000)
      .. abs:gsub("%p", "%%%0") .. span},
  }
end

local function backends(pending, backend)
  return backend == "ptrace" or support.need_uprobes(pending)
end

lazy_setup(function()
  assert(os.execute("mkdir -p " .. q(dir)))
  local _, err, rc = support.sh(("cc -O2 -g -pthread -o %s tests/fixtures/tracer_fx.c && cc -O2 -g -o %s "
    .. "tests/fixtures/napper.c"):format(q(FX), q(NAPPER)))
  assert(rc == 0, err)
end)

lazy_teardown(function()
  os.execute("rm -rf " .. q(dir))
end)

describe("an address region", function()
  for _, backend in ipairs{"ptrace", "uprobe"} do
    it("is refused in one line naming the file address typed when it is no instruction start in code, "
      .. "and nothing runs (" .. backend .. ")", function()
      if not backends(pending, backend) then return end
      for _, form in ipairs(bad_forms("examples/sum", "sum")) do
        local out, err, rc = support.sh(("%s stat --backend %s -r %s ./examples/sum"):format(P, backend, form[1]))
        local msg = ("-r %s: exit %d\nstderr: %s\nstdout: %s"):format(form[1], rc, err, out)
        assert.are.equal(2, rc, msg)
        local line = err:match("^perfsh stat: region '" .. form[1] .. "': (.-)\n$")
        assert.truthy(line and line:match(form[2]), msg)
        assert.are.equal("", out, "the program ran\n" .. msg)
      end
    end)
  end

  it("is refused inside a function but not at its entry; its entry and a range between two "
    .. "instruction starts count their hit", function()
    local main2, sum = insn("examples/sum", "main", 2), insn("examples/sum", "sum", 1)
    local dis = support.sh("objdump -d --no-show-raw-insn examples/sum | awk '/<sum>:$/ {f = 1; next} "
      .. "f && /ret/ {sub(\":\", \"\", $1); print $1; exit}'")
    local ret = assert(tonumber(dis, 16))
    local main = insn("examples/sum", "main", 1)
    local _, err, rc = support.sh(("%s stat -r 0x%x ./examples/sum"):format(P, main2))
    assert.are.equal(2, rc, err)
    assert.are.equal(("perfsh stat: region '0x%x': 0x%x is inside main (main+0x%x), not at a function's entry "
      .. "(a function region starts where the return address is at the stack pointer); give main's entry 0x%x, "
      .. "or a range 0x%x-0xEND\n"):format(main2, main2, main2 - main, main, main2), err)
    local t <close> = perfsh.spawn{"examples/sum", events = {"task-clock"}, stdout = "/dev/null"}
    local f = t:region{addr = sum}
    local r = t:region{addr = sum, to = ret}
    assert.are.equal(0, t:run().code)
    assert.are.equal(1, f:stats().hits)
    assert.are.equal(1, r:stats().hits)
  end)

  it("is refused by t:region{addr = ...} of a spawned program, in the same words", function()
    local sum = insn("examples/sum", "sum", 1)
    local s <close> = perfsh.spawn{"examples/sum", events = {"task-clock"}, stdout = "/dev/null"}
    assert.has.error(function() s:region{addr = sum + 1} end, ("0x%x is inside the instruction at 0x%x in sum "
      .. "(sum+0); boundaries near it: 0x%x, 0x%x"):format(sum + 1, sum, sum, insn("examples/sum", "sum", 2)))
    assert.has.error(function() s:region{addr = sum, to = sum + 1} end, ("0x%x is inside the instruction at 0x%x "
      .. "in sum (sum+0); boundaries near it: 0x%x, 0x%x"):format(sum + 1, sum, sum, insn("examples/sum", "sum", 2)))
  end)

  for _, backend in ipairs{"ptrace", "uprobe"} do
    it("is refused by t:region{addr = ...} of an attached program, which runs on unharmed (" .. backend .. ")",
      function()
      if not backends(pending, backend) then return end
      local mark = dir .. "/mark-lua-" .. backend
      local p, pid = start_napper(mark)
      local t = perfsh.attach(pid, {events = {"task-clock"}, backend = backend})
      for _, form in ipairs(bad_forms(NAPPER, "nap")) do
        local ok, why = pcall(t.region, t, {addr = tonumber(form[1])})
        assert.is_false(ok, form[1])
        assert.truthy(tostring(why):match((form[2]:gsub("^%^", ""))), why)
      end
      t:close()
      napper_unharmed(p, mark)
    end)
  end
end)

describe("an attached process", function()
  for _, backend in ipairs{"ptrace", "uprobe"} do
    it("is refused each bad address before perfsh attaches, and runs on unharmed (" .. backend .. ")", function()
      if not backends(pending, backend) then return end
      local mark = dir .. "/mark-cli-" .. backend
      local p, pid = start_napper(mark)
      for _, form in ipairs(bad_forms(NAPPER, "nap")) do
        for _, recipe in ipairs{"stat", "tail"} do
          local out, err, rc = support.sh(("%s %s --backend %s -p %d -r %s"):format(P, recipe, backend, pid,
            form[1]))
          local msg = ("%s -r %s: exit %d\nstderr: %s\nstdout: %s"):format(recipe, form[1], rc, err, out)
          assert.are.equal(2, rc, msg)
          local line = err:match("^perfsh " .. recipe .. ": region '" .. form[1] .. "': (.-)\n$")
          assert.truthy(line and line:match(form[2]), msg)
          local f = assert(io.open("/proc/" .. pid .. "/status"))
          assert.truthy(f:read("a"):match("TracerPid:%s+0\n"), "attached\n" .. msg)
          f:close()
        end
      end
      napper_unharmed(p, mark)
    end)
  end

  it("has the memory map it had before each attach after each detach, and its output is unchanged",
    function()
    local want = support.sh(FX .. " slow 1000")
    local p, pid = support.background(FX, "slow 1000")
    local function maps()
      local f = assert(io.open("/proc/" .. pid .. "/maps"))
      local s = f:read("a")
      f:close()
      return s
    end
    local before = maps()
    for cycle = 1, 4 do
      local t <close> = perfsh.attach(pid, {events = {"task-clock"}, backend = "ptrace"})
      local r = t:region{func = "fx_work"} -- a rip-relative load: run out of line
      assert.are.equal("paused", select(2, t:run{hits = 5}))
      assert.are_not.equal(before, maps(), "no scratch page: nothing ran out of line")
      t:detach()
      assert.is_true(r:stats().hits >= 5)
      t:close()
      assert.are.equal(before, maps(), "cycle " .. cycle)
    end
    assert.are.equal(want, p:read("a"))
    assert.is_true(p:close())
  end)
end)

describe("one breakpoint", function()
  it("serves a function's entry and a line range starting there, each region getting its hit", function()
    for _, order in ipairs{{"func", "range"}, {"range", "func"}} do
      local t <close> = perfsh.spawn{"examples/sum", events = {"task-clock"}, stdout = "/dev/null",
        backend = "ptrace"}
      local regs = {}
      for _, kind in ipairs(order) do
        regs[kind] = t:region(kind == "func" and {func = "sum"} or {range = "sum.c:20-sum.c:25"})
      end
      assert.are.equal(0, t:run().code)
      local hf, hr = {}, {}
      for h in regs.func:hits() do hf[#hf + 1] = h end
      for h in regs.range:hits() do hr[#hr + 1] = h end
      assert.are.equal(1, #hf) -- main calls sum once
      assert.are.equal(1, #hr)
      -- one stop started both: the same reading; the range ends at line 25, before sum returns
      assert.are.equal(hf[1].t_start, hr[1].t_start)
      assert.are.equal(hf[1].enabled_start, hr[1].enabled_start)
      assert.is_true(hr[1].t_end < hf[1].t_end)
      assert.is_true(hr[1]["task-clock"] > 0 and hr[1]["task-clock"] <= hf[1]["task-clock"])
    end
  end)
end)
