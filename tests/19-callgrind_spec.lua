-- perfsh stat --engine callgrind: the deterministic engine, on any machine with valgrind.
local callgrind = require "perfsh.callgrind"
local support = dofile("tests/support.lua")
local P = support.perfsh

-- Run valgrind's callgrind directly; returns the text of its output file.
local function callgrind_out(flags, cmd)
  local cg = os.tmpname()
  local _, err, rc = support.sh(("valgrind -q --tool=callgrind %s --callgrind-out-file=%s %s"):format(flags, cg, cmd))
  assert.are.equal(0, rc, err)
  return support.take(cg)
end

describe("the callgrind engine", function()
  it("parses callgrind's output: events, totals, the calls of the toggled function", function()
    local text = callgrind_out("--toggle-collect=spin --dump-instr=no --branch-sim=yes", "examples/loop 100 7")
    local res = callgrind.parse(text, "spin")
    assert.are.same({"Ir", "Bc", "Bcm", "Bi", "Bim"}, res.events)
    assert.are.equal(7 * (3 * 100 + 6), res.totals.Ir) -- spin(n) retires 3n + 6 (examples/loop.c)
    assert.are.equal(7 * 101, res.totals.Bc) -- one conditional branch per iteration, and the n test
    assert.are.equal(7, res.calls)
    assert.is_true(res.seen)
    assert.is_false(callgrind.parse(text, "nosuch").seen)
    assert.are.equal(0, callgrind.parse(text, "nosuch").calls)
  end)

  it("counts the calls of a function: spin called N times has N hits", function()
    local out, err, rc = support.sh(P .. " stat --engine callgrind --csv -r spin -e Ir,cache examples/loop 50 13")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("\nspin,Ir,13," .. 13 * (3 * 50 + 6) .. ",156.00,,,,,1.0000\n", 1, true), out)
    assert.truthy(out:find("\nspin,D1mr,13,", 1, true), out)
    assert.truthy(out:find("\nspin,Dr,13,", 1, true), out)
  end)

  it("counts the outermost calls of a recursion, with the recursion's cost", function()
    local out, err, rc = support.sh(P .. " stat --engine callgrind --csv -r walk examples/recursive 4 6")
    assert.are.equal(0, rc, err)
    -- walk(n) retires 9n + 4 instructions, its recursion included (examples/recursive.c)
    assert.truthy(out:find("\nwalk,Ir,4," .. 4 * (9 * 6 + 4) .. ",", 1, true), out)
  end)

  it("gives callgrind's own Ir for sum()", function()
    local want = tonumber(callgrind_out("--toggle-collect=sum", "examples/sum"):match("\ntotals: (%d+)"))
    local out, err, rc = support.sh(P .. " stat --engine callgrind -r sum --csv examples/sum")
    assert.are.equal(0, rc, err)
    local got = out:match("\nsum,Ir,1,(%d+),")
    assert.are.equal(want, tonumber(got), out)
  end)

  it("prints the counter engine's table", function()
    local out, err, rc = support.sh(P .. " stat --engine callgrind -r spin -e instructions examples/loop 1000 1")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("region spin (func, 1 hit)", 1, true), out)
    assert.truthy(out:find("\n  Ir +1 +3,006 +3,006 +3,006 +3,006 +3,006\n"), out)
  end)

  it("refuses what it cannot measure, in one line", function()
    local rows = {
      {"-r loop.c:42-loop.c:44 examples/loop 1 1", "'loop.c:42-loop.c:44' is a line range: use the default engine"},
      {"-r sdt:perfsh:tick examples/loop 1 1", "is an SDT probe: use the default engine (--engine counters)"},
      {"-r spin -e cycles examples/loop 1 1", "--engine callgrind does not count 'cycles'"},
      {"-r spin -p 1", "--engine callgrind does not take -p"},
      {"-r nosuch examples/loop 1 1", "perfsh stat: region 'nosuch': no function 'nosuch' in examples/loop"},
    }
    for _, row in ipairs(rows) do
      local _, err, rc = support.sh(P .. " stat --engine callgrind " .. row[1])
      assert.are.equal(2, rc, row[1])
      assert.truthy(err:find(row[2], 1, true), err)
      assert.are.equal(1, select(2, err:gsub("\n", "")), err)
    end
  end)
end)
