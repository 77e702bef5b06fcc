-- Output files (-o, --save, --trace, --log, spill files) are written whole: to a temporary
-- file beside them, renamed at the end. A run that fails leaves the old file as it was, and
-- leaves no temporary file behind.
local support = dofile("tests/support.lua")
local P, q = support.perfsh, support.q

local dir

local function put(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local read = support.read_if

-- The names in @dir, sorted.
local function listing()
  local out = support.sh("ls -A " .. q(dir))
  return support.lines(out)
end

-- @files (names in dir) each holding "old <name>".
local function olds(files)
  for _, f in ipairs(files) do put(dir .. "/" .. f, "old " .. f) end
end

local function assert_old(files)
  for _, f in ipairs(files) do assert.are.equal("old " .. f, read(dir .. "/" .. f), f) end
  local names = {}
  for _, f in ipairs(files) do names[#names + 1] = f end
  table.sort(names)
  assert.are.same(names, listing())
end

before_each(function()
  dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. q(dir)))
end)

after_each(function()
  os.execute("rm -rf " .. q(dir))
end)

describe("perfsh stat output files", function()
  local files = {"p.txt", "s.psnap", "t.json"}
  local opts = "-o %s/p.txt --save %s/s.psnap --trace %s/t.json"

  it("are left as they were by a region that does not exist (exit 2)", function()
    olds(files)
    local _, err, rc = support.sh(("%s stat -r nosuch %s examples/sum"):format(P, opts:format(dir, dir, dir)))
    assert.are.equal(2, rc, err)
    assert.truthy(err:find("no function 'nosuch'", 1, true), err)
    assert_old(files)
  end)

  it("are left as they were by a program that does not exist (exit 2)", function()
    olds(files)
    local _, err, rc = support.sh(("%s stat -r sum %s ./examples/nosuch"):format(P, opts:format(dir, dir, dir)))
    assert.are.equal(2, rc, err)
    assert.truthy(err:find("cannot run './examples/nosuch'", 1, true), err)
    assert_old(files)
  end)

  it("are replaced, keeping their mode, when the run completes", function()
    olds(files)
    support.sh(("chmod 600 %s/p.txt"):format(q(dir)))
    local _, err, rc = support.sh(("%s stat -r sum %s examples/sum"):format(P, opts:format(dir, dir, dir)))
    assert.are.equal(0, rc, err)
    assert.truthy(read(dir .. "/p.txt"):find("^perfsh stat: examples/sum, exit 0;.*region sum %(func, 1 hit%)"))
    assert.are.equal("600", (support.sh("stat -c %a " .. q(dir .. "/p.txt")):match("%d+")))
    assert.truthy(read(dir .. "/t.json"):find('"traceEvents"', 1, true))
    local f = perfsh.load(dir .. "/s.psnap")
    assert.are.equal(1, f.info.records)
    f:close()
    assert.are.same(files, listing())
  end)

  it("writes -o through a symbolic link to the file it names", function()
    olds({"p.txt"})
    assert(os.execute(("ln -s p.txt %s/link.txt"):format(q(dir))))
    local _, err, rc = support.sh(("%s stat -r sum -o %s/link.txt examples/sum"):format(P, q(dir)))
    assert.are.equal(0, rc, err)
    assert.truthy(read(dir .. "/p.txt"):find("region sum", 1, true))
    assert.are.equal("p.txt\n", (support.sh("readlink " .. q(dir .. "/link.txt"))))
  end)
end)

describe("other output files", function()
  it("perfsh report --trace of a file that does not exist leaves the trace as it was", function()
    olds({"t.json"})
    local _, err, rc = support.sh(("%s report %s/none.psnap --trace %s/t.json"):format(P, q(dir), q(dir)))
    assert.are.equal(2, rc, err)
    assert_old({"t.json"})
  end)

  it("perfsh tail --log with a region that does not exist leaves the log as it was", function()
    olds({"slow.log"})
    local _, err, rc = support.sh(("%s tail -r nosuch --threshold-us 0 --log %s/slow.log examples/slow 3")
      :format(P, q(dir)))
    assert.are.equal(2, rc, err)
    assert_old({"slow.log"})
    _, err, rc = support.sh(("%s tail -r iteration --threshold-us 0 --log %s/slow.log examples/slow 3")
      :format(P, q(dir)))
    assert.are.equal(0, rc, err)
    local lines = support.lines(read(dir .. "/slow.log"))
    assert.are.equal(3, #lines)
    assert.truthy(lines[1]:find("^hit=0 time="), lines[1])
    assert.are.same({"slow.log"}, listing())
  end)

  it("a spill file is replaced when the spill is finished, and left as it was by t:close() before", function()
    olds({"s.psnap"})
    local path = dir .. "/s.psnap"
    local t = perfsh.spawn{"examples/sum", events = {"task-clock"}, spill = path}
    t:region{func = "sum"}
    t:close()
    assert_old({"s.psnap"})
    t = perfsh.spawn{"examples/sum", events = {"task-clock"}, spill = path}
    t:region{func = "sum"}
    t:run()
    t:close()
    local f = perfsh.load(path)
    assert.are.equal(1, f.info.records)
    f:close()
    assert.are.same({"s.psnap"}, listing())
  end)

  it("t:save into a directory that does not exist is one error and writes nothing", function()
    local t <close> = perfsh.spawn{"examples/sum", events = {"task-clock"}}
    t:region{func = "sum"}
    t:run()
    local ok, err = pcall(t.save, t, dir .. "/no/s.psnap")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cannot write " .. dir .. "/no/s.psnap: No such file or directory", 1, true),
      err)
  end)
end)
