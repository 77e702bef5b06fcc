-- SDT probes (<sys/sdt.h>): read from .note.stapsdt, checked against readelf, listed, and
-- counted as regions through the uprobe catcher (refused in one line by the ptrace catcher).
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")
local P = support.perfsh

local EX = "examples/sdt"
local REFUSED = "SDT probes are armed by the uprobe catcher only (--backend uprobe or auto), not by ptrace"

local need_uprobes = support.need_uprobes

-- readelf -n's SDT notes: {provider, name, location, base, semaphore, args}, in note order
local function readelf_notes(path)
  local out, err, rc = support.sh("LC_ALL=C readelf -n " .. support.q(path))
  assert.are.equal(0, rc, err)
  local notes, cur = {}, nil
  for line in out:gmatch("[^\n]+") do
    local prov = line:match("^%s+Provider: (.*)$")
    if prov then
      cur = {provider = prov}
      notes[#notes + 1] = cur
    elseif cur then
      cur.name = cur.name or line:match("^%s+Name: (.*)$")
      local loc, base, sema = line:match("Location: 0x(%x+), Base: 0x(%x+), Semaphore: 0x(%x+)")
      if loc then
        cur.location, cur.base, cur.semaphore = tonumber(loc, 16), tonumber(base, 16), tonumber(sema, 16)
      end
      local args = line:match("^%s+Arguments: ?(.*)$")
      if args then cur.args = args end
    end
  end
  return notes
end

-- readelf's section address of @name, and its LOAD segments {vaddr, offset, filesz}
local function readelf_layout(path)
  local secs = support.sh("LC_ALL=C readelf -SW " .. support.q(path))
  local segs = support.sh("LC_ALL=C readelf -lW " .. support.q(path))
  local loads = {}
  for off, va, fsz in segs:gmatch("LOAD%s+0x(%x+)%s+0x(%x+)%s+0x%x+%s+0x(%x+)") do
    loads[#loads + 1] = {offset = tonumber(off, 16), vaddr = tonumber(va, 16), filesz = tonumber(fsz, 16)}
  end
  local base = secs:match("%.stapsdt%.base%s+PROGBITS%s+(%x+)")
  return loads, base and tonumber(base, 16)
end

local function file_offset(loads, addr)
  for _, l in ipairs(loads) do
    if addr >= l.vaddr and addr < l.vaddr + l.filesz then return addr - l.vaddr + l.offset end
  end
end

local function byte_at(path, off)
  local f = assert(io.open(path, "rb"))
  f:seek("set", off)
  local b = f:read(1)
  f:close()
  return b and b:byte()
end

local lines = support.lines

describe("perfsh.sdt(path)", function()
  it("finds every probe readelf -n shows, with its address, semaphore and arguments", function()
    local notes, probes = readelf_notes(EX), assert(perfsh.sdt(EX))
    local _, base = readelf_layout(EX)
    assert.are.equal(4, #notes)
    assert.are.equal(#notes, #probes)
    for i, n in ipairs(notes) do
      local p = probes[i]
      assert.are.equal(n.provider, p.provider)
      assert.are.equal(n.name, p.name)
      -- as systemtap does: moved by however far .stapsdt.base moved (nothing here)
      assert.are.equal(n.location + (base - n.base), p.addr)
      assert.are.equal(n.semaphore == 0 and 0 or n.semaphore + (base - n.base), p.semaphore)
      assert.are.equal(n.args, p.argstr)
      assert.are.equal(n.base, p.base)
    end
  end)

  it("gives file offsets that readelf's LOAD segments agree with: a NOP at each site", function()
    local loads = readelf_layout(EX)
    local sema = 0
    for _, p in ipairs(assert(perfsh.sdt(EX))) do
      assert.are.equal(file_offset(loads, p.addr), p.offset)
      assert.are.equal(0x90, byte_at(EX, p.offset)) -- <sys/sdt.h>'s one-byte NOP
      if p.semaphore ~= 0 then
        sema = sema + 1
        assert.are.equal(file_offset(loads, p.semaphore), p.semaphore_offset)
        assert.are_not.equal(p.semaphore, p.semaphore_offset) -- the data segment's offset differs
      else
        assert.are.equal(0, p.semaphore_offset)
      end
    end
    assert.are.equal(1, sema) -- demo:traced only
  end)

  it("takes the arguments apart: size, signedness, operand", function()
    local by = {}
    for _, p in ipairs(assert(perfsh.sdt(EX))) do by[p.name] = p end
    assert.are.equal(2, #by.tick.args)    -- i and i * i, both long
    assert.are.equal(2, #by.work_start.args) -- r (int) and n (uint64_t)
    assert.are.equal(1, #by.work_end.args)
    assert.are.equal(1, #by.traced.args)
    for _, a in ipairs(by.tick.args) do
      assert.are.same({8, true, "reg"}, {a.size, a.signed, a.kind})
      assert.truthy(a.reg:match("^r"), a.text)
    end
    assert.are.same({4, true}, {by.work_start.args[1].size, by.work_start.args[1].signed})
    assert.are.same({8, false}, {by.work_start.args[2].size, by.work_start.args[2].signed})
    for _, p in pairs(by) do
      for _, a in ipairs(p.args) do
        assert.truthy(p.argstr:find(a.text, 1, true))
        assert.truthy(a.kind == "reg" or a.kind == "mem" or a.kind == "imm")
      end
    end
  end)

  it("returns nil and one line for a missing or non-ELF file, and no probes for a binary without them", function()
    local p, why = perfsh.sdt("/nonexistent/prog")
    assert.is_nil(p)
    assert.are.equal("cannot open /nonexistent/prog: No such file or directory", why)
    p, why = perfsh.sdt("tests/17-sdt_spec.lua")
    assert.is_nil(p)
    assert.are.equal("tests/17-sdt_spec.lua is not an ELF file", why)
    assert.are.same({}, perfsh.sdt("examples/sum"))
  end)
end)

describe("perfsh --list sdt", function()
  it("lists each probe on one line: provider:name, address, offset, semaphore, arguments", function()
    local out, err, rc = support.sh(P .. " --list sdt " .. EX)
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    local notes, got = readelf_notes(EX), lines(out)
    assert.are.equal(#notes, #got)
    for i, p in ipairs(assert(perfsh.sdt(EX))) do
      local sema = p.semaphore == 0 and "none" or ("0x%x (offset 0x%x)"):format(p.semaphore, p.semaphore_offset)
      local pat = ("^%s:%s%%s+addr 0x%x  offset 0x%x  semaphore %s  args %s$"):format(p.provider, p.name, p.addr,
        p.offset, sema:gsub("%p", "%%%0"), notes[i].args:gsub("%p", "%%%0"))
      assert.truthy(got[i]:match(pat), got[i])
    end
    local stat_out = support.sh(P .. " stat --list sdt " .. EX)
    assert.are.equal(out, stat_out)
  end)

  it("says so for a binary without probes, and gives one line for a missing or non-ELF file", function()
    local out, err, rc = support.sh(P .. " --list sdt examples/sum")
    assert.are.equal(0, rc, err)
    assert.are.equal("examples/sum has no SDT probes (no .note.stapsdt: it was built without <sys/sdt.h> probes)\n",
      out)
    out, err, rc = support.sh(P .. " --list sdt /nonexistent/prog")
    assert.are.same({2, "", "perfsh: cannot open /nonexistent/prog: No such file or directory\n"}, {rc, out, err})
    out, err, rc = support.sh(P .. " --list sdt README.md")
    assert.are.same({2, "", "perfsh: README.md is not an ELF file\n"}, {rc, out, err})
    out, err, rc = support.sh(P .. " --list sdt")
    assert.are.same({2, ""}, {rc, out})
    assert.are.equal(1, #lines(err))
  end)
end)

describe("an sdt: region", function()
  it("parses as one probe or a pair", function()
    assert.are.same({kind = "sdt", points = {{provider = "demo", name = "tick"}}}, core.region_spec("sdt:demo:tick"))
    assert.are.same({kind = "sdt", points = {{provider = "demo", name = "work_start"},
      {provider = "demo", name = "work_end"}}}, core.region_spec("sdt:demo:work_start,sdt:demo:work_end"))
    assert.are.same(core.region_spec("sdt:demo:work_start,sdt:demo:work_end"),
      core.region_spec("sdt:demo:work_start,work_end"))
    local rs, why = core.region_spec("sdt:demo")
    assert.is_nil(rs)
    assert.are.equal("bad SDT region 'sdt:demo': expected sdt:PROVIDER:NAME (one probe, a point event) or "
      .. "sdt:PROVIDER:START,sdt:PROVIDER:END (a pair)", why)
  end)

  it("is refused by perfsh stat --backend ptrace with one line, the target never run", function()
    for _, r in ipairs{"sdt:demo:tick", "sdt:demo:work_start,sdt:demo:work_end"} do
      local out, err, rc = support.sh(("%s stat --backend ptrace -r %s %s"):format(P, r, EX))
      assert.are.same({2, "", ("perfsh stat: region '%s': %s\n"):format(r, REFUSED)}, {rc, out, err})
    end
  end)

  it("is counted by perfsh stat through the uprobe catcher: a pair, a point, a semaphore", function()
    if not need_uprobes(pending) then return end
    local out, err, rc = support.sh(("%s stat -r sdt:demo:work_start,work_end -r sdt:demo:tick -r sdt:demo:traced "
      .. "-e task-clock %s 1000 3 7"):format(P, EX))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("reps 3 ticks 7 traced 7\n", 1, true), out) -- the semaphore was counted up
    assert.truthy(out:find("caught by uprobe", 1, true), out)
    assert.truthy(out:find("region sdt:demo:work_start,work_end (sdt, 3 hits)", 1, true), out)
    assert.truthy(out:find("region sdt:demo:tick (point, 7 hits)", 1, true), out)
    assert.truthy(out:find("region sdt:demo:traced (point, 7 hits)", 1, true), out)
  end)

  it("t:region{sdt = ...}: a pair's records span its work, a point's start and end are one reading", function()
    if not need_uprobes(pending) then return end
    local out = os.tmpname()
    local t <close> = perfsh.spawn{EX, "1000", "4", "5", events = {"task-clock"}, stdout = out, backend = "uprobe"}
    local pair = t:region{sdt = "demo:work_start,work_end"}
    local tick = t:region{sdt = "sdt:demo:tick"}
    assert.are.equal(0, t:run().code)
    local f = assert(io.open(out))
    assert.are.equal("reps 4 ticks 5 traced 0\n", f:read("a"))
    f:close()
    os.remove(out)
    assert.are.same({"sdt:demo:work_start,work_end", "sdt", 4, 4}, {pair.name, t:region_meta(pair.id).kind,
      pair:stats().hits, t:region_meta(pair.id).entries})
    assert.are.same({"point", 5}, {t:region_meta(tick.id).kind, tick:stats().hits})
    local last
    for h in tick:hits() do
      assert.are.equal(h.t_start, h.t_end)
      assert.is_true(last == nil or h.t_start >= last)
      last = h.t_start
    end
  end)

  it("names the probes that are there when one is not (did you mean)", function()
    local out, err, rc = support.sh(("%s stat -r sdt:demo:tik %s"):format(P, EX))
    assert.are.same({2, ""}, {rc, out})
    assert.are.equal(1, #lines(err))
    assert.truthy(err:find("perfsh stat: region 'sdt:demo:tik': no SDT probe 'demo:tik' in examples/sdt; did you "
      .. "mean 'demo:tick'", 1, true), err)
    out, err, rc = support.sh(("%s stat -r sdt:demo:work_start,work_ed %s"):format(P, EX))
    assert.are.same({2, ""}, {rc, out})
    assert.truthy(err:find("no SDT probe 'demo:work_ed' in examples/sdt; did you mean 'demo:work_end'", 1, true), err)
    out, err, rc = support.sh(("%s stat -r sdt:demo:tick examples/sum"):format(P))
    assert.are.same({2, "", "perfsh stat: region 'sdt:demo:tick': examples/sum has no SDT probes (no .note.stapsdt: "
      .. "it was built without <sys/sdt.h> probes)\n"}, {rc, out, err})
  end)

  it("is refused by t:region{sdt = ...} under ptrace before anything is armed; the tracee still runs untouched",
    function()
    local out = os.tmpname()
    local t <close> = perfsh.spawn{EX, "1000", "3", "7", events = support.events(), stdout = out, backend = "ptrace"}
    assert.has.error(function() t:region{sdt = "sdt:demo:tick"} end, "region 'sdt:demo:tick': " .. REFUSED)
    assert.has.error(function() t:region{sdt = "demo:work_start,work_end"} end,
      "region 'sdt:demo:work_start,work_end': " .. REFUSED)
    local ok, why = pcall(t.region, t, {sdt = "demo:tik"})
    assert.is_false(ok)
    assert.truthy(why:find("no SDT probe 'demo:tik' in examples/sdt; did you mean 'demo:tick'", 1, true), why)
    assert.are.equal(0, #t.regions)
    assert.are.equal(0, t:run().code)
    local f = assert(io.open(out))
    assert.are.equal("reps 3 ticks 7 traced 0\n", f:read("a"))
    f:close()
    os.remove(out)
  end)
end)
