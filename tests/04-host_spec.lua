-- The perfsh executable: options, scripts, recipes, the REPL.
local support = dofile("tests/support.lua")
local P = support.perfsh

describe("perfsh executable", function()
  it("prints its version and help", function()
    local out, _, rc = support.sh(P .. " --version")
    assert.are.equal(0, rc)
    assert.truthy(out:match("^perfsh %d+%.%d+%.%d+ %(Lua 5%.4"))
    out, _, rc = support.sh(P .. " --help")
    assert.are.equal(0, rc)
    assert.truthy(out:find("usage: perfsh", 1, true))
    assert.truthy(out:find("--list [KIND|WORD]", 1, true))
  end)

  it("runs -e code with perfsh loaded", function()
    local out, _, rc = support.sh(P .. [[ -e 'local g <close> = perfsh.group{"task-clock"}; g:enable(); ]]
      .. [[perfsh.core.spin(1000000); print(g:read()["task-clock"] > 0)']])
    assert.are.equal(0, rc)
    assert.are.equal("true\n", out)
  end)

  it("exits non-zero for an unknown event, suggesting the right one", function()
    local _, err, rc = support.sh(P .. [[ -e 'perfsh.group{"instrs"}']])
    assert.are.equal(1, rc)
    assert.truthy(err:find("did you mean 'instructions'", 1, true))
  end)

  it("runs a script with arg set", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("print(#arg, arg[1], arg[2], select('#', ...)) os.exit(tonumber(arg[2]))\n")
    f:close()
    local out, _, rc = support.sh(P .. " " .. path .. " hello 5")
    os.remove(path)
    assert.are.equal("2\thello\t5\t2\n", out)
    assert.are.equal(5, rc)
  end)

  it("reports a missing script or recipe", function()
    local _, err, rc = support.sh(P .. " no-such-thing")
    assert.are.equal(2, rc)
    assert.are.equal("perfsh: 'no-such-thing' is neither a script nor a recipe (perfsh recipes lists the recipes)\n",
      err)
  end)

  it("rejects an unknown option", function()
    local _, err, rc = support.sh(P .. " --frobnicate")
    assert.are.equal(2, rc)
    assert.are.equal("perfsh: unknown option '--frobnicate' (perfsh --help lists them)\n", err)
  end)

  it("lists events by kind", function()
    local out, _, rc = support.sh(P .. " --list sw")
    assert.are.equal(0, rc)
    assert.truthy(out:find("\n  task%-clock +ns the task ran"))
    out, _, rc = support.sh(P .. " --list hw")
    assert.are.equal(0, rc)
    assert.truthy(out:match("^hardware events:\n"))
    local _, err
    _, err, rc = support.sh(P .. " --list gpu")
    assert.are.equal(2, rc)
    assert.truthy(err:find("no event here matches 'gpu'", 1, true))
  end)

  it("runs a recipe by name", function()
    local out, _, rc = support.sh(P .. " recipes")
    assert.are.equal(0, rc)
    assert.truthy(out:find("count", 1, true))
    out, _, rc = support.sh(P .. " count --csv -e task-clock -- sh -c 'exit 4'")
    assert.are.equal(4, rc)
    assert.truthy(out:match("^event,value,scaling\ntask%-clock,%d+,1%.0000\n$"))
  end)
end)

describe("perfsh REPL", function()
  it("evaluates expressions, multi-line statements, and survives errors", function()
    local input = table.concat({
      "1 + 2",
      "for i = 1, 2 do",
      "  x = (x or 0) + i",
      "end",
      "x",
      "error('boom')",
      "{b = 2, a = {1, 2}}",
      "perfsh.version",
    }, "\n") .. "\n"
    local out, err, rc = support.sh(P, input)
    assert.are.equal(0, rc)
    local version = require("perfsh").version
    assert.are.equal("3\n3\n{\n  a = {1, 2},\n  b = 2\n}\n\"" .. version .. "\"\n", out)
    assert.truthy(err:find("boom", 1, true))
    assert.truthy(err:find("stack traceback", 1, true))
  end)
end)
