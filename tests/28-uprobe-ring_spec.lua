-- The uprobe catcher's rings under load: every record kept at the default ring, however the
-- threads end; and t:run{hits = N} switching the probes off at the Nth record. They need root or
-- CAP_PERFMON: elsewhere these tests are pending.
local support = dofile("tests/support.lua")
local P = support.perfsh

-- perfsh stat's header and hit count for @args (no lost records: lost is 0).
local function stat(args)
  local out, err, rc = support.sh(P .. " stat --backend uprobe -r work " .. args)
  assert.are.equal(0, rc, err)
  local header = out:match("perfsh stat: [^\n]*")
  return header, tonumber(out:match("region work %(func, (%d+) hits%)")),
    tonumber(header:match("(%d+) probe records lost") or 0)
end

describe("the uprobe catcher's rings", function()
  it("lose nothing while an ended thread's probes are closed (a close waits for the kernel)", function()
    if not support.need_uprobes(pending) then return end
    -- 64 pages hold some 1000 calls a thread; closing a thread's probes takes some 100 ms, in
    -- which the three others made more than that: their rings overflowed while perfsh waited
    local header, hits, lost = stat("--ring-pages 64 examples/threads 100000 100 4")
    assert.are.same({400000, 0}, {hits, lost}, header)
  end)

  it("lose nothing at the default size: 4 threads x 250,000 calls, all 1,000,000 hits recorded", function()
    if not support.need_uprobes(pending) then return end
    local header, hits, lost = stat("examples/threads 250000 100 4")
    assert.are.same({1000000, 0}, {hits, lost}, header)
  end)
end)
