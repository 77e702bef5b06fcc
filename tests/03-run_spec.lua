-- perfsh.run: count a whole command like perf stat.
local perfsh = require "perfsh"
local core = require "perfsh.core"

describe("perfsh.run{}", function()
  it("counts more task-clock for a busy loop than for true", function()
    local quick = perfsh.run{"true", events = {"task-clock", "page-faults"}}
    local busy = perfsh.run{"sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
      events = {"task-clock", "page-faults"}}
    assert.is_true(quick.exited)
    assert.are.equal(0, quick.code)
    assert.is_true(busy["task-clock"] > 5 * quick["task-clock"])
    assert.is_true(quick["page-faults"] > 0)
    assert.is_true(busy.wall_ns > 0)
  end)

  it("counts more instructions for a busy loop than for true", function()
    if not core.pmu_present() then
      pending("no hardware PMU on this machine")
      return
    end
    local quick = perfsh.run{"true", events = {"instructions"}}
    local busy = perfsh.run{"sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done", events = {"instructions"}}
    assert.is_true(busy.instructions > 10 * quick.instructions)
  end)

  it("reports the exit code", function()
    local r = perfsh.run{"sh", "-c", "exit 7", events = {"task-clock"}}
    assert.is_true(r.exited)
    assert.are.equal(7, r.code)
  end)

  it("reports the signal that killed the command", function()
    local r = perfsh.run{"sh", "-c", "kill -SEGV $$", events = {"task-clock"}}
    assert.is_false(r.exited)
    assert.are.equal(11, r.signo)
    assert.are.equal("SIGSEGV", r.signal)
  end)

  it("raises when the command cannot be run", function()
    assert.has.error(function() perfsh.run{"/nonexistent/prog", events = {"task-clock"}} end,
      "cannot run '/nonexistent/prog': No such file or directory")
  end)

  it("uses default events that work on this machine", function()
    local r = perfsh.run{"true"}
    for _, name in ipairs(perfsh.default_events()) do assert.is_number(r[name]) end
  end)
end)
