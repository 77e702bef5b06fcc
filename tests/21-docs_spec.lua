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

  it("the man page renders without warnings", function(pending)
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
