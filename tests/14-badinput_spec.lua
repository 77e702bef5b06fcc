-- The bad-input matrix: each row a command, its exit code, and the single stderr line
-- (which says what to do); then what was kept, and that no process was left behind.
local support = dofile("tests/support.lua")
local P = support.perfsh
local q = support.q

local dir = os.tmpname()
os.remove(dir)
local T = dir .. "/badinput" -- the fixture (tests/fixtures/badinput.c)
local NOBODY = "setpriv --reuid=nobody --regid=nogroup --clear-groups "

local function write(path, text, mode)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  if mode then assert(os.execute(("chmod %s %s"):format(mode, q(path)))) end
end

-- processes whose command line starts with @path (not the shell that runs pgrep)
local function pids_of(path)
  local p = io.popen("pgrep -f " .. q("^" .. path))
  local out = p:read("a")
  p:close()
  return out
end

-- poll (20 s) until no process runs the fixture
local function none_left()
  for _ = 1, 2000 do
    if pids_of(T) == "" then return true end
    os.execute("sleep 0.01")
  end
  return false, pids_of(T)
end

local function alive(pid)
  local f = io.open("/proc/" .. pid .. "/status")
  if not f then return false end
  local s = f:read("a")
  f:close()
  return not s:match("State:%s+Z"), tonumber(s:match("TracerPid:%s+(%d+)"))
end

