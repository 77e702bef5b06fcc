--- perfsh.help: one line and an example for each function of the API, for help and :help.
--   help            the topics;  help "spawn", help "t:run", :help r:stats   one topic
local help = {}

-- {topic, summary, example}; "perfsh.x" for the module, "t:x" a tracee, "r:x" a region,
-- "g:x" a group.
help.topics = {
  {"perfsh.group", "open a group of counters on a thread, read together",
    'g = perfsh.group{"task-clock", "page-faults"}; g:enable(); g:read()'},
  {"perfsh.events", "the events known here, as {name, desc, kind, usable}", 'perfsh.events("sw")'},
  {"perfsh.print_events", "print the events by kind, as perfsh list does", 'perfsh.print_events("sw")'},
  {"perfsh.event_notes", "what the kernel changes when these events open", 'perfsh.event_notes{"msr/tsc/"}'},
  {"perfsh.default_events", "the events counted when none are given", 'perfsh.default_events("command")'},
  {"perfsh.run", "count a whole command, from exec to exit", 'perfsh.run{"ls", events = {"task-clock"}}'},
  {"perfsh.spawn", "start a program traced, stopped before its first instruction",
    't = perfsh.spawn{"examples/sum", events = {"task-clock"}}'},
  {"perfsh.check", "the regression gate of perfsh check: a results table, pass or fail",
    'r = perfsh.check{"examples/sum", regions = {"sum"}, engine = "callgrind", baseline = "sum.json"}'},
  {"perfsh.attach", "trace a running process (every thread); backend auto takes uprobe, else ptrace; backend = "
    .. "\"inproc\" loads the in-process agent into it", 't = perfsh.attach(1234, {backend = "inproc"})'},
  {"perfsh.load", "read a .psnap file back: f.regions, r:hits(), r:stats(), f:hits() (streamed), f.info",
    'f = perfsh.load("run.psnap")'},
  {"perfsh.sdt", "the SDT probes of a file", 'perfsh.sdt("/usr/bin/python3")'},
  {"perfsh.print_sdt", "print the SDT probes of a file", 'perfsh.print_sdt("/usr/bin/python3")'},
  {"perfsh.print_recipes", "print the recipes of perfsh stat", "perfsh.print_recipes()"},
  {"perfsh.stats", "exact statistics of an array of numbers", "perfsh.stats{3, 1, 2}"},
  {"perfsh.hist", "a streaming log-bucket histogram", "h = perfsh.hist(); h:add(5); h:quantile(0.5)"},
  {"perfsh.derive", "a formula of perfsh.metrics over a hit", 'perfsh.derive(hit, "ipc")'},
  {"perfsh.metrics", "the formulas perfsh.derive knows", "perfsh.metrics"},
  {"perfsh.interval", "the time between two fields of successive hits",
    'perfsh.interval(hits, "t_end", "next.t_start")'},
  {"perfsh.attribute", "per-unit costs by least squares", 'perfsh.attribute(hits, {"A", "B"}, "instructions")'},
  {"perfsh.scale", "a value scaled for multiplexing, and the ratio", "perfsh.scale(100, 10, 5)"},
  {"perfsh.now", "a monotonic clock in ns", "perfsh.now()"},
  {"t:region", "a region to measure: a function, lines or addresses",
    't:region{func = "sum"}; t:region{range = "sum.c:19-24"}'},
  {"t:try_region", "t:region, or nil, why, code where it cannot be armed (code: core.errors.needs_ptrace, "
    .. "needs_uprobe, ...; under auto, a region inproc refuses before the first run moves the program to uprobe)",
    'local r, why, code = t:try_region{func = "sum"}'},
  {"t:sdt_region", "a region between SDT probes", 't:sdt_region("provider:start,provider:end")'},
  {"t:marker", "a marker of perfsh/marker.h: measured by the program (backend marker) or from outside (uprobe)",
    't:marker("iter", {fields = {"nfds", "listen"}}):stats().hits'},
  {"t:markers", "the program's marker library, and its policy changed live (backend marker or inproc)",
    "t:markers{sample = 0.1, slow_us = 200}; t:markers().lost"},
  {"t:run", "run to the end, or pause after hits (uprobe: exactly N; the next run takes the rest), seconds "
    .. "or a condition", "t:run{hits = 100}"},
  {"t:status", "the program's end {exited, code, signo, signal}, or nil", "t:status()"},
  {"t:info", "pid, stops, records, dropped, lost, events", "t:info()"},
  {"t:losses", "the records the run lost: catcher, lost, dropped, total (r:stats().lost is total)",
    "t:losses().total"},
  {"t:hits", "iterate over every record of every region", "for h in t:hits() do print(h.hit) end"},
  {"t:events", "the event names, in record order", "t:events()"},
  {"t:save", "write the records to a .psnap file", 't:save("run.psnap")'},
  {"t:detach", "let the program go on untraced, code and memory map restored", "t:detach()"},
  {"t:close", "end the session (a spawned program still running is killed)", "t:close()"},
  {"r:hits", "iterate over the region's records", "for h in r:hits() do print(h.time_ns) end"},
  {"r:list", "the region's records as an array", "r:list()[1]"},
  {"r:series", "one number per hit", 'r:series("time_ns")'},
  {"r:stats", "count, sum, mean, stddev, min, p50, p90, p99, max per event", "r:stats().time_ns.p50"},
  {"r:stats_by", "the same per thread or per CPU", 'r:stats_by("thread")'},
  {"r:info", "what the region is: name, kind, entries, ..., pending (its library is not mapped yet), and how a "
    .. "line range was read (reading)", "r:info()"},
  {"r:on_slow", "log slow hits while the program runs", "r:on_slow{threshold_us = 500}"},
  {"g:enable", "start counting", "g:enable()"},
  {"g:disable", "stop counting", "g:disable()"},
  {"g:reset", "set the counts to zero", "g:reset()"},
  {"g:read", "the counts: r[name], raw, scaled, ratio", "g:read()"},
  {"g:close", "close the group", "g:close()"},
}

