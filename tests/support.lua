--- tests/support.lua - shared helpers of the busted specs (loaded with dofile).
local core = require "perfsh.core"

local support = {}

support.perfsh = os.getenv("PERFSH") or "./perfsh"
support.build = os.getenv("B") or "build"

--- true when the hardware PMU works; otherwise marks the test pending with the reason.
function support.need_pmu(pending)
  if core.pmu_present() then return true end
  pending("no hardware PMU on this machine (the kernel counts software events only)")
  return false
end

--- true when the uprobe catcher works here (root or CAP_PERFMON, the uprobe PMU); otherwise
-- marks the test pending with the reason.
function support.need_uprobes(pending)
  local ok, why = core.uprobe_available()
  if not ok then pending("the uprobe catcher cannot work here: " .. why) end
  return ok
end

--- The catcher perfsh's default (auto) takes for function regions of a program it starts, with
-- events read user-only in one group: inproc where the agent is built, else uprobe where it
-- works, else ptrace.
function support.auto_catcher()
  if core.inproc_available() then return "inproc" end
  return core.uprobe_available() and "uprobe" or "ptrace"
end

--- Asserts that hit @h of examples/attribute's touch_pages(a, b, c) (a region armed with
-- args = {"a", "b", "c"}) took its a + 3b + 7c page faults; the first call (h.hit 0) up to 4
-- more, as it also faults in the code and data it runs for the first time.
function support.assert_touch_pages(h)
  local want = h.a + 3 * h.b + 7 * h.c
  if h.hit == 0 then
    assert(h["page-faults"] >= want and h["page-faults"] <= want + 4, ("first hit: %d page faults, want %d")
      :format(h["page-faults"], want))
  else
    assert(h["page-faults"] == want, ("hit %d: %d page faults, want %d"):format(h.hit, h["page-faults"], want))
  end
end

--- true when the in-process agent (libperfsh-agent.so) is built beside perfsh; otherwise marks
-- the test pending, saying so.
function support.need_agent(pending)
  local f = io.open(support.build .. "/lib/libperfsh-agent.so")
  if not f then
    pending("no " .. support.build .. "/lib/libperfsh-agent.so (make builds it)")
    return false
  end
  f:close()
  return true
end

--- true when command @name is installed; otherwise marks the test pending, saying so.
function support.need_command(pending, name)
  local _, _, rc = support.sh("command -v " .. name)
  if rc ~= 0 then pending(name .. " is not installed (make deps installs it)") end
  return rc == 0
end

--- rustc from PATH, $RUSTC or ~/.cargo/bin; nil, the test marked pending and the reason printed, when
-- there is none.
function support.find_rustc(pending)
  for _, c in ipairs{os.getenv("RUSTC") or "rustc", (os.getenv("HOME") or "/root") .. "/.cargo/bin/rustc"} do
    if select(3, support.sh("command -v " .. support.q(c))) == 0 then return c end
  end
  print("# skipped: rustc is not installed (no rustc in PATH, $RUSTC or ~/.cargo/bin)")
  pending("rustc is not installed")
end

-- Whether @path links AddressSanitizer (make SAN=1 builds the marker examples so).
local asan = {}
local function with_asan(path)
  if asan[path] == nil then
    local out = support.sh("LC_ALL=C readelf -d " .. support.q(path))
    asan[path] = out:find("libasan", 1, true) ~= nil
  end
  return asan[path]
end

--- true when perfsh can trace each program of @paths; otherwise marks the test pending: one
-- built with AddressSanitizer (make SAN=1) fails its leak check at exit under ptrace.
function support.need_traceable(pending, paths)
  for _, p in ipairs(paths) do
    if with_asan(p) then
      pending(p .. " is built with AddressSanitizer (make SAN=1), whose leak check fails under ptrace")
      return false
    end
  end
  return true
end

--- The records of @src (anything with :hits(): a region, a loaded file) per thread:
-- {tid = {rec, ...}}, each thread's in the order they come.
function support.by_thread(src)
  local per = {}
  for h in src:hits() do
    per[h.tid] = per[h.tid] or {}
    table.insert(per[h.tid], h)
  end
  return per
end