-- rows: name, cmd (%T the fixture, %D its directory, %P the pid of a fixture started with
-- `attach`), rc, err (a pattern the one stderr line matches; nil: stderr is empty), out (a
-- pattern in stdout: what was kept; nil: stdout is empty, nothing ran).
local rows = {
  -- issue 8 item 7
  {"a stripped binary", "stat -r region %D/stripped", 2,
    "^perfsh stat: region 'region': .*stripped .*rebuild it without %-s.*%-r 0xADDR"},
  {"a shell script", "stat -r main %D/script.sh", 2,
    "^perfsh stat: '.*script%.sh' is a script %(#!/bin/sh%); perfsh traces the ELF program itself: give that program"},
  {"another user's process", "stat -r main -p 1", 2,
    "^perfsh stat: attach 1: the process belongs to another user %(uid 0%); run perfsh as that user", nobody = true},
  {"a function of libc", "stat -r srand %T", 2,
    "^perfsh stat: region 'srand': 'srand' is not in .* but in a library it loads: name it libc%.so%.6:srand$"},
  {"a function of libc, named LIB:NAME", "stat -r libc.so.6:srand -e task-clock %T", 0, nil,
    "region libc%.so%.6:srand %(func, 1 hit%)"},
  {"--seconds abc", "stat -r region --seconds abc %T", 2,
    "^perfsh stat: %-%-seconds needs a time in seconds above 0 %(e%.g%. %-%-seconds 2%.5%), not 'abc'$"},
  {"--seconds 0", "stat -r region --seconds 0 %T", 2, "^perfsh stat: %-%-seconds needs a time in seconds above 0"},
  {"--save in a missing directory", "stat -r region --save /nonexistent/x.psnap %T", 2,
    "^perfsh stat: %-%-save: cannot write /nonexistent/x%.psnap: No such file or directory; give a file in a "
      .. "directory you can write$"},
  {"--trace in a missing directory", "stat -r region --trace /nonexistent/x.json %T", 2,
    "^perfsh stat: %-%-trace: cannot write /nonexistent/x%.json: .*; give a file in a directory you can write$"},
  {"-o in a missing directory", "stat -r region -o /nonexistent/x.txt %T", 2,
    "^perfsh stat: %-o: cannot write /nonexistent/x%.txt: .*; give a file in a directory you can write$"},
  {"--sample 2", "stat -r region --sample 2 %T", 2,
    "^perfsh stat: %-%-sample needs a probability above 0 and at most 1 %(e%.g%. %-%-sample 0%.01%), not '2'$"},
  {"--sample abc", "stat -r region --sample abc %T", 2, "^perfsh stat: %-%-sample needs a probability"},
  {"--every 0", "stat -r region --every 0 %T", 2, "^perfsh stat: %-%-every needs a positive count, not '0'$"},
  {"an event given twice", "stat -r region -e task-clock,task-clock %T", 2,
    "^perfsh stat: event 'task%-clock' is given twice; name each event once$"},
  {"an event given twice, in two groups", "stat -r region -e task-clock -g page-faults,task-clock %T", 2,
    "^perfsh stat: event 'task%-clock' is given twice; name each event once$"},
  {"calls still running at detach", "stat -r outer -r region -e task-clock --seconds 1 -p %P", 0, nil,
    "region outer %(func, %d+ hits?, 1 call still running at detach%)", attach = "nap"},
  {"calls still running at the end", "stat -r outer -r region -e task-clock --seconds 1 %T nap", 0, nil,
    "region outer %(func, %d+ hits?, 1 call still running at the end%)"},
  -- issue 8 item 8: events
  {"an unknown event", "stat -r region -e bogus_event %T", 2, "^perfsh stat: unknown event 'bogus_event'"},
  {"a misspelled event", "stat -r region -e task-clok %T", 2,
    "^perfsh stat: unknown event 'task%-clok'; did you mean 'task%-clock'"},
  {"too many events for a group", "stat -r region -e task-clock,cpu-clock,page-faults,minor-faults,major-faults,"
      .. "context-switches,cpu-migrations,task-clock:u,cpu-clock:u,page-faults:u,minor-faults:u,major-faults:u,"
      .. "context-switches:u,cpu-migrations:u,task-clock:k,cpu-clock:k,page-faults:k %T", 2,
    "^perfsh stat: a group holds at most 16 events %(got 17%); split them"},
  {"too many groups", "stat -r region -g task-clock -g cpu-clock -g page-faults -g minor-faults -g major-faults %T",
    2, "^perfsh stat: at most 4 counter groups %(got 5%); merge some %-g lists"},
  -- regions
  {"an unknown function", "stat -r regoin %T", 2,
    "^perfsh stat: region 'regoin': no function 'regoin' in .*; did you mean 'region'"},
  {"an unknown source file", "stat -r nosuch.c:1-3 %T", 2,
    "^perfsh stat: region 'nosuch%.c:1%-3': no source file 'nosuch%.c' .*; did you mean 'badinput%.c'%?$"},
  {"a line past the end", "stat -r badinput.c:1000-1003 %T", 2,
    "^perfsh stat: region 'badinput%.c:1000%-1003': line 1000 of badinput%.c is past its last line with code"},
  {"one line for a range", "stat -r badinput.c:20 %T", 2,
    "^perfsh stat: region 'badinput%.c:20' is one line; a line region is a range .* e%.g%. badinput%.c:20%-21$"},
  {"no region", "stat %T", 2, "^perfsh stat: no region given; name one with %-r"},
  -- 80 arguments: more than the Lua stack's 20 free slots the script gets them on
  {"forty regions, all unknown", "stat " .. ("-r nosuch "):rep(40) .. "%T", 2,
    "^perfsh stat: region 'nosuch': no function 'nosuch' in "},
  {"an unknown option", "stat -r region --bogus %T", 2,
    "^perfsh stat: unknown option '%-%-bogus' %(perfsh stat %-%-help"},
  -- the program
  {"a missing program", "stat -r region %D/missing", 2,
    "^perfsh stat: cannot run '.*missing': no such program; give the path of a program$"},
  {"a program not in PATH", "stat -r region badinput-not-in-path", 2,
    "^perfsh stat: cannot run 'badinput%-not%-in%-path': no such program"},
  {"a directory", "stat -r region %D", 2, "^perfsh stat: cannot run '.*': it is a directory; give the program to run$"},
  {"a file that is not executable", "stat -r region %D/noexec", 2,
    "^perfsh stat: cannot run '.*noexec': it is not executable %(chmod %+x it%)$"},
  {"an executable that is not ELF", "stat -r region %D/text", 2,
    "^perfsh stat: cannot run '.*text': it is not an ELF program; give a compiled program$"},
  {"-p with no number", "stat -r region -p abc", 2, "^perfsh stat: %-p needs a process id, not 'abc'$"},
  {"-p of no process", "stat -r region -p 999999999", 2, "^perfsh stat: attach 999999999: no such process"},
  -- an unprivileged user (perf_event_paranoid 2): its own program is measured by the default
  -- catcher (auto) in-process, or, with no agent to preload, by ptrace with one line saying why
  {"an unprivileged user", "stat --backend auto -r region -e task-clock %T", 0, nil,
    "caught by inproc.*\nregion region %(func, 1 hit%)", nobody = true},
  {"an unprivileged user, no agent built", "stat --backend auto -r region -e task-clock %T", 0,
    "^perfsh stat: note: backend auto: ptrace, as the uprobe catcher cannot work here %(.+%)$",
    "caught by ptrace.*\nregion region %(func, 1 hit%)", nobody = true, env = "PERFSH_AGENT=/nonexistent"},
  -- crashes, kills and execs inside a region: the report is kept, the status passed on
  {"a crash inside a region", "stat -r region -e task-clock %T crash", 139,
    "^perfsh stat: .*badinput crash killed by SIGSEGV in region region$",
    "killed by SIGSEGV.*\nregion region %(func, 0 hits, 1 incomplete"},
  {"a kill inside a region", "stat -r region -e task-clock %T kill", 137,
    "^perfsh stat: .*badinput kill killed by SIGKILL in region region$",
    "killed by SIGKILL.*\nregion region %(func, 0 hits, 1 incomplete"},
  {"an exec inside a region", "stat -r region -e task-clock %T exec", 0,
    "^perfsh: region 'region' dropped after exec of /usr/bin/true", "exit 0.*\nregion region %(func, 0 hits, dropped"},
  -- a Lua error mid-run: the message first, the target killed
  {"a Lua error mid-run", "-e " .. q("local t = perfsh.spawn{'%T', 'nap', events = {'task-clock'}} "
      .. "t:region{func = 'region'} t:run{hits = 3} error('boom after 3 hits')"), 1,
    "^perfsh: %(command line%):1: boom after 3 hits$", nil, traceback = true},
  {"a Lua error in an until function", "-e " .. q("local t = perfsh.spawn{'%T', 'nap', events = {'task-clock'}} "
      .. "t:region{func = 'region'} t:run{['until'] = function() error('boom in until') end}"), 1,
    "^perfsh: %(command line%):1: boom in until$", nil, traceback = true},
}

