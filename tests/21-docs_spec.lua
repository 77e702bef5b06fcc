-- tests/21-docs_spec.lua - the man page and the Lua API reference stay in step with the code.
local support = dofile("tests/support.lua")
local P = support.perfsh

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

describe("the docs", function()
  it("doc/lua-api.md is what make docs generates from the help topics", function()
    local out, err, rc = support.sh(P .. " doc/gen-api.lua")
    assert.are.equal(0, rc, err)
    assert.are.equal(out, read("doc/lua-api.md"), "doc/lua-api.md is stale: run make docs")
    for _, t in ipairs(require("perfsh.help").topics) do
      assert.truthy(out:find("| `" .. t[1] .. "` |", 1, true), t[1])
    end
  end)

  it("the man page renders without warnings", function()
    if not support.need_command(pending, "groff") then return end
    local out, err, rc = support.sh("groff -man -Tutf8 -ww -z doc/perfsh.1")
    assert.are.equal(0, rc, err)
    assert.are.equal("", out .. err)
  end)

  it("the man page names every recipe and every environment variable of perfsh --help", function()
    local man = read("doc/perfsh.1")
    local recipes, err, rc = support.sh(P .. " recipes")
    assert.are.equal(0, rc, err)
    local n = 0
    for name in recipes:gmatch("\n?  (%w+)  ") do
      n = n + 1
      assert.truthy(man:find("\n.TP\n.B " .. name .. "\n", 1, true), "recipe " .. name .. " is not in doc/perfsh.1")
    end
    assert.is_true(n >= 7, recipes)
    local usage = support.sh(P .. " --help")
    local vars = 0
    for var in usage:gmatch("\n  (PERFSH_[%u_]+)") do
      vars = vars + 1
      assert.truthy(man:find(var, 1, true), var .. " is not in doc/perfsh.1")
    end
    assert.is_true(vars >= 1, usage)
  end)
end)

describe("the README tutorial", function()
  -- The steps run as written after make deps && make, from the top of the tree: perfsh is not
  -- on PATH there, so each command is ./perfsh. They run here in a directory of their own (the
  -- files they write stay out of the tree), with ./perfsh and ./examples linked into it.
  local function tutorial()
    local readme = read("README.md")
    local a = assert(readme:find("## Tutorial", 1, true))
    local b = assert(readme:find("\n## ", a + 1, true))
    return readme:sub(a, b)
  end

  it("calls perfsh as ./perfsh, and every step runs as written", function()
    local text = tutorial()
    local cmds = {}
    for span in text:gmatch("`([^`]+)`") do
      span = span:gsub("%s+", " ")
      assert.is_nil(span:match("^perfsh[ ]") or span:match("^perfsh$"), "not runnable after make: " .. span)
      if span:match("^%./perfsh ") then cmds[#cmds + 1] = span end
    end
    assert.is_true(#cmds >= 10, text)
    local code = assert(text:match("```lua\n(.-)```"), "no Lua example in the tutorial")
    local dir = os.tmpname()
    os.remove(dir)
    local root = support.abspath("")
    local exe = P:match("^/") and P or root .. P:gsub("^%./", "")
    assert(os.execute(("mkdir -p %s && ln -s %s %s/perfsh && ln -s %sexamples %s/examples"):format(support.q(dir),
      support.q(exe), support.q(dir), support.q(root), support.q(dir))))
    local f = assert(io.open(dir .. "/slow.lua", "w"))
    f:write(code)
    f:close()
    local skipped = {}
    for _, c in ipairs(cmds) do
      local why = c:find("PID", 1, true) and "a process id to fill in"
        or c:find("--backend uprobe", 1, true) and not require("perfsh.core").uprobe_available() and "no uprobes"
        or (c:find("callgrind", 1, true) or c:find("check ", 1, true)) and not require("perfsh.core").pmu_present()
          and support.sh("command -v valgrind") == "" and "no valgrind"
      if why then
        skipped[#skipped + 1] = c .. " (" .. why .. ")"
      else
        local out, err, rc = support.sh(("cd %s && env PATH=/usr/bin:/bin %s"):format(support.q(dir), c))
        assert.are.equal(0, rc, c .. "\n" .. out .. err)
        if c:find("slow.lua", 1, true) then
          assert.truthy(out:find("\n%d+%s+%d+\n$") or out:find("^%d+%s+%d+\n$"), out)
        end
      end
    end
    os.execute("rm -rf " .. support.q(dir))
    if #skipped > 1 then print("# not run: " .. table.concat(skipped, "; ")) end
  end)
end)