--- The non-empty lines of @s, as an array.
function support.lines(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

--- The contents of file @path.
function support.read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

--- The text of file @path, or nil where it cannot be opened (not there yet, or gone).
function support.read_if(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

--- Write @text to file @path (replacing it).
function support.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

--- The text of file @path, which is removed.
function support.take(path)
  local f = assert(io.open(path))
  local text = f:read("a")
  f:close()
  os.remove(path)
  return text
end

--- Events that work everywhere, plus instructions where the PMU is.
function support.events()
  if core.pmu_present() then return {"instructions", "task-clock"} end
  return {"task-clock"}
end

--- The number of the first line of @file that holds @marker.
function support.line_of(file, marker)
  local n = 0
  for l in io.lines(file) do
    n = n + 1
    if l:find(marker, 1, true) then return n end
  end
  error("no " .. marker .. " in " .. file)
end

--- Run a shell command; returns its stdout, stderr and exit code.
--- The lowest address readelf shows a row of FILE:LINE at in EXE, other than @other: the line
-- table's own account, read apart from libdw.
function support.first_addr(exe, file, line, other)
  local out = support.sh("readelf -W --debug-dump=decodedline " .. exe)
  local best
  for name, ln, a in out:gmatch("\n(%S+)%s+(%d+)%s+0x(%x+)") do
    a = tonumber(a, 16)
    if name == file and tonumber(ln) == line and a ~= other and (not best or a < best) then best = a end
  end
  return best
end

function support.sh(cmd, input)
  local out, err = os.tmpname(), os.tmpname()
  local full = ("(%s) >%s 2>%s"):format(cmd, out, err)
  if input then
    local inp = os.tmpname()
    local f = assert(io.open(inp, "w"))
    f:write(input)
    f:close()
    full = full .. " <" .. inp
    support._cleanup = inp
  end
  local ok, how, code = os.execute(full)
  local function slurp(p)
    local f = io.open(p)
    local s = f and f:read("a") or ""
    if f then f:close() end
    os.remove(p)
    return s
  end
  if support._cleanup then os.remove(support._cleanup) support._cleanup = nil end
  if how == "signal" then code = 128 + code end
  return slurp(out), slurp(err), ok and 0 or code
end

--- Absolute path of a file under the source tree.
function support.abspath(rel)
  local p = io.popen("pwd")
  local cwd = p:read("l")
  p:close()
  return cwd .. "/" .. rel
end

--- Start a program in the background, its stdout readable from the returned pipe; wait until
-- it has exec'd (else an attach would catch the shell). Returns the pipe and the pid.
function support.background(prog, args)
  local p = io.popen(("sh -c 'echo $$; exec %s %s'"):format(prog, args or ""))
  local pid = math.tointeger(tonumber(p:read("l")))
  local base = prog:match("[^/]+$")
  for _ = 1, 500 do
    local f = io.popen("readlink /proc/" .. pid .. "/exe")
    local exe = f:read("l") or ""
    f:close()
    if exe:match("/" .. base:gsub("%p", "%%%0") .. "$") then break end
    os.execute("sleep 0.01")
  end
  return p, pid
end

--- Start @cmd (a shell command line running perfsh, its output redirected) in the background;
-- perfsh's pid and, once it has started it, its child's (nil if it never did).
function support.perfsh_background(cmd)
  local p = io.popen(cmd .. " & echo $!")
  local perfsh_pid = p:read("l")
  p:close()
  return perfsh_pid, support.child_of(perfsh_pid)
end

--- The pid (a string) of a child of process @pid, waiting up to @tries x 50 ms for one; nil if none came.
function support.child_of(pid, tries)
  for _ = 1, tries or 100 do
    local f = io.popen("pgrep -P " .. pid)
    local child = f:read("l")
    f:close()
    if child then return child end
    os.execute("sleep 0.05")
  end
end

--- Whether process @pid is gone (or a zombie) within @tries x 50 ms.
function support.gone(pid, tries)
  for _ = 1, tries or 100 do
    local f = io.open("/proc/" .. pid .. "/stat")
    if not f then return true end
    local state = f:read("a"):match("^%d+ %b() (%a)")
    f:close()
    if state == "Z" then return true end
    os.execute("sleep 0.05")
  end
  return false
end

--- Quote a string for sh.
function support.q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

return support