describe("bad input", function()
  lazy_setup(function()
    assert(os.execute("mkdir -p " .. q(dir) .. " && chmod 755 " .. q(dir)))
    assert(os.execute(("cc -O2 -g -o %s tests/fixtures/badinput.c"):format(q(T))))
    assert(os.execute(("cc -O2 -s -o %s tests/fixtures/badinput.c"):format(q(dir .. "/stripped"))))
    write(dir .. "/script.sh", "#!/bin/sh\nexec " .. T .. " \"$@\"\n", "755")
    write(dir .. "/noexec", "", "644")
    write(dir .. "/text", "echo this is not a program\n", "755")
  end)
  lazy_teardown(function()
    os.execute("rm -rf " .. q(dir))
  end)

  for _, row in ipairs(rows) do
    local name, cmd, want_rc, want_err, want_out = row[1], row[2], row[3], row[4], row[5]
    it(name, function()
      local p, pid
      if row.attach then p, pid = support.background(T, row.attach) end
      local full = cmd:gsub("%%T", T):gsub("%%D", dir):gsub("%%P", tostring(pid))
      local env = row.env and "env " .. row.env .. " " or ""
      local out, err, rc = support.sh((row.nobody and NOBODY or "") .. env .. P .. " " .. full .. " </dev/null")
      local msg = ("perfsh %s\nexit %s\nstderr: %s\nstdout: %s"):format(full, rc, err, out)
      assert.are.equal(want_rc, rc, msg)
      if want_err then
        local first, rest = err:match("^([^\n]*)\n(.*)$")
        assert.truthy(first and first:match(want_err), msg)
        if not row.traceback then assert.are.equal("", rest, "more than one line on stderr\n" .. msg) end
      else
        assert.are.equal("", err, msg)
      end
      if want_out then
        assert.truthy(out:match(want_out), msg)
      elseif not row.traceback then
        assert.are.equal("", out, "something ran\n" .. msg)
      end
      if row.attach then
        -- detached, not harmed: still running, traced by no one; then ended here
        local running, tracer = alive(pid)
        assert.is_true(running, msg)
        assert.are.equal(0, tracer, msg)
        os.execute("kill " .. pid)
        p:close()
      end
      assert.is_true(none_left())
    end)
  end
end)
