-- perfsh compare: regions or commands side by side; exact orders with the callgrind engine.
local support = dofile("tests/support.lua")
local P = support.perfsh

-- CSV rows of perfsh compare as {event, side, hits, value, ratio, ratio_min, ratio_max, mark}.
local function csv(out)
  local rows = {}
  for l in out:gmatch("[^\n]+") do
    if not l:match("^event,") then
      local f = {}
      for x in (l .. ","):gmatch("([^,]*),") do f[#f + 1] = x end
      rows[#rows + 1] = {event = f[1], side = f[2], hits = tonumber(f[3]), value = tonumber(f[4]),
        ratio = tonumber(f[5]), lo = tonumber(f[6]), hi = tonumber(f[7]), mark = f[8]}
    end
  end
  return rows
end

local function valgrind(pending) return support.need_command(pending, "valgrind") end

describe("perfsh compare", function()
  it("orders two commands by spin's exact instruction count (callgrind)", function()
    if not valgrind(pending) then return end
    -- spin(n) is 3n + 6 instructions (examples/loop.c)
    local out, err, rc = support.sh(P .. " compare --engine callgrind -r spin -- ./examples/loop 1000 1 -- "
      .. "./examples/loop 2000 1")
    assert.are.equal(0, rc, err .. out)
    assert.truthy(out:find("\n  Ir +1: ./examples/loop 1000 1 +1 +3,006 +1%.000 +%(reference%)\n"), out)
    assert.truthy(out:find("\n  Ir +2: ./examples/loop 2000 1 +1 +6,006 +1%.998 +1%.998%.%.1%.998 +higher\n"), out)
    out, err, rc = support.sh(P .. " compare --engine callgrind --csv -r spin -- ./examples/loop 3000 1 -- "
      .. "./examples/loop 1000 1")
    assert.are.equal(0, rc, err .. out)
    local rows = csv(out)
    assert.are.equal(2, #rows)
    assert.are.same({9006, 3006}, {rows[1].value, rows[2].value})
    assert.are.equal("lower", rows[2].mark)
    assert.is.near(3006 / 9006, rows[2].ratio, 1e-6)
  end)

  it("puts the grocery's three strategies side by side: the same instructions over one or two threads",
    function()
      if not valgrind(pending) then return end
      local out, err, rc = support.sh(P .. " compare --engine callgrind --csv -e Ir,D1mr -r update_1 "
        .. "-r update_2_thread -r update_3_thread ./examples/grocery 2000")
      assert.are.equal(0, rc, err .. out)
      local rows = csv(out)
      assert.are.equal(6, #rows)
      local ir = {}
      for _, r in ipairs(rows) do
        if r.event == "Ir" then ir[r.side] = r end
      end
      assert.are.same({1, 2, 2}, {ir.update_1.hits, ir.update_2_thread.hits, ir.update_3_thread.hits})
      -- the two threads of update_2 do update_1's work plus a job's indirection per product (< 1%);
      -- those of update_3 the same work over split structs (< 5%)
      assert.is_true(ir.update_2_thread.value >= ir.update_1.value, out)
      assert.is_true(ir.update_2_thread.ratio < 1.01, out)
      assert.is_true(ir.update_3_thread.value >= ir.update_1.value, out)
      assert.is_true(ir.update_3_thread.ratio < 1.05, out)
      assert.are.equal(ir.update_2_thread.ratio, ir.update_2_thread.lo)
      out, err, rc = support.sh(P .. " compare --engine callgrind --per-hit -r update_1 -r update_2_thread "
        .. "-r update_3_thread ./examples/grocery 2000")
      assert.are.equal(0, rc, err .. out)
      assert.truthy(out:find("median per hit; ratio to update_1", 1, true), out)
      assert.truthy(out:find("\n  Ir +update_2_thread +2 +[%d,]+ +0%.50%d +0%.50%d%.%.0%.50%d +lower\n"), out)
    end)

  it("measures with the counters engine over repeated runs (task-clock)", function()
    local out, err, rc = support.sh(P .. " compare --csv --runs 3 -e task-clock -r spin -- ./examples/loop "
      .. "200000 1 -- ./examples/loop 4000000 1")
    assert.are.equal(0, rc, err .. out)
    local rows = csv(out)
    assert.are.equal(6, #rows)
    assert.are.same({"task-clock", "task-clock", "time_ns", "time_ns", "wall_ns", "wall_ns"}, {rows[1].event,
      rows[2].event, rows[3].event, rows[4].event, rows[5].event, rows[6].event})
    -- 20 times the instructions: more on-CPU time whatever the load
    assert.is_true(rows[2].value > rows[1].value, out)
    assert.is_true(rows[2].lo <= rows[2].ratio and rows[2].ratio <= rows[2].hi, out)
    assert.truthy(({higher = true, ["~ within noise"] = true})[rows[2].mark], out)
  end)

  it("gives the grocery's strategies' on-CPU and wall time side by side (counters)", function()
    local out, err, rc = support.sh(P .. " compare --csv --runs 2 -e task-clock -r update_1 -r update_2 -r update_3 "
      .. "./examples/grocery 20000")
    assert.are.equal(0, rc, err .. out)
    local rows = csv(out)
    assert.are.equal(9, #rows)
    local sides, events = {}, {}
    for i, r in ipairs(rows) do
      sides[i], events[i] = r.side, r.event
      assert.are.equal(1, r.hits)
      if r.event == "wall_ns" then assert.is_true(r.value > 0, out) end
    end
    assert.are.same({"update_1", "update_2", "update_3"}, {sides[7], sides[8], sides[9]})
    assert.are.same({"task-clock", "time_ns", "wall_ns"}, {events[1], events[4], events[7]})
  end)

  it("rejects bad input with one line and exit 2", function()
    local tip = " (perfsh compare --help)"
    local rows = {
      {"-r a ./x", "perfsh compare: one region of one command: give two or more -r REGION, or two commands as "
        .. "-- CMD1 -- CMD2" .. tip},
      {"-r a -r a ./x", "perfsh compare: region 'a' is given twice" .. tip},
      {"-r a -r b -- ./x -- ./y", "perfsh compare: two commands are compared on one region, not 2; give one -r"
        .. tip},
      {"-r a -- ./x --", "perfsh compare: a command is missing; give -- COMMAND1 ARGS -- COMMAND2 ARGS, or one "
        .. "COMMAND" .. tip},
      {"./x", "perfsh compare: no region given; name one with -r FUNCTION" .. tip},
      {"--bogus", "perfsh compare: unknown option '--bogus' (perfsh compare --help lists them)"},
      {"-r a --runs", "perfsh compare: --runs needs a value" .. tip},
      {"--runs 0 -r a -r spin ./examples/loop", "perfsh compare: --runs needs a positive count, not '0'"},
      {"--engine gpu -r a -r spin ./examples/loop", "perfsh compare: --engine must be counters or callgrind, "
        .. "not 'gpu'"},
    }
    for _, row in ipairs(rows) do
      local out, err, rc = support.sh(P .. " compare " .. row[1])
      assert.are.equal(2, rc, row[1] .. ": " .. err .. out)
      assert.are.equal(row[2] .. "\n", err, row[1])
      assert.are.equal("", out)
    end
  end)

  it("exits 2 naming a region that is not in the program (callgrind)", function()
    if not valgrind(pending) then return end
    local out, err, rc = support.sh(P .. " compare --engine callgrind -r nosuch -r spin ./examples/loop 10 1")
    assert.are.equal(2, rc, err .. out)
    assert.are.equal("perfsh compare: region 'nosuch': no function 'nosuch' in ./examples/loop\n", err)
  end)

  it("prints its usage with --help", function()
    local out, err, rc = support.sh(P .. " compare --help")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("perfsh compare -r REGION [options] -- COMMAND1 [ARGS...] -- COMMAND2", 1, true), out)
  end)
end)
