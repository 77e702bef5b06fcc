-- tests/run.sh counts every pass it was to run: one it cannot run here counts skipped, with
-- the reason (the PERFSH_BACKEND=uprobe pass once printed a line and counted nothing).
local support = dofile("tests/support.lua")
local q = support.q

-- An executable shell script at @path.
local function script(path, body)
  local f = assert(io.open(path, "w"))
  f:write("#!/bin/sh\n", body, "\n")
  f:close()
  assert(os.execute("chmod +x " .. q(path)))
end

describe("tests/run.sh", function()
  it("counts the PERFSH_BACKEND=uprobe pass skipped, spec by spec, where the uprobe catcher cannot work", function()
    -- run.sh with runners that report nothing run: a C runner of no tests, a perfsh whose
    -- busted runs no tests and whose uprobe catcher cannot work, each fuzz replay passing
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute(("mkdir -p %s/b/tests/c %s/b/tests/fuzz"):format(q(dir), q(dir))))
    script(dir .. "/b/tests/c/run", 'echo "c: 0 passed, 0 failed, 0 skipped"')
    script(dir .. "/perfsh", 'if [ "$1" = -e ]; then printf "no uprobe PMU (a stand-in perfsh)"; else echo "1..0"; fi')
    local targets = 0
    for src in support.sh("ls tests/fuzz/"):gmatch("fuzz_([%w_]+)%.c") do
      script(("%s/b/tests/fuzz/replay_%s"):format(dir, src), "echo replayed")
      targets = targets + 1
    end
    local out, err, rc = support.sh(("PERFSH=%s/perfsh B=%s/b sh tests/run.sh"):format(q(dir), q(dir)))
    support.sh("rm -rf " .. q(dir))
    assert.are.equal(0, rc, out .. err)
    local specs = {"07-stat", "08-sampling", "10-analysis", "12-exceptions", "13-signals", "16-loops", "17-sdt",
      "18-backend"}
    for _, spec in ipairs(specs) do
      assert.truthy(out:find(("skip tests/%s_spec.lua with PERFSH_BACKEND=uprobe: the uprobe catcher cannot "
        .. "work here: no uprobe PMU (a stand-in perfsh)"):format(spec), 1, true), out)
    end
    assert.are.equal(("%d passed, 0 failed, %d skipped"):format(targets, #specs), out:match("([^\n]*)\n$"))
  end)
end)