local by_name = {}
for _, t in ipairs(help.topics) do
  by_name[t[1]] = t
  by_name[t[1]:gsub("^perfsh%.", "")] = by_name[t[1]:gsub("^perfsh%.", "")] or t
end

--- The text of a topic ("spawn", "perfsh.spawn", "t:run", "run", "r.stats"), or of the list.
function help.text(topic)
  if topic == nil or topic == "" then
    local lines = {"perfsh: help \"NAME\" or :help NAME for one function; t is a tracee, r a region, g a group"}
    for _, t in ipairs(help.topics) do lines[#lines + 1] = ("  %-22s %s"):format(t[1], t[2]) end
    return table.concat(lines, "\n")
  end
  local key = tostring(topic):gsub("^%s+", ""):gsub("%s+$", ""):gsub("%(%)$", "")
  local t = by_name[key] or by_name[key:gsub("^(%a)%.", "%1:")]
  if not t then
    local found = {}
    for _, x in ipairs(help.topics) do
      if x[1]:match("[%.:]" .. key:gsub("%p", "%%%0") .. "$") then found[#found + 1] = x end
    end
    if #found == 0 then
      return ("no help on '%s'; help lists the topics"):format(key)
    end
    local out = {}
    for _, x in ipairs(found) do out[#out + 1] = help.text(x[1]) end
    return table.concat(out, "\n")
  end
  return ("%s: %s\n  example: %s"):format(t[1], t[2], t[3])
end

--- The topic of a function of the API (perfsh.spawn -> "perfsh.spawn"), or nil.
function help.name_of(f)
  local perfsh = package.loaded.perfsh
  for k, v in pairs(type(perfsh) == "table" and perfsh or {}) do
    if v == f and by_name["perfsh." .. k] then return "perfsh." .. k end
  end
  for k, v in pairs(package.loaded["perfsh.region"] or {}) do
    if v == f and by_name["r:" .. k] then return "r:" .. k end
  end
end

-- help prints the list; help "topic" one topic.
return setmetatable(help, {
  __tostring = function() return help.text() end,
  __call = function(_, topic) print(help.text(topic)) end,
})
