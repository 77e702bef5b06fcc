-- Line ranges around and inside loops: only the edges that start or end a hit stop the target.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")
local P = support.perfsh

local events, line_of = support.events, support.line_of

local function loops(marker) return line_of("examples/loops.c", "/* " .. marker .. " */") end

-- A stop per iteration would make these runs take hundreds of thousands of stops.
local FEW_STOPS = 50

-- The lowest address readelf shows a row of FILE:LINE at in EXE, other than @other: the line
-- table's own account, read apart from libdw.
local function first_addr(exe, file, line, other)
  local out = support.sh("readelf -W --debug-dump=decodedline " .. exe)
  local best
  for name, ln, a in out:gmatch("\n(%S+)%s+(%d+)%s+0x(%x+)") do
    a = tonumber(a, 16)
    if name == file and tonumber(ln) == line and a ~= other and (not best or a < best) then best = a end
  end
  return best
end

-- Run examples/loops N CALLS with a line range; returns its hits, the stops and the output.
local function run_loops(range, n, calls)
  local out = os.tmpname()
  local t <close> = perfsh.spawn{"examples/loops", tostring(n), tostring(calls), events = events(), stdout = out}
  local r = t:region{range = range}
  assert.are.equal(0, t:run().code)
  local f = assert(io.open(out))
  local text = f:read("a")
  f:close()
  os.remove(out)
  local hits = {}
  for h in r:hits() do hits[#hits + 1] = h end
  return hits, t:info().stops, text
end

describe("a line range and a loop", function()
  it("holds sum.c's whole array-filling loop up to the line after it: one hit, no stop per iteration", function()
    local body = line_of("examples/sum.c", "numbers[i] = (uint32_t)rand();")
    local after = line_of("examples/sum.c", "printf(\"sum = ")
    local out, err, rc = support.sh(("%s stat -r sum.c:%d-sum.c:%d -e task-clock examples/sum"):format(P, body - 1,
      after))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find(("region sum.c:%d-sum.c:%d (range, 1 hit)"):format(body - 1, after), 1, true), out)
    local stops = math.tointeger(tonumber(out:match("; (%d+) stops?")))
    assert.is_true(stops < FEW_STOPS, out)
  end)

  it("from sum()'s first line to its for line: one hit, or one line saying why not", function()
    local first = line_of("examples/sum.c", "uint64_t __attribute__((noinline)) sum(")
    local header = line_of("examples/sum.c", "for (int i = 0; i < SIZE; i++)")
    local out, err, rc = support.sh(("%s stat -r sum.c:%d-sum.c:%d -e task-clock examples/sum"):format(P, first,
      header))
    if rc == 0 then
      assert.truthy(out:find("(range, 1 hit)", 1, true), out)
    else
      -- gcc -O2 begins the function's first line and the loop's init at one address
      assert.truthy(err:find("^perfsh stat: region 'sum.c:%d+%-sum.c:%d+': ambiguous in this build: lines %d+ and %d+ "
        .. "of sum.c begin at one address %(0x%x+ in sum%)"), err)
      assert.are.equal(1, select(2, err:gsub("\n", "")), err)
    end
  end)

  it("stops once where a hit ends in a loop and no hit is open for its later iterations", function()
    -- from sum()'s entry to the compare of its loop, reached 2.5M times more after the hit:
    -- line 23's two blocks (readelf), as an address range
    local header = line_of("examples/sum.c", "s += numbers[i];") - 1
    local a = first_addr("examples/sum", "sum.c", header)
    local b = first_addr("examples/sum", "sum.c", header, a)
    local out, err, rc = support.sh(("%s stat -r 0x%x-0x%x -e task-clock examples/sum"):format(P, a, b))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find(("region 0x%x-0x%x (range, 1 hit)"):format(a, b), 1, true), out)
    assert.is_true(tonumber(out:match("; (%d+) stops?")) < FEW_STOPS, out)
  end)

  it("with the loop header as start line: one hit for the whole loop", function()
    local n = 200000
    local hits, stops, text = run_loops(("loops.c:%d-loops.c:%d"):format(loops("FILL-FOR"), loops("FILL-AFTER")), n, 1)
    assert.truthy(text:find("\nok\n$"), text)
    assert.are.equal(1, #hits)
    assert.is_true(stops < FEW_STOPS, tostring(stops))
    if core.pmu_present() then -- every iteration is in it: 8 instructions each at gcc 12 -O2
      assert.is_true(hits[1].instructions >= 5 * n and hits[1].instructions <= 12 * n + 50,
        tostring(hits[1].instructions))
    end
  end)

  it("with the loop header as end line: one hit, before the loop", function()
    local hits, stops = run_loops(("loops.c:%d-loops.c:%d"):format(loops("FILL-BEFORE"), loops("FILL-FOR")), 200000, 1)
    assert.are.equal(1, #hits)
    assert.is_true(stops < FEW_STOPS, tostring(stops))
    if core.pmu_present() then -- one store, and no iteration
      assert.is_true(hits[1].instructions >= 1 and hits[1].instructions <= 20, tostring(hits[1].instructions))
    end
  end)

  it("holding a whole loop with a jump table: one hit per call", function()
    local range = ("loops.c:%d-loops.c:%d"):format(loops("DISPATCH-FIRST"), loops("DISPATCH-AFTER"))
    local hits, stops, text = run_loops(range, 200000, 4)
    assert.truthy(text:find("\nok\n$"), text)
    assert.are.equal(4, #hits)
    assert.is_true(stops < FEW_STOPS, tostring(stops))
  end)

  it("from a case inside the loop to the line after it: one hit per call", function()
    local range = ("loops.c:%d-loops.c:%d"):format(loops("DISPATCH-CASE"), loops("DISPATCH-AFTER"))
    local hits = run_loops(range, 200, 3)
    assert.are.equal(3, #hits)
  end)

  it("over a line whose code is an inlined call, interleaved with the next line's: one hit", function()
    local hits, stops = run_loops(("loops.c:%d-loops.c:%d"):format(loops("MAIN-TWICE"), loops("MAIN-PRINT")), 1000, 2)
    assert.are.equal(1, #hits)
    assert.is_true(stops < FEW_STOPS, tostring(stops))
  end)

  it("says in one line that a range interleaved with its end line never ends", function()
    local body = line_of("examples/sum.c", "numbers[i] = (uint32_t)rand();")
    local _, err, rc = support.sh(("%s stat -r sum.c:%d-sum.c:%d -e task-clock examples/sum"):format(P, body - 1, body))
    assert.are_not.equal(0, rc)
    assert.truthy(err:find("the range never ends; choose another end line", 1, true), err)
    assert.are.equal(1, select(2, err:gsub("\n", "")), err)
  end)

end)
