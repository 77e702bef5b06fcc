-- perfsh stat: the recipe's output, CSV, exit status and errors.
local core = require "perfsh.core"
local support = dofile("tests/support.lua")
local P = support.perfsh

describe("perfsh stat", function()
  it("prints one aggregated table per region", function()
    local out, err, rc = support.sh(P .. " stat -r sum -e task-clock examples/sum")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("region sum (func, 1 hit)", 1, true))
    assert.truthy(out:find("\n  task%-clock +1 "))
    assert.truthy(out:find("\n  time %(us%) +1 "))
    assert.truthy(out:find("time: on-CPU time of the thread", 1, true))
  end)

  it("prints CSV rows: region,event,hits,total,mean,min,p50,p99,max,scaling", function()
    local out, err, rc = support.sh(P .. " stat --csv -r walk -e task-clock,page-faults examples/recursive 4 6")
    assert.are.equal(0, rc, err)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal("checksum = 112", lines[1]) -- the target's own output: 4*7*8/2
    assert.are.equal("region,event,hits,total,mean,min,p50,p99,max,scaling", lines[2])
    assert.truthy(lines[3]:match("^walk,task%-clock,4,%d+,[%d.]+,%d+,%d+,%d+,%d+,1%.0000$"), lines[3])
    assert.truthy(lines[4]:match("^walk,page%-faults,4,"), lines[4])
    assert.truthy(lines[5]:match("^walk,time_ns,4,"), lines[5])
    assert.are.equal(5, #lines)
  end)

  it("prints one row per call with --every-call, and every level with --every-level", function()
    local out, _, rc = support.sh(P .. " stat --csv --every-call --every-level -r walk -e task-clock "
      .. "examples/recursive 2 3")
    assert.are.equal(0, rc)
    local n = 0
    for _ in out:gmatch("\nwalk,hit,") do n = n + 1 end
    assert.are.equal(8, n) -- 2 calls of depth 3: 4 levels each
  end)

  it("splits by thread with --per-thread", function()
    local out, _, rc = support.sh(P .. " stat --csv --per-thread -r work -e task-clock examples/threads 30 100")
    assert.are.equal(0, rc)
    local n = 0
    for _ in out:gmatch("\nwork@%d+,task%-clock,30,") do n = n + 1 end
    assert.are.equal(2, n)
  end)

  it("matches callgrind's instruction count of sum within 0.01% + 2", function()
    if not support.need_pmu(pending) then return end
    local cg = os.tmpname()
    local _, err, rc = support.sh(("valgrind --tool=callgrind --toggle-collect=sum --callgrind-out-file=%s "
      .. "examples/sum"):format(cg))
    assert.are.equal(0, rc, err)
    local f = assert(io.open(cg))
    local want = tonumber(f:read("a"):match("\ntotals: (%d+)"))
    f:close()
    os.remove(cg)
    local out
    out, err, rc = support.sh(P .. " stat -r sum --csv -e instructions examples/sum")
    assert.are.equal(0, rc, err)
    local hits, got = out:match("\nsum,instructions,(%d+),(%d+),")
    assert.are.equal("1", hits)
    got = tonumber(got)
    assert.is_true(math.abs(got - want) <= want * 1e-4 + 2, ("perfsh %d, callgrind %d"):format(got, want))
  end)

  it("exits with the target's status, 128 + signal when killed", function()
    local _, err, rc = support.sh(P .. " stat -r step -e task-clock examples/crash")
    assert.are.equal(139, rc)
    assert.truthy(err:find("step 4", 1, true))
    local out
    out, _, rc = support.sh(P .. " stat -r step -e task-clock examples/crash")
    assert.are.equal(139, rc)
    assert.truthy(out:find("killed by SIGSEGV", 1, true))
    assert.truthy(out:find("region step (func, 4 hits, 1 incomplete", 1, true))
  end)

  it("gives one-line errors for bad input", function()
    local rows = {
      {"stat -r nosuch examples/sum", "perfsh stat: region 'nosuch': no function 'nosuch' in "},
      {"stat -r sum examples/sum-stripped", "is stripped (no .symtab): rebuild it without -s"},
      {"stat -r sum -e instrs examples/sum", "perfsh stat: unknown event 'instrs'; did you mean 'instructions'"},
      {"stat -r sum ./no/such/program",
        "perfsh stat: cannot run './no/such/program': no such program; give the path of a program"},
      {"stat examples/sum", "perfsh stat: no region given; name one with -r FUNCTION or -r FILE:L1-L2"},
      {"stat -r sum", "perfsh stat: no command given (or -p PID to attach)"},
      {"stat --bogus -r sum examples/sum", "perfsh stat: unknown option '--bogus' (perfsh stat --help lists them)"},
      {"stat -r sum -p 999999999", "perfsh stat: "},
      {"stat -r loop.c:42 examples/loop", "perfsh stat: region 'loop.c:42' is one line; a line region is a range "
        .. "FILE:L1-L2 (from L1 to L2, L2 excluded), e.g. loop.c:42-43"},
    }
    for _, row in ipairs(rows) do
      local _, err, rc = support.sh(P .. " " .. row[1])
      assert.are.equal(2, rc, row[1])
      assert.truthy(err:find(row[2], 1, true), row[1] .. " -> " .. err)
      local _, nl = err:gsub("\n", "")
      assert.are.equal(1, nl, row[1] .. " prints one line: " .. err)
    end
  end)

  it("reads several groups with -g, each event with its own group's scaling", function()
    local out, err, rc = support.sh(P .. " stat --csv -r walk -e task-clock -g page-faults,context-switches "
      .. "-g cpu-clock examples/recursive 3 4")
    assert.are.equal(0, rc, err)
    for _, e in ipairs{"task-clock", "page-faults", "context-switches", "cpu-clock", "time_ns"} do
      assert.truthy(out:find("\nwalk," .. e:gsub("%-", "%%-") .. ",3,"), e)
    end
    -- task-clock and cpu-clock of the same hits agree within 25%
    local tc = tonumber(out:match("\nwalk,task%-clock,3,(%d+),"))
    local cc = tonumber(out:match("\nwalk,cpu%-clock,3,(%d+),"))
    assert.is_true(math.abs(tc - cc) <= 0.25 * tc, tc .. " vs " .. cc)
  end)

  -- examples/attribute's touch_pages(a, b, c) takes a + 3b + 7c page faults a call: each call's
  -- count is known from the a, b, c it prints (ATTRIBUTE_VERBOSE)
  local function pages_per_call(err)
    local calls = {}
    for a, b, c in err:gmatch("(%d+) (%d+) (%d+)\n") do calls[#calls + 1] = a + 3 * b + 7 * c end
    table.sort(calls)
    local sum = 0
    for _, n in ipairs(calls) do sum = sum + n end
    return calls, sum
  end

  it("reads several groups with -g under the uprobe catcher, each group's records merged into one hit", function()
    if not support.need_uprobes(pending) then return end
    local out, err, rc = support.sh("ATTRIBUTE_VERBOSE=1 " .. P .. " stat --backend uprobe --csv -r touch_pages "
      .. "-g page-faults -g task-clock,context-switches -e cpu-clock examples/attribute 20 pages")
    assert.are.equal(0, rc, err)
    local calls, sum = pages_per_call(err)
    assert.are.equal(20, #calls, err)
    for _, e in ipairs{"cpu-clock", "page-faults", "task-clock", "context-switches", "time_ns"} do
      assert.truthy(out:find("\ntouch_pages," .. e:gsub("%-", "%%-") .. ",20,"), e .. "\n" .. out)
    end
    -- each hit has its own group's page faults: the fewest and the most a call takes, and in
    -- all at most a few more than the calls' own (the first call's lazy binding)
    local total, min, max = out:match("\ntouch_pages,page%-faults,20,(%d+),[%d.]+,(%d+),%d+,%d+,(%d+),1%.0000")
    assert.truthy(total, out)
    assert.are.equal(calls[1], tonumber(min))
    assert.are.equal(calls[#calls], tonumber(max))
    assert.is_true(tonumber(total) >= sum and tonumber(total) <= sum + 5, total .. " vs " .. sum)
    -- task-clock (second group) and cpu-clock (first) of the same hits agree within 25%
    local tc = tonumber(out:match("\ntouch_pages,task%-clock,20,(%d+),[%d.]+,%d+,%d+,%d+,%d+,1%.0000"))
    local cc = tonumber(out:match("\ntouch_pages,cpu%-clock,20,(%d+),"))
    assert.truthy(tc and cc, out)
    assert.is_true(math.abs(tc - cc) <= 0.25 * tc, tc .. " vs " .. cc)
  end)

  it("takes the uprobe catcher for several groups of software events by default", function()
    if not support.need_uprobes(pending) then return end
    local out, err, rc = support.sh("env -u PERFSH_BACKEND " .. P .. " stat -r touch_pages -g page-faults "
      .. "-g task-clock examples/attribute 3 pages")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("caught by uprobe; 1 stop\n", 1, true), out)
    assert.falsy(err:find("note: backend auto", 1, true), err)
    assert.truthy(out:find("region touch_pages (func, 3 hits)", 1, true), out)
    assert.truthy(out:find("\n  page%-faults +3 "), out)
    assert.truthy(out:find("\n  task%-clock +3 "), out)
  end)

  it("multiplexes more hardware events than counters and scales them", function()
    if not support.need_pmu(pending) then return end
    local n = math.max(core.pmu_counters(), 4)
    local g1 = {}
    local pool = {"instructions", "cycles", "branches", "branch-misses", "cache-references", "cache-misses",
      "instructions:k", "cycles:k"}
    for i = 1, n do g1[#g1 + 1] = pool[(i - 1) % #pool + 1] .. (i > #pool and ":u" or "") end
    local g2 = {"instructions:u", "cycles:u"}
    local out, err, rc = support.sh(P .. " stat --csv -r spin -g " .. table.concat(g1, ",") .. " -g "
      .. table.concat(g2, ",") .. " examples/loop 3000000 3")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("\nspin,instructions:u,3,", 1, true), out)
  end)

  it("writes the report to a file with -o", function()
    local path = os.tmpname()
    local out, err, rc = support.sh(P .. " stat -o " .. path .. " -r sum -e task-clock examples/sum")
    assert.are.equal(0, rc, err)
    assert.are.equal("sum = 10736046639121121\n", out) -- only the target's own output
    local f = assert(io.open(path))
    assert.truthy(f:read("a"):find("region sum (func, 1 hit)", 1, true))
    f:close()
    os.remove(path)
  end)

  it("gates a regression in a script (examples/check.lua)", function()
    local out, _, rc = support.sh(P .. " examples/check.lua ./examples/sum sum 1e12")
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("\nok\n", 1, true))
    out, _, rc = support.sh(P .. " examples/check.lua ./examples/sum sum 1")
    assert.are.equal(1, rc)
    assert.truthy(out:find("FAIL: sum is ", 1, true))
  end)

  it("lists events with --list", function()
    local out, _, rc = support.sh(P .. " stat --list sw")
    assert.are.equal(0, rc)
    assert.truthy(out:find("task-clock", 1, true))
  end)

  it("counts a region of an attached process for a time, then lets it go", function()
    local p, pid = support.background("examples/threads", "20000 50000")
    local out, err, rc = support.sh(P .. " stat --csv -r work -e task-clock --seconds 0.3 -p " .. pid)
    local rest = p:read("a")
    p:close()
    assert.are.equal(0, rc, err)
    assert.truthy(out:match("\nwork,task%-clock,%d+,"))
    assert.are.equal("calls = 40000\n", rest)
  end)
end)
