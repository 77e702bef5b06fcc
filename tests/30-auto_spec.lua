-- The default catcher, auto: for a program perfsh starts, the cheapest that works, in the order
-- in-process (inproc), uprobe, ptrace, the header saying which; for an attach (-p), uprobe. A
-- region the in-process catcher refuses (its code, core.errors.needs_uprobe) moves the program,
-- held before its first instruction, to the next one, with one note.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")
local P = support.perfsh
local D = "env -u PERFSH_BACKEND " .. P -- the default: no --backend, no $PERFSH_BACKEND

-- true when auto can take the in-process catcher here; else the test is pending with the reason.
local function need_inproc(pending)
  local ok, why = core.inproc_available()
  if not ok then pending("the in-process agent is not built: " .. why) end
  return ok
end

-- The hits of region @name in perfsh stat's report @out.
local function hits(out, name)
  return tonumber(out:match("\nregion " .. name:gsub("%p", "%%%0") .. " %([%a_]+, (%d+) hits?"))
end

describe("auto", function()
  it("takes inproc for perfsh stat -r sum with no --backend, with ptrace's hits and no note", function()
    if not need_inproc(pending) then return end
    local out, err, rc = support.sh(D .. " stat -r sum ./examples/sum")
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    assert.truthy(out:find("caught by inproc; 0 stops\n", 1, true), out)
    local pout, perr, prc = support.sh(P .. " stat --backend ptrace -r sum ./examples/sum")
    assert.are.equal(0, prc, perr)
    assert.are.equal(1, hits(pout, "sum"), pout)
    assert.are.equal(hits(pout, "sum"), hits(out, "sum"), out)
    assert.are.equal(pout:match("^sum = %d+\n"), out:match("^sum = %d+\n"))
  end)

  it("takes inproc for sampling (--sample, --every), with the calls counted", function()
    if not need_inproc(pending) then return end
    local out, err, rc = support.sh(D .. " stat --sample 0.01 -r spin -e task-clock examples/loop 1 20000")
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    assert.truthy(out:find("caught by inproc", 1, true), out)
    local n = tonumber(out:match("sampled: (%d+) of 20000 calls recorded"))
    assert.truthy(n and n > 50 and n < 600, out)
    out, err, rc = support.sh(D .. " stat --every 10 -r spin -e task-clock examples/loop 1 20000")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("caught by inproc", 1, true), out)
    assert.truthy(out:find("region spin (func, 2000 hits, sampled from 20000 calls)", 1, true), out)
    local _, err2, rc2 = support.sh(D .. " tail --every 10 -r spin -e task-clock examples/loop 1 20000")
    assert.are.equal(0, rc2, err2)
    assert.truthy(err2:find("perfsh tail: spin: 2000 hits sampled of 20000", 1, true), err2)
    assert.truthy(err2:find("caught by inproc\n", 1, true), err2)
  end)

  it("measures a line range in the program, as ptrace does", function()
    if not need_inproc(pending) then return end
    local r = "sum.c:23-24"
    local out, err, rc = support.sh(D .. " stat -r " .. r .. " -e task-clock ./examples/sum")
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    assert.truthy(out:find("caught by inproc; 0 stops\n", 1, true), out)
    assert.are.equal(1, hits(out, r), out)
  end)

  it("moves a range inproc cannot patch to uprobe (before the program runs), the header and one note saying so",
    function()
    if not need_inproc(pending) or not support.need_uprobes(pending) then return end
    local exe = os.tmpname()
    local _, berr, brc = support.sh(("cc -O2 -fno-align-loops -g -o %s tests/fixtures/rangebranch.c"):format(exe))
    assert.are.equal(0, brc, berr)
    -- a branch of the loop lands inside the 5 bytes the range's start would displace
    local r = "rangebranch.c:12-17"
    local out, err, rc = support.sh(D .. " stat -r " .. r .. " -e task-clock " .. exe)
    os.remove(exe)
    assert.are.equal(0, rc, err)
    assert.are.equal("perfsh stat: note: backend auto: uprobe, as the in-process catcher cannot measure region '"
      .. r .. "' yet\n", err)
    assert.truthy(out:find("caught by uprobe; 1 stop\n", 1, true), out)
    assert.are.equal(1, hits(out, r), out)
  end)

  it("keeps the regions armed before the move and their order, in perfsh stat and in the Lua API", function()
    if not need_inproc(pending) or not support.need_uprobes(pending) then return end
    local out, err, rc = support.sh(D .. " stat -r sum -r sum.c:23-24 -e task-clock ./examples/sum")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("caught by uprobe", 1, true), out)
    assert.are.same({1, 1}, {hits(out, "sum"), hits(out, "sum.c:23-24")}, out)
    local t <close> = perfsh.spawn{"examples/sum", events = {"task-clock"}, backend = "auto", stdout = "/dev/null"}
    assert.are.same({"inproc", nil}, {t.catcher, t.note})
    local pid = t:info().pid
    local f = t:region{func = "sum"}
    local l = t:region{range = "sum.c:23-24"}
    assert.are.equal("uprobe", t.catcher)
    assert.are.equal("backend auto: uprobe, as the in-process catcher cannot measure region 'sum.c:23-24' yet",
      t.note)
    assert.are_not.equal(pid, t:info().pid)
    assert.truthy(support.gone(pid), "the first program, held before its first instruction, is gone")
    assert.are.same({f, l}, t.regions)
    assert.are.equal(0, t:run().code)
    assert.are.same({1, 1}, {f:stats().hits, l:stats().hits})
  end)

  it("stays with the in-process catcher once the program has run, or the user set its policy", function()
    if not need_inproc(pending) then return end
    local t <close> = perfsh.spawn{"examples/loop", "1", "200", events = {"task-clock"}, backend = "auto",
      stdout = "/dev/null"}
    t:region{func = "spin"}
    t:markers{sample = 0.5}
    local r, why, code = t:try_region{range = "loop.c:42-loop.c:44"}
    if r then return end -- the in-process catcher measures line ranges now: nothing to fall back from
    assert.are.same({"inproc", core.errors.needs_uprobe}, {t.catcher, code})
    assert.truthy(why:find("use --backend uprobe", 1, true), why)
    -- 200 calls of spin(2,000,000): over a second of work, paused after 50 ms
    local t2 <close> = perfsh.spawn{"examples/loop", "2000000", "200", events = {"task-clock"}, backend = "auto",
      stdout = "/dev/null"}
    local spin = t2:region{func = "spin"}
    local pid = t2:info().pid
    assert.are.same({nil, "paused"}, {t2:run{seconds = 0.05}})
    local _, _, code2 = t2:try_region{func = "main"}
    assert.are.same({"inproc", core.errors.needs_uprobe, pid}, {t2.catcher, code2, t2:info().pid})
    assert.are.equal(0, t2:run().code)
    assert.are.equal(200, spin:stats().hits)
  end)

  it("moves a function with inlined copies to uprobe, which measures the copies too", function()
    if not need_inproc(pending) or not support.need_uprobes(pending) then return end
    local exe = os.tmpname()
    local _, cerr, crc = support.sh(("cc -O2 -g -o %s tests/fixtures/inline_both.c"):format(support.q(exe)))
    assert.are.equal(0, crc, cerr)
    local out, err, rc = support.sh(("%s stat -r step -e task-clock %s 30 50 2"):format(D, exe))
    os.remove(exe)
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("caught by uprobe", 1, true), out)
    assert.truthy(err:find("backend auto: uprobe, as the in-process catcher cannot measure region 'step' yet",
      1, true), err)
    assert.truthy(out:find("\nregion step@inline#0 in main (range, 30 hits)", 1, true), out)
  end)

  it("moves a Rust program to uprobe where the in-process catcher refuses it", function()
    if not io.open("examples/grocery_rs") then
      pending("examples/grocery_rs is not built: rustc is not installed (make deps installs it)")
      return
    end
    if not need_inproc(pending) or not support.need_uprobes(pending) then return end
    local out, err, rc = support.sh(D .. " stat -r update_product -e task-clock examples/grocery_rs 300 4 3")
    assert.are.equal(0, rc, err)
    assert.are.equal(1200, hits(out, "update_product"), out)
    if out:find("caught by inproc", 1, true) then return end -- the in-process catcher measures Rust now
    assert.truthy(out:find("caught by uprobe", 1, true), out)
    assert.truthy(err:find("^perfsh stat: note: backend auto: uprobe, as the in%-process catcher cannot measure "
      .. "region 'update_product' yet\n"), err)
  end)

  it("takes uprobe for an attach (-p): loading a library into a running process is the user's choice", function()
    if not support.need_uprobes(pending) then return end
    local p, pid = support.background("examples/threads", "20000 50000")
    local out, err, rc = support.sh(D .. " stat -r work -e task-clock --seconds 0.3 -p " .. pid)
    local rest = p:read("a")
    p:close()
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    assert.truthy(out:find("caught by uprobe", 1, true), out)
    assert.are.equal("calls = 40000\n", rest)
  end)

  it("takes uprobe where the agent library is missing (a build without it), silently", function()
    if not support.need_uprobes(pending) then return end
    local out, err, rc = support.sh("PERFSH_AGENT=/nonexistent/libperfsh-agent.so " .. D
      .. " stat -r sum -e task-clock ./examples/sum")
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    assert.truthy(out:find("caught by uprobe; 1 stop\n", 1, true), out)
    local ok, why = core.inproc_available()
    assert.is_true(ok, why) -- PERFSH_AGENT was the child's only
  end)

  it("takes uprobe with --follow-fork (the agent does not follow forked children), which --backend inproc refuses",
    function()
    if not need_inproc(pending) or not support.need_uprobes(pending) then return end
    local out, err, rc = support.sh(D .. " stat --follow-fork -r step -e task-clock examples/forks 5")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("caught by uprobe", 1, true), out)
    assert.are.equal(6, hits(out, "step"), out)
    local _, err2, rc2 = support.sh(P .. " stat --backend inproc --follow-fork -r step -e task-clock examples/forks 5")
    assert.are.equal(2, rc2, err2)
    assert.truthy(err2:find("inproc does not follow forked children yet; use backend uprobe", 1, true), err2)
  end)

  it("takes uprobe for several counter groups (the in-process catcher counts one)", function()
    if not need_inproc(pending) or not support.need_uprobes(pending) then return end
    local out, err, rc = support.sh(D .. " stat -r sum -e task-clock -g page-faults ./examples/sum")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("caught by uprobe", 1, true), out)
  end)
end)
