-- The in-process catcher and coroutines: a program that switches stacks (swapcontext) inside
-- measured calls, each stack with a call suspended while the other runs, must run exactly as
-- untraced: the agent's exit finds each call's real return address by the slot it returned
-- from (tests/fixtures/coswitch.c). The records are sane: complete or flagged unwound, no
-- negative or absurd value.
local perfsh = require "perfsh"
local core = require "perfsh.core"
local support = dofile("tests/support.lua")

local ROUNDS = 50

describe("the in-process catcher with a coroutine switching stacks inside measured calls", function()
  local exe = os.tmpname()

  setup(function()
    local _, err, rc = support.sh(("cc -O2 -g -o %s tests/fixtures/coswitch.c"):format(support.q(exe)))
    assert.are.equal(0, rc, err)
  end)
  teardown(function() os.remove(exe) end)

  for _, where in ipairs{"heap", "local", "mmap"} do
    for _, every in ipairs{false, true} do
      it(("runs as untraced, its stack %s%s"):format(where, every and ", every level counted" or ""), function()
        local ok, why = core.inproc_available()
        if not ok then
          pending("the in-process agent is not built: " .. why)
          return
        end
        local want, err, rc = support.sh(("%s %s %d"):format(support.q(exe), where, ROUNDS))
        assert.are.equal(0, rc, err)
        local out = os.tmpname()
        local t <close> = perfsh.spawn{exe, where, tostring(ROUNDS), events = {"task-clock"}, backend = "inproc",
          stdout = out}
        local step = t:region{func = "step", every_level = every}
        local leaf = t:region{func = "leaf", every_level = every}
        local st = t:run{seconds = 60} -- a program the agent sent astray would loop or crash
        assert.are.same({exited = true, code = 0}, {exited = st and st.exited, code = st and st.code})
        assert.are.equal(want, support.take(out))
        local calls = ROUNDS * 2 + (where == "mmap" and 3 or 0)
        -- leaf() never switches: every call a complete hit
        local ls = leaf:stats()
        assert.are.same({calls, 0}, {ls.hits, ls.incomplete})
        -- step(): each call a hit, complete or unwound, or (every level off) a nested entry
        local ss = step:stats()
        assert.is_true(ss.hits >= 1, tostring(ss.hits))
        assert.is_true(ss.hits + ss.incomplete <= calls, ("%d + %d"):format(ss.hits, ss.incomplete))
        for _, r in ipairs{step, leaf} do
          for h in r:hits() do
            assert.is_true(h["task-clock"] >= 0 and h["task-clock"] < 10e9, tostring(h["task-clock"]))
            assert.is_true(h.time_ns >= 0 and h.time_ns < 10e9, tostring(h.time_ns))
          end
        end
      end)
    end
  end
end)
