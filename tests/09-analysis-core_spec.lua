-- The analysis helpers of perfsh.core: core.hist, core.topology, core.lstsq.
local core = require "perfsh.core"
local support = dofile("tests/support.lua")

--- Nearest-rank quantile of a sorted array (as core/records/stats.c computes it).
local function nearest_rank(sorted, q)
  local rank = math.max(1, math.min(#sorted, math.ceil(q * #sorted)))
  return sorted[rank]
end

local function relerr(got, want)
  if got == want then return 0 end
  return math.abs(got - want) / math.abs(want)
end

describe("core.hist()", function()
  local values, sorted, h
  setup(function()
    math.randomseed(9)
    values = {}
    for i = 1, 100000 do
      -- lognormal with a heavy tail, plus integers from 1 to 1e9
      local z = math.sqrt(-2 * math.log(1 - math.random())) * math.cos(2 * math.pi * math.random())
      values[i] = i % 2 == 0 and math.exp(8 + 2 * z) or math.random(1, 1000000000)
    end
    sorted = {}
    for i = 1, #values do sorted[i] = values[i] end
    table.sort(sorted)
    h = core.hist()
    h:add_all(values)
  end)

  it("estimates quantiles within 1% of the exact nearest-rank ones", function()
    for _, q in ipairs{0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999} do
      local want = nearest_rank(sorted, q)
      local got = h:quantile(q)
      assert.is_true(relerr(got, want) <= 0.01, ("q %g: got %.17g, want %.17g"):format(q, got, want))
    end
    assert.are.equal(sorted[1], h:quantile(0))
    assert.are.equal(sorted[#sorted], h:quantile(1))
  end)

  it("keeps count, min and max exact, and sum, mean and stddev as core.stats does", function()
    local st = core.stats(values)
    assert.are.equal(#values, h:count())
    assert.is.equal(math.type(h:count()), "integer")
    assert.are.equal(sorted[1], h:min())
    assert.are.equal(sorted[#sorted], h:max())
    assert.is_true(relerr(h:sum(), st.sum) < 1e-12)
    assert.is_true(relerr(h:mean(), st.mean) < 1e-9)
    assert.is_true(relerr(h:stddev(), st.stddev) < 1e-9)
  end)

  it("gives buckets in increasing order whose counts add up", function()
    local total, prev = 0, -math.huge
    local b = h:buckets()
    assert.is_true(#b > 100 and #b < 2000)
    for _, bk in ipairs(b) do
      assert.is_true(bk.lo < bk.hi and bk.lo >= prev)
      assert.is.equal("integer", math.type(bk.count))
      total = total + bk.count
      prev = bk.hi
    end
    assert.are.equal(#values, total)
  end)

  it("merges: the same as adding every value to one histogram", function()
    local a, b, all = core.hist(), core.hist(), core.hist()
    for i = 1, 2000 do
      local v = values[i]
      if i % 3 == 0 then a:add(v) else b:add(v) end
      all:add(v)
    end
    assert.are.equal(a, a:merge(b))
    assert.are.equal(all:count(), a:count())
    assert.are.equal(all:min(), a:min())
    assert.are.equal(all:max(), a:max())
    for _, q in ipairs{0.1, 0.5, 0.9, 0.99} do assert.are.equal(all:quantile(q), a:quantile(q)) end
    assert.are.same(all:buckets(), a:buckets())
    a:merge(a)
    assert.are.equal(2 * all:count(), a:count())
  end)

  it("counts a value n times, zeros and negatives", function()
    local s = core.hist()
    assert.are.equal(s, s:add(100):add(300, 3))
    assert.are.equal(4, s:count())
    assert.are.equal(1000, s:sum())
    assert.are.equal(250, s:mean())
    assert.is_true(relerr(s:stddev(), 100) < 1e-12)
    s:add(0):add(-50)
    assert.are.equal(-50, s:min())
    assert.are.equal(0, s:quantile(2 / 6))
    local b = s:buckets()
    assert.are.equal(4, #b)
    assert.is_true(b[1].lo < -50 and b[1].hi >= -50)
    assert.are.same({lo = 0, hi = 0, count = 1}, b[2])
  end)

  it("answers nil for the statistics of an empty histogram", function()
    local e = core.hist()
    assert.are.equal(0, e:count())
    assert.are.equal(0, e:sum())
    assert.is_nil(e:quantile(0.5))
    assert.is_nil(e:min())
    assert.is_nil(e:mean())
    assert.are.same({}, e:buckets())
    assert.are.equal("perfsh.hist(empty)", tostring(e))
  end)

  it("prints a summary", function()
    local s = core.hist():add(1):add(2):add(3)
    assert.are.equal("perfsh.hist(n=3, min=1, p50=2.01955, p99=3, max=3)", tostring(s))
  end)

  it("rejects bad values and arguments", function()
    local s = core.hist()
    assert.has.error(function() s:add(0 / 0) end, "bad argument #1 to 'add' (value is NaN)")
    assert.has.error(function() s:add(math.huge) end, "bad argument #1 to 'add' (value is infinite)")
    assert.has.error(function() s:add(1, -1) end, "bad argument #2 to 'add' (count must not be negative)")
    assert.has.error(function() s:add("x") end)
    assert.has.error(function() s:quantile(1.5) end,
      "bad argument #1 to 'quantile' (quantile must be between 0 and 1)")
    assert.has.error(function() s:add_all{1, 2, "three"} end,
      "bad argument #1 to 'add_all' (element 3 is a string, not a number)")
    assert.are.equal(2, s:count()) -- the elements before the bad one were added
    assert.has.error(function() s:merge({}) end)
  end)

  it("closes: explicitly, by <close>, and refuses use afterwards", function()
    local s = core.hist()
    s:close()
    s:close()
    assert.are.equal("perfsh.hist(closed)", tostring(s))
    assert.has.error(function() s:add(1) end, "attempt to use a closed histogram")
    local kept
    do
      local c <close> = core.hist()
      kept = c
    end
    assert.has.error(function() kept:count() end, "attempt to use a closed histogram")
  end)
end)

describe("core.topology()", function()
  it("lists every online CPU of this machine", function()
    local t = assert(core.topology())
    local p = io.popen("getconf _NPROCESSORS_ONLN")
    local want = tonumber(p:read("l"))
    p:close()
    assert.are.equal(want, t.n)
    local seen = 0
    for cpu, c in pairs(t) do
      if cpu ~= "n" then
        seen = seen + 1
        assert.are.equal(cpu, c.cpu)
        for _, k in ipairs{"package", "die", "core", "l3"} do
          assert.is.equal("integer", math.type(c[k]))
          assert.is_true(c[k] >= -1)
        end
      end
    end
    assert.are.equal(t.n, seen)
    assert.is_table(t[0])
  end)

  it("reads a fake tree, with -1 for what it lacks", function()
    local dir = os.tmpname()
    os.remove(dir)
    local files = {
      ["online"] = "0-1,3",
      ["cpu0/topology/physical_package_id"] = "0", ["cpu0/topology/core_id"] = "0",
      ["cpu0/topology/die_id"] = "0",
      ["cpu0/cache/index0/level"] = "1", ["cpu0/cache/index3/level"] = "3",
      ["cpu0/cache/index3/shared_cpu_list"] = "0-1,3",
      ["cpu1/topology/physical_package_id"] = "0", ["cpu1/topology/core_id"] = "0",
      ["cpu1/cache/index3/level"] = "3", ["cpu1/cache/index3/id"] = "7",
      ["cpu3/topology/physical_package_id"] = "1",
    }
    for rel, text in pairs(files) do
      local path = dir .. "/" .. rel
      assert(os.execute("mkdir -p " .. support.q(path:match("(.*)/"))))
      local f = assert(io.open(path, "w"))
      f:write(text, "\n")
      f:close()
    end
    local t = assert(core.topology(dir))
    os.execute("rm -rf " .. support.q(dir))
    assert.are.same({
      n = 3,
      [0] = {cpu = 0, package = 0, die = 0, core = 0, l3 = 0},
      [1] = {cpu = 1, package = 0, die = -1, core = 0, l3 = 7},
      [3] = {cpu = 3, package = 1, die = -1, core = -1, l3 = -1},
    }, t)
  end)

  it("fails with nil, a message and errno when there is no tree", function()
    local t, msg, code = core.topology("/nonexistent/cpu")
    assert.is_nil(t)
    assert.are.equal("topology: cannot read /nonexistent/cpu/online: No such file or directory", msg)
    assert.are.equal(2, code)
  end)
end)

describe("core.lstsq()", function()
  it("recovers known costs with a constant column", function()
    math.randomseed(3)
    local rows, b = {}, {}
    for i = 1, 200 do
      local x1, x2, x3 = math.random(0, 1000000), math.random(0, 1000), math.random(0, 50)
      rows[i] = {x1, x2, x3, 1}
      b[i] = 10 * x1 + 25 * x2 + 100 * x3 + 15 + (math.random() - 0.5) / 50
    end
    local r = core.lstsq(rows, b)
    for j, want in ipairs{10, 25, 100, 15} do
      assert.is_true(relerr(r.x[j], want) < 1e-3, ("x[%d] = %.9g, want %g"):format(j, r.x[j], want))
    end
    assert.are.equal(4, r.rank)
    assert.are.equal(4, #r.singular)
    assert.is_true(r.rss >= 0 and r.rss < 0.1)
    assert.is_true(r.cond >= 1 and r.cond < 100)
    assert.is_true(math.abs(r.cond - r.singular[1] / r.singular[4]) < 1e-9 * r.cond)
  end)

  it("solves an exact system", function()
    local r = core.lstsq({{2, 1}, {1, -1}, {1, 3}}, {5, 1, 5})
    assert.is_true(math.abs(r.x[1] - 2) < 1e-12 and math.abs(r.x[2] - 1) < 1e-12)
    assert.is_true(r.rss < 1e-20)
  end)

  it("raises one-line errors", function()
    assert.has.error(function() core.lstsq({{1, 2, 3}, {4, 5, 6}}, {1, 2}) end,
      "too few hits: 2 observations for 3 unknowns")
    assert.has.error(function() core.lstsq({{1, 2}, {2, 4}, {3, 6}}, {1, 2, 3}) end,
      "rank deficient: rank 1 of 2 columns (column 2 is (nearly) proportional to column 1)")
    assert.has.error(function() core.lstsq({{1, 2}, {3, 0 / 0}, {5, 6}}, {1, 2, 3}) end,
      "NaN in row 2, column 2")
    assert.has.error(function() core.lstsq({{1, 2}, {3}}, {1, 2}) end,
      "bad argument #1 to 'lstsq' (row 2 has 1 numbers, row 1 has 2)")
    assert.has.error(function() core.lstsq({{1, 2}, {3, "x"}}, {1, 2}) end,
      "bad argument #1 to 'lstsq' (row 2, element 2 is a string, not a number)")
    assert.has.error(function() core.lstsq({{1, 2}, {3, 4}}, {1}) end,
      "bad argument #2 to 'lstsq' (1 values for 2 rows)")
    assert.has.error(function() core.lstsq({}, {}) end, "bad argument #1 to 'lstsq' (no rows)")
  end)
end)

describe("core.rank() and core.median()", function()
  it("give the nearest rank that core.stats takes its quantiles at", function()
    local xs = {}
    for i = 1, 101 do xs[i] = (i * 37) % 101 end
    local sorted = {}
    for i, x in ipairs(xs) do sorted[i] = x end
    table.sort(sorted)
    local st = core.stats(xs)
    assert.are.equal(st.p50, sorted[core.rank(#sorted, 0.5)])
    assert.are.equal(st.p90, sorted[core.rank(#sorted, 0.9)])
    assert.are.equal(st.p99, sorted[core.rank(#sorted, 0.99)])
    assert.are.equal(1, core.rank(10, 0.1))
    assert.are.equal(2, core.rank(10, 0.11))
    assert.are.equal(0, core.rank(0, 0.5))
  end)

  it("takes the mean of the middle two of an even count, and keeps an odd count's integer", function()
    assert.are.equal(2.5, core.median{4, 1, 3, 2})
    assert.are.equal(5, core.median{9, 1, 5})
    assert.are.equal("integer", math.type(core.median{9, 1, 5}))
    assert.are.equal("float", math.type(core.median{9.0, 1, 5}))
    local m = core.median{}
    assert.is_true(m ~= m)
  end)
end)
