-- The REPL: Tab completion (perfsh.complete, a pure function of the line), :help and help,
-- and one pass through a pseudo-terminal (script(1)) that completes with Tab.
local support = dofile("tests/support.lua")
local complete = require "perfsh.complete"
local repl = require "perfsh.repl"
local P = support.perfsh:match("^/") and support.perfsh or support.abspath((support.perfsh:gsub("^%./", "")))
local q = support.q

-- A tracee-like object: methods through its metatable's __index.
local Methods = {run = function() end, region = function() end, regions_of = {}, status = function() end}
Methods.__index = Methods
Methods.__tostring = function() return "t" end
local env = {
  globals = {
    perfsh = {group = function() end, spawn = function() end, stats = function() end, version = "0.1"},
    string = string, t = setmetatable({ud = 1, argv = {}}, Methods), s = "text", print = print,
    pairs = pairs, pcall = pcall,
  },
  events = function() return {"task-clock", "cpu-clock", "page-faults", "sched:sched_switch"} end,
  symbols = function() return {"sum", "sum_all", "main", "nap"} end,
  sources = function() return {"examples/sum.c", "/usr/include/stdlib.h", "/src/nap.c"} end,
}

local function cands(line)
  local c, start = complete.candidates(line, #line, env)
  return c, start
end

describe("Tab completion", function()
  local cases = {
    {"p", {"pairs", "pcall", "perfsh", "print"}, 1},
    {"per", {"perfsh"}, 1},
    {"x = pe", {"perfsh"}, 5},
    {"perfsh.", {"group", "spawn", "stats", "version"}, 8},
    {"perfsh.s", {"spawn", "stats"}, 8},
    {"print(perfsh.gr", {"group"}, 14},
    {"t:", {"region", "run", "status"}, 3},
    {"t:r", {"region", "run"}, 3},
    {"t.", {"argv", "region", "regions_of", "run", "status", "ud"}, 3},
    {"t:__to", {"__tostring"}, 3},
    {"string.fo", {"format"}, 8},
    {"s:up", {"upper"}, 3},
    {"s:len():", {}, 9},
    {"nothere.x", {}, 9},
    {"1.5", {}, 1},
    {'x = {events = {"ta', {"task-clock"}, 17},
    {'x = {events = {"task-clock", "c', {"cpu-clock"}, 31},
    {'perfsh.group{"sched:', {"sched:sched_switch"}, 15},
    {'perfsh.group "p', {"page-faults"}, 15},
    {'perfsh.group{"', {"cpu-clock", "page-faults", "sched:sched_switch", "task-clock"}, 15},
    {'t:region{func = "su', {"sum", "sum_all"}, 18},
    {'t:region{"su', {"sum", "sum.c:", "sum_all"}, 11},
    {'t:region{from = "examples/su', {"examples/sum.c:"}, 18},
    {'t:region{range = "su', {"sum.c:"}, 19},
    {'t:region{range = "na', {"nap.c:"}, 19},
    {'t:region{to = "/usr/include/st', {"/usr/include/stdlib.h:"}, 16},
    {'print("su', {}, 8},
    {'-- perfsh.', {}, 11},
  }
  for _, case in ipairs(cases) do
    it(("completes %s"):format(case[1]), function()
      local c, start = cands(case[1])
      assert.are.same(case[2], c)
      assert.are.equal(case[3], start)
    end)
  end

  it("completes at the cursor, not at the end of the line", function()
    local c, start = complete.candidates("perfsh.sp + 1", 9, env)
    assert.are.same({"spawn"}, c)
    assert.are.equal(8, start)
  end)

  it("offers no symbols or sources when no target is loaded", function()
    local c = complete.candidates('t:region{func = "su', 19, {globals = {}})
    assert.are.same({}, c)
  end)

  it("finds the REPL's names, the events that open here and a loaded target's symbols", function()
    assert.are.same({"spawn"}, (repl.complete("perfsh.spaw", 11)))
    assert.are.same({"task-clock"}, (repl.complete('perfsh.group{"task-cl', 21)))
    _G.repl_t = perfsh.spawn{"examples/sum", events = {"task-clock"}, stdout = "/dev/null"}
    local ok, err = pcall(function()
      assert.are.same({"sum"}, (repl.complete('repl_t:region{func = "su', 24)))
      assert.are.same({"examples/sum.c:"}, (repl.complete('repl_t:region{range = "examples/su', 33)))
    end)
    _G.repl_t:close()
    _G.repl_t = nil
    assert(ok, err)
  end)
end)

describe("top-level locals (perfsh.replenv)", function()
  local replenv = require "perfsh.replenv"
  local rows = {
    {"local x = 1", {"x"}},
    {"local a, b <const>, c <close> = 1, 2, nil", {"a", "b"}},
    {"local function f(n) local y = n return y end", {"f"}},
    {"do local z = 1 end", {}},
    {"for i = 1, 2 do local w = i end local v", {"v"}},
    {"while false do local w end if x then local q = 1 elseif y then local q2 else local q3 end local after = 1",
      {"after"}},
    {'local s = "local not_this" -- local nor_this', {"s"}},
    {"local t = {[ [[local k]] ] = function() local inner end} --[==[ local c ]==] local u", {"t", "u"}},
    {"repeat local r = 1 until r local w2", {"w2"}},
    {"local x = 1; local x = 2", {"x"}},
    {"x = 1 function g() local h end", {}},
  }
  for _, row in ipairs(rows) do
    it(("finds %s in %s"):format(#row[2] > 0 and table.concat(row[2], ", ") or "none", row[1]), function()
      assert.are.same(row[2], (replenv.top_locals(row[1])))
    end)
  end

  -- Run @chunks one after the other as the REPL does: rewritten, in the REPL's environment.
  local function run(chunks)
    local out = {}
    for i, code in ipairs(chunks) do
      local fn = assert(load(replenv.rewrite(code) or code, "=stdin", "t", replenv.env()))
      out[i] = table.pack(fn())
    end
    return out
  end

  it("keep their values for the next chunks, before a return too, without touching the globals", function()
    local out = run{"local kept_a, kept_b = 40, 2",
      "local function kept_f(n) return n <= 1 and 1 or n * kept_f(n - 1) end",
      "local kept_c = kept_a + kept_b return kept_c", "return kept_a + kept_b, kept_f(5), kept_c"}
    assert.are.same({42, 120, 42, n = 3}, out[4])
    assert.are.same({42, n = 1}, out[3])
    assert.is_nil(rawget(_G, "kept_a"))
    run{"local kept_a"}
    assert.is_nil(run{"return kept_a"}[1][1])
  end)

  it("close a <close> local at the end of its chunk, as Lua does, and do not keep it", function()
    local closed = false
    _G.repl_closer = function() return setmetatable({}, {__close = function() closed = true end}) end
    run{"local kept_close <close> = repl_closer()"}
    _G.repl_closer = nil
    assert.is_true(closed)
    assert.is_nil(run{"return kept_close"}[1][1])
  end)

  it("leave assignments to globals in _G, and a local named like a global shadows it at the prompt only", function()
    run{"repl_global = 7", "local print = 5"}
    assert.are.equal(7, rawget(_G, "repl_global"))
    _G.repl_global = nil
    assert.are.equal("function", type(_G.print))
    assert.are.equal(5, run{"return print"}[1][1])
    run{"local print = nil"}
  end)
end)

describe("help", function()
  it(":help TOPIC gives the summary and an example", function()
    assert.are.equal("perfsh.spawn: start a program traced, stopped before its first instruction\n"
      .. '  example: t = perfsh.spawn{"examples/sum", events = {"task-clock"}}', repl.command(":help spawn"))
    assert.are.equal("t:run: run to the end, or pause after hits (uprobe: exactly N; the next run takes the "
      .. "rest), seconds or a condition\n"
      .. "  example: t:run{hits = 100}", repl.command(":help t:run"))
    assert.are.equal("r:stats: count, sum, mean, stddev, min, p50, p90, p99, max per event\n"
      .. "  example: r:stats().time_ns.p50", repl.command(":help r.stats"))
    assert.are.equal("no help on 'nope'; help lists the topics", repl.command(":help nope"))
    assert.are.equal("unknown command ':nope'; :help lists the functions", repl.command(":nope"))
  end)

  it("has a topic for every function of perfsh and of tracee and region objects", function()
    local help = require "perfsh.help"
    local have = {}
    for _, t in ipairs(help.topics) do have[t[1]] = true end
    local internal = {core = true, version = true, Region = true}
    for k, v in pairs(perfsh) do
      if type(v) == "function" and not internal[k] then assert.truthy(have["perfsh." .. k], k) end
    end
    local t = perfsh.spawn{"examples/sum", events = {}, stdout = "/dev/null"}
    local r = t:region{func = "sum"}
    local mine = {region = true, sdt_region = true, run = true, status = true, info = true, hits = true,
      events = true, save = true, detach = true, close = true}
    for k in pairs(mine) do assert.truthy(have["t:" .. k], k) end
    for _, k in ipairs{"hits", "list", "series", "stats", "stats_by", "info", "on_slow"} do
      assert.are.equal("function", type(r[k]), k)
      assert.truthy(have["r:" .. k], k)
    end
    t:close()
  end)

  it("names the API's functions when the REPL prints them", function()
    assert.are.equal('function perfsh.spawn (help "perfsh.spawn")', repl.format(perfsh.spawn))
    assert.are.equal('function r:stats (help "r:stats")', repl.format(require("perfsh.region").stats))
    assert.truthy(repl.format(print):find("^function: "), repl.format(print))
  end)

  it("help, help \"topic\" and :help work in the shell", function()
    local out, err, rc = support.sh(("printf 'help\\n:help t:region\\nhelp \"perfsh.now\"\\n' | %s"):format(q(P)))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("^perfsh: help \"NAME\" or :help NAME"), out)
    assert.truthy(out:find("\nt:region: a region to measure", 1, true), out)
    assert.truthy(out:find("\nperfsh.now: a monotonic clock in ns\n  example: perfsh.now()\n", 1, true), out)
  end)
end)

describe("the REPL on a terminal", function()
  it("completes a name and an event name with Tab, and keeps the line in its history file", function()
    -- through a pseudo-terminal (script(1)); the driver types only once the prompt is shown
    -- and waits for the result, polling for up to 20 s.
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. q(dir)))
    local out, hist = dir .. "/out", dir .. "/history"
    local res, err, rc = support.sh(([=[
      waitfor() { i=0; while ! eval "$1"; do i=$((i+1)); [ $i -gt 200 ] && return 1; sleep 0.1; done; }
      export PERFSH_HISTORY=%s
      {
        waitfor 'grep -q "perfsh> " %s' || true
        printf 'print("R" .. type(perfsh.defau\t) .. perfsh.group{"task-cl\t"}:events()[1])\n'
        waitfor 'grep -q "^R[a-z]*task-clock\|^R[a-z]*nil\|rror" %s' || true
        # Ctrl-D until perfsh leaves: one typed before its line editor has the terminal is lost
        i=0; while [ $i -lt 100 ]; do printf '\004' || break; sleep 0.1; i=$((i+1)); done
      } | SHELL=/bin/sh script -qfec "exec "%s /dev/null > %s
      echo "script=$?"
    ]=]):format(q(hist), q(out), q(out), q(P), q(out)))
    local f = io.open(out)
    local got = f and f:read("a"):gsub("\r", "") or ""
    if f then f:close() end
    f = io.open(hist)
    local h = f and f:read("a") or ""
    if f then f:close() end
    os.execute("rm -rf " .. q(dir))
    assert.are.equal(0, rc, err)
    assert.truthy(res:find("script=0", 1, true), res .. got)
    assert.truthy(got:find("\nRfunctiontask%-clock\n"), got)
    assert.truthy(h:find("perfsh.default_events", 1, true), h)
  end)
