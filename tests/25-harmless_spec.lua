-- Nothing typed on perfsh's command line harms the program: a function's entry and a range
-- starting there share one breakpoint.
local perfsh = require "perfsh"

describe("one breakpoint", function()
  it("serves a function's entry and a line range starting there, each region getting its hit", function()
    for _, order in ipairs{{"func", "range"}, {"range", "func"}} do
      local t <close> = perfsh.spawn{"examples/sum", events = {"task-clock"}, stdout = "/dev/null",
        backend = "ptrace"}
      local regs = {}
      for _, kind in ipairs(order) do
        regs[kind] = t:region(kind == "func" and {func = "sum"} or {range = "sum.c:20-sum.c:25"})
      end
      assert.are.equal(0, t:run().code)
      local hf, hr = {}, {}
      for h in regs.func:hits() do hf[#hf + 1] = h end
      for h in regs.range:hits() do hr[#hr + 1] = h end
      assert.are.equal(1, #hf) -- main calls sum once
      assert.are.equal(1, #hr)
      -- one stop started both: the same reading; the range ends at line 25, before sum returns
      assert.are.equal(hf[1].t_start, hr[1].t_start)
      assert.are.equal(hf[1].enabled_start, hr[1].enabled_start)
      assert.is_true(hr[1].t_end < hf[1].t_end)
      assert.is_true(hr[1]["task-clock"] > 0 and hr[1]["task-clock"] <= hf[1]["task-clock"])
    end
  end)
end)
