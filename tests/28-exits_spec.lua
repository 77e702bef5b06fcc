-- Function exits under the uprobe catcher: plain uprobes at each ret, each tail-call jmp and the
-- returns of cold parts, matched to entries by stack pointer; the return address is never touched,
-- so exceptions and longjmp pass, and the frames they leave are recorded unwound. A leaf's returns
-- come through a uretprobe (nothing unwinds through a frame that calls nothing). Each case gives
-- the hits --backend ptrace gives, with no stop per hit.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")
local P = support.perfsh

local need_uprobes = support.need_uprobes

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. support.q(dir)))

local function build(cmd, out)
  local _, err, rc = support.sh(cmd:format(support.q(dir .. "/" .. out)))
  assert.are.equal(0, rc, err)
  return dir .. "/" .. out
end

-- Hits, incomplete hits, and the records' {arg, unwound} of each region @funcs of @exe under @backend.
local function measure(exe, argv, funcs, backend)
  local t <close> = perfsh.spawn{exe, table.unpack(argv), events = {"task-clock"}, backend = backend,
    stdout = dir .. "/out." .. backend}
  local rs, res = {}, {}
  for i, f in ipairs(funcs) do rs[i] = t:region{func = f, args = {"x"}} end
  assert.are.equal(0, t:run().code)
  for i, r in ipairs(rs) do
    local st, recs = r:stats(), {}
    for h in r:hits() do recs[#recs + 1] = {h.x, h.unwound and true or false, h.exited and true or false} end
    table.sort(recs, function(a, b) return a[1] < b[1] end)
    res[funcs[i]] = {hits = st.hits, incomplete = st.incomplete, records = recs}
  end
  return res, t:info(), support.read(dir .. "/out." .. backend)
end

describe("the uprobe catcher's exits", function()
  teardown(function() os.execute("rm -rf " .. support.q(dir)) end)

  it("C++: an exception thrown through the measured function is caught where the program catches it, the "
    .. "calls it unwound are recorded unwound, the hits are ptrace's, no stop per hit", function()
    if not need_uprobes(pending) then return end
    local exe = build("g++ -O2 -g -o %s tests/fixtures/exc.cpp", "exc")
    local funcs = {"middle", "thrower", "inner", "outer"}
    local want = measure(exe, {}, funcs, "ptrace")
    local got, info, out = measure(exe, {}, funcs, "uprobe")
    assert.are.equal("sum=27 caught=3 total=-30\n", out)
    assert.are.equal("uprobe", info.catcher)
    assert.is_true(info.stops <= 2, tostring(info.stops))
    assert.are.same(want, got)
    -- thrower(i) throws when i % 3 == 2: exactly those 3 of its 9 records are unwound
    local recs = got.thrower.records
    assert.are.equal(9, #recs)
    for _, rec in ipairs(recs) do
      assert.are.same({rec[1], rec[1] % 3 == 2, false}, rec)
    end
    assert.are.same({6, 3}, {got.middle.hits, got.middle.incomplete})
    assert.are.same({10, 0, 10, 0}, {got.inner.hits, got.inner.incomplete, got.outer.hits, got.outer.incomplete})
  end)

  it("C++: the frames of the program's last exception end unwound where it is caught (__cxa_begin_catch), "
    .. "though no probe of theirs comes after it", function()
    if not need_uprobes(pending) then return end
    local exe = build("g++ -O2 -g -o %s tests/fixtures/exc.cpp", "exc")
    local got, info = measure(exe, {}, {"middle", "thrower"}, "uprobe")
    assert.is_true(info.stops <= 2, tostring(info.stops))
    for _, f in ipairs{"middle", "thrower"} do
      assert.are.same({{0, false, false}, {1, false, false}, {2, true, false}, {3, false, false}, {4, false, false},
        {5, true, false}, {6, false, false}, {7, false, false}, {8, true, false}}, got[f].records, f)
    end
  end)

  it("C: a longjmp out of two measured frames records both unwound, the others complete", function()
    if not need_uprobes(pending) then return end
    local exe = build("gcc -O2 -g -o %s tests/fixtures/retsites.c", "retsites")
    local funcs = {"rs_long", "rs_deep"}
    local want = measure(exe, {"100"}, funcs, "ptrace")
    local got, info, out = measure(exe, {"100"}, funcs, "uprobe")
    assert.truthy(out:find(" jumps=20\n", 1, true), out)
    assert.is_true(info.stops <= 2, tostring(info.stops))
    assert.are.same(want, got)
    for _, f in ipairs(funcs) do
      assert.are.same({80, 20}, {got[f].hits, got[f].incomplete}, f)
      for _, rec in ipairs(got[f].records) do
        assert.are.same({rec[1], rec[1] % 5 == 0, false}, rec)
      end
    end
  end)

  it("a leaf (its returns through a uretprobe) left by a signal handler's siglongjmp: each such call is "
    .. "recorded unwound when the next is entered at the same stack pointer, the others complete", function()
    if not need_uprobes(pending) then return end
    local exe = build("gcc -O2 -g -o %s tests/fixtures/leafjump.c", "leafjump")
    local function leaf(backend)
      local t <close> = perfsh.spawn{exe, "30", events = {"task-clock"}, backend = backend,
        stdout = dir .. "/out." .. backend}
      local r = t:region{func = "lj_load", args = {"p", "x"}}
      assert.are.equal(0, t:run().code)
      local recs = {}
      for h in r:hits() do recs[#recs + 1] = {h.x, h.unwound and true or false} end
      table.sort(recs, function(a, b) return a[1] < b[1] end)
      return r:stats().hits, recs, t:info(), support.read(dir .. "/out." .. backend)
    end
    local hits, recs, info, out = leaf("uprobe")
    assert.are.equal("sum=320 faults=10\n", out)
    -- no stop per hit: one per signal (the program is seized, and each SIGSEGV stops it on its way)
    assert.is_true(info.stops <= 2 + 10, tostring(info.stops))
    -- calls 0, 3, ..., 27 fault: 10 records unwound, 20 complete hits
    assert.are.equal(20, hits)
    assert.are.equal(30, #recs)
    for i, rec in ipairs(recs) do assert.are.same({i - 1, (i - 1) % 3 == 0}, rec) end
    local phits, precs = leaf("ptrace")
    assert.are.equal(hits, phits)
    assert.are.same(precs, recs)
  end)

  it("a function split into a .cold part, a switch whose default case is cold, a tail call out (direct and "
    .. "through a pointer): every call ends at its own exit, ptrace's hits", function()
    if not need_uprobes(pending) then return end
    local exe = build("gcc -O2 -g -o %s tests/fixtures/retsites.c", "retsites")
    local nm = support.sh("nm " .. support.q(exe))
    if not nm:find(" rs_cold%.cold\n") then
      pending("this gcc did not split rs_cold into rs_cold.cold")
      return
    end
    local funcs = {"rs_cold", "rs_switch", "rs_tail", "rs_ptr", "rs_two", "rs_leaf"}
    local want = measure(exe, {"100"}, funcs, "ptrace")
    local got, info = measure(exe, {"100"}, funcs, "uprobe")
    assert.is_true(info.stops <= 2, tostring(info.stops))
    want.rs_ptr.records, got.rs_ptr.records = nil, nil -- its first argument is a function's address
    assert.are.same(want, got)
    for _, f in ipairs{"rs_cold", "rs_switch", "rs_tail", "rs_ptr", "rs_two"} do
      assert.are.same({100, 0}, {got[f].hits, got[f].incomplete}, f)
    end
    -- rs_leaf: once from rs_plain, rs_two, rs_tail, rs_ptr and rs_cold per round, and from the
    -- 7 of every 9 cases of rs_switch that call it (78 of 100 rounds), and from rs_deep (80)
    assert.are.same({100 * 5 + 78 + 80, 0}, {got.rs_leaf.hits, got.rs_leaf.incomplete})
  end)

  it("Rust: update_product called from std::thread::scope threads, ptrace's hits, no stop per hit", function()
    if not need_uprobes(pending) then return end
    local rustc = support.find_rustc(pending)
    if not rustc then return end
    local exe = build(rustc .. " -O -g -o %s tests/fixtures/grocery.rs", "grocery")
    local lines = {}
    for _, b in ipairs{"ptrace", "uprobe"} do
      local out, err, rc = support.sh(("%s stat --backend %s -r update_product -e task-clock %s 4 1000")
        :format(P, b, support.q(exe)))
      assert.are.equal(0, rc, err)
      assert.truthy(out:find("^total=4000\n"), out)
      assert.truthy(out:find("caught by " .. b, 1, true), out)
      lines[b] = out:match("\n(region update_product %b())")
      if b == "uprobe" then -- per new thread: the clone event, its first stop, its exit
        local stops = tonumber(out:match("caught by uprobe; (%d+) stops?"))
        assert.is_true(stops <= 1 + 3 * 4, out)
      end
    end
    assert.are.equal("region update_product (func, 4000 hits)", lines.uprobe)
    assert.are.equal(lines.ptrace, lines.uprobe)
  end)

  it("Rust: a panic through the measured function is caught by catch_unwind, its calls recorded unwound", function()
    if not need_uprobes(pending) then return end
    local rustc = support.find_rustc(pending)
    if not rustc then return end
    local exe = build(rustc .. " -O -g -o %s tests/fixtures/panics.rs", "panics")
    -- 98 calls: the last panic (call 95) has calls after it, whose probes show its frame left
    local want = measure(exe, {"98"}, {"risky"}, "ptrace")
    local got, info, out = measure(exe, {"98"}, {"risky"}, "uprobe")
    assert.are.equal("returned=74 panicked=24\n", out)
    assert.is_true(info.stops <= 2, tostring(info.stops))
    assert.are.same(want, got)
    assert.are.same({74, 24}, {got.risky.hits, got.risky.incomplete})
    for _, rec in ipairs(got.risky.records) do
      assert.are.same({rec[1], rec[1] % 4 == 3, false}, rec)
    end
  end)

  it("examples/cxx: geo::measure(int) gives ptrace's hits, caught by uprobe", function()
    if not need_uprobes(pending) then return end
    local hits = {}
    for _, b in ipairs{"ptrace", "uprobe"} do
      local out, err, rc = support.sh(("%s stat --backend %s -r 'geo::measure(int)' examples/cxx"):format(P, b))
      assert.are.equal(0, rc, err)
      assert.truthy(out:find("caught by " .. b, 1, true), out)
      hits[b] = out:match("region geo::measure%(int%) %(func, (%d+) hits%)")
    end
    assert.are.same({"1000", "1000"}, {hits.ptrace, hits.uprobe})
  end)

  it("a function whose exits cannot be found (a conditional tail call): a uretprobe catches its returns, with a "
    .. "note, in a program that cannot unwind", function()
    if not need_uprobes(pending) then return end
    local exe = build("gcc -O2 -o %s tests/fixtures/condtail.c", "condtail")
    local out, err, rc = support.sh(("%s stat --backend uprobe -r ct_jump -r ct_target -e task-clock %s")
      :format(P, support.q(exe)))
    assert.are.equal(0, rc, err)
    assert.truthy(err:find("^perfsh: region 'ct_jump': its exits cannot be found %(ct_jump: a conditional jump at "
      .. "0x%x+ leaves the function%); a uretprobe catches its returns\n"), err)
    -- ct_jump tail-calls ct_target on odd arguments: it returns through ct_target's return
    assert.truthy(out:find("region ct_jump (func, 10 hits)\n", 1, true), out)
    assert.truthy(out:find("region ct_target (func, 5 hits)\n", 1, true), out)
  end)

  it("refuses such a function in a program that can unwind, with core.errors.needs_ptrace", function()
    if not need_uprobes(pending) then return end
    local exe = build("g++ -O2 -x c++ -o %s tests/fixtures/condtail.c", "condtail_cxx")
    local t <close> = perfsh.spawn{exe, events = {"task-clock"}, backend = "uprobe", stdout = "/dev/null"}
    local r, why, code = t:try_region{func = "ct_jump"}
    assert.is_nil(r)
    assert.are.equal(core.errors.needs_ptrace, code)
    assert.are.equal(("region 'ct_jump': its exits cannot be found (ct_jump: a conditional jump at %s leaves the "
      .. "function), and %s can unwind exceptions (C++, Rust): an unwinder that meets the return address a "
      .. "uretprobe put in place terminates the program; it needs the ptrace catcher (--backend ptrace)")
      :format(why:match("jump at (0x%x+)"), exe), why)
    assert.truthy(t:try_region{func = "ct_target"}) -- its exits are found
  end)
end)