end)

describe("a tmux-driven session", function()
  -- A perfsh REPL in a tmux pane: fn(keys, wait_for) types and reads its screen; the server
  -- is killed whatever happens.
  local function session(pending, fn)
    if not support.need_command(pending, "tmux") then return end
    local sock = "perfsh-test-" .. tostring(os.time()) .. "-" .. tostring(math.random(1e6))
    local tm = "tmux -L " .. q(sock) .. " -f /dev/null "
    local hist = os.tmpname()
    -- the screen so far; wait (polling, up to 20 s) until it shows @pattern
    local function screen() return (support.sh(tm .. "capture-pane -p -S -200")) end
    local function wait_for(pattern)
      local s
      for _ = 1, 200 do
        s = screen()
        if s:find(pattern) then return s end
        os.execute("sleep 0.1")
      end
      return s
    end
    local function keys(...)
      local args = {}
      for i, k in ipairs{...} do args[i] = (k == "Tab" or k == "Enter" or k == "C-u") and k or q(k) end
      support.sh(tm .. "send-keys " .. table.concat(args, " "))
    end
    local ok, err = pcall(function()
      local _, e, rc = support.sh(tm .. "new-session -d -x 160 -y 50 " ..
        q("env PERFSH_HISTORY=" .. hist .. " " .. P))
      assert.are.equal(0, rc, e)
      assert.truthy(wait_for("perfsh> "), "no prompt")
      fn(keys, wait_for)
    end)
    support.sh(tm .. "kill-server")
    os.remove(hist)
    assert(ok, err)
  end

  it("spawns sum, completes su<Tab> to sum, arms it, runs it and prints its stats", function()
    session(pending, function(keys, wait_for)
      keys('t = perfsh.spawn{"examples/sum", stdout = "/dev/null"}', "Enter")
      wait_for("perfsh> [^\n]*\nperfsh> ")
      keys('r = t:region{func = "su', "Tab")
      local s = wait_for('func = "sum')
      assert.truthy(s:find('r = t:region{func = "sum', 1, true), s)
      keys('"}', "Enter", "t:run()", "Enter")
      s = wait_for("code = 0,")
      assert.truthy(s:find("t:run()\n{\n  code = 0,\n  exited = true,", 1, true), s)
      keys("r:stats().time_ns", "Enter")
      s = wait_for("sum = [%d%.e+]+\n}\nperfsh> ")
      assert.truthy(s:find("r:stats().time_ns\n{\n  count = 1,", 1, true), s)
    end)
  end)

  it("takes step 9 of the README tutorial typed line by line: its locals live on to the next line", function()
    local f = assert(io.open("README.md"))
    local code = f:read("a"):match("## Tutorial.-```lua\n(.-)```")
    f:close()
    assert.truthy(code and code:find("local t = perfsh.spawn", 1, true), "no step 9 in README.md")
    session(pending, function(keys, wait_for)
      for line in code:gmatch("[^\n]+") do
        line = line:gsub("^%s+", ""):gsub("%s*%-%-.*$", "")
        if line:find("^print") then
          -- a kept local completes too: t's program is known (iteration)
          keys('t:region{func = "itera', "Tab")
          local s = wait_for('func = "iteration')
          assert.truthy(s:find('t:region{func = "iteration', 1, true), s)
          keys("C-u")
        end
        if line ~= "" then keys(line, "Enter") end
        if line:find("t:run()", 1, true) then wait_for("code = 0,") end
      end
      local s = wait_for("\n[%d.]+%s+[%d.]+\nperfsh>")
      local p50, p99 = s:match("\n([%d.]+)%s+([%d.]+)\nperfsh>")
      assert.truthy(p50, s)
      assert.is_true(tonumber(p50) > 0 and tonumber(p99) >= tonumber(p50), s)
      assert.is_nil(s:find("attempt to index a nil value", 1, true), s)
    end)
  end)
end)
