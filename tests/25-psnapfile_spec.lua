-- Saved .psnap files that were cut, damaged or rearranged, read back by perfsh report and
-- perfsh.load: the same error at every cut length, impossible records skipped and counted, event
-- columns kept, blocks out of place costing nothing, and the per-hit exports streamed.
local perfsh = require "perfsh"
local export = require "perfsh.export"
local json = require "dkjson"
local support = dofile("tests/support.lua")
local P = support.perfsh

local slurp, spit = support.read, support.write

-- zlib's CRC32 (the format's, core/records/psnap.h), to write back a block as a bad copy tool would.
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do c = (c & 1) ~= 0 and (0xEDB88320 ~ (c >> 1)) or (c >> 1) end
  crc_table[i] = c
end
local function crc32(s)
  local c = 0xFFFFFFFF
  for i = 1, #s do c = crc_table[(c ~ s:byte(i)) & 0xFF] ~ (c >> 8) end
  return c ~ 0xFFFFFFFF
end

-- The blocks of a file: {kind, off (0-based), len (payload bytes)}, in file order.
local function blocks(data)
  local out, off = {}, 32
  while off + 32 <= #data do
    local len = string.unpack("<I4", data, off + 17)
    out[#out + 1] = {kind = data:sub(off + 1, off + 4), off = off, len = len}
    off = off + 32 + len
  end
  return out
end

local function find_block(data, kind, holding)
  for _, b in ipairs(blocks(data)) do
    if b.kind == kind and (not holding or data:sub(b.off + 33, b.off + 32 + b.len):find(holding, 1, true)) then
      return b
    end
  end
end

-- @data with the byte at 0-based offset @at flipped.
local function flip(data, at)
  return data:sub(1, at) .. string.char(data:byte(at + 1) ~ 0x10) .. data:sub(at + 2)
end

-- @data with the block @b's two checksums computed again.
local function fix_crcs(data, b)
  local payload = data:sub(b.off + 33, b.off + 32 + b.len)
  data = data:sub(1, b.off + 20) .. string.pack("<I4", crc32(payload)) .. data:sub(b.off + 25)
  local head = data:sub(b.off + 1, b.off + 28)
  return data:sub(1, b.off + 28) .. string.pack("<I4", crc32(head)) .. data:sub(b.off + 33)
end

local function save(args)
  local path = os.tmpname() .. ".psnap"
  local _, err, rc = support.sh(("%s stat -e task-clock,page-faults --save %s %s"):format(P, path, args))
  assert.are.equal(0, rc, err)
  return path
end

describe("perfsh report of a damaged .psnap file", function()
  it("refuses a file cut anywhere before its first record, at every length, in one line (exit 2) that says "
    .. "what survived of the header and names; cut later, keeps the record with a note", function()
    local path = save("-r sum examples/sum")
    local data = slurp(path)
    local recs = find_block(data, "RECS")
    local record_end = recs.off + 32 + string.unpack("<I4", data, 21) -- the header's record size
    local evnt, regn = find_block(data, "EVNT"), find_block(data, "REGN")
    local cut = path .. ".cut"
    local refused = {}
    for len = 0, #data do
      spit(cut, data:sub(1, len))
      local ok, f = pcall(perfsh.load, cut, {quiet = true})
      if len < record_end then
        assert.is_false(ok, "a cut at " .. len .. " was read")
        local msg = tostring(f):gsub("^[^\n]-:%d+: ", "")
        assert.are.equal(1, #support.lines(msg .. "\n"), msg)
        if len == 0 then
          assert.are.equal(cut .. ": not a perfsh snapshot file (empty)", msg)
        else
          assert.are.equal(1, msg:find(cut .. ": no readable records (", 1, true), msg)
          assert.truthy(msg:find("truncated file)", 1, true) or msg:find("no END block", 1, true), msg)
          if len >= 32 then
            assert.truthy(msg:find("; what survived: the file header (version 2, 2 values and 0 arguments per "
              .. "record)", 1, true), msg)
          end
          assert.are.equal(len >= evnt.off + 32 + evnt.len, msg:find("; events task-clock,page-faults", 1, true)
            ~= nil, msg)
          assert.are.equal(len >= regn.off + 32 + regn.len, msg:find("; regions sum", 1, true) ~= nil, msg)
        end
        refused[len] = msg
      else
        assert.is_true(ok, tostring(f))
        assert.are.equal(1, f.info.records)
        assert.are.equal(len == #data, f.info.warning == nil, f.info.warning)
        f:close()
      end
    end
    -- perfsh report says the same, at and around every block's boundaries
    local lengths = {0, 1, 7, 8, 12, 20, 31, #data - 1, #data}
    for _, b in ipairs(blocks(data)) do
      for _, d in ipairs{0, 1, 31, 32, 32 + b.len // 2, 32 + b.len - 1} do lengths[#lengths + 1] = b.off + d end
    end
    for _, len in ipairs(lengths) do
      spit(cut, data:sub(1, len))
      local out, err, rc = support.sh(P .. " report " .. cut)
      if refused[len] then
        assert.are.equal(2, rc, err)
        assert.are.equal("", out)
        assert.are.equal("perfsh report: " .. refused[len] .. "\n", err)
      else
        assert.are.equal(0, rc, err)
        assert.truthy(out:find("region sum %([^,]+, 1 hit%)"), out) -- its kind, "?" before its metadata
        assert.are.equal(len == #data and "" or ("perfsh: " .. cut .. ": "), err:sub(1, #cut + 10), err)
      end
    end
    os.remove(cut)
    os.remove(path)
  end)

  it("skips a record whose counter runs backwards (checksums recomputed), saying how many and why; "
    .. "the totals, maximum and hits are those of the other records", function()
    local path = save("-r spin examples/loop 1 20")
    local kept, total, max = 0, 0, 0
    do
      local f <close> = perfsh.load(path)
      for h in f:hits() do
        if h.hit ~= 3 then
          kept, total, max = kept + 1, total + h["task-clock"], math.max(max, h["task-clock"])
        end
      end
    end
    assert.are.equal(19, kept)
    local data = slurp(path)
    local recs = find_block(data, "RECS")
    local nvals, nargs, size = string.unpack("<I2I2I4", data, 17)
    local rec = recs.off + 32 + 3 * size -- the fourth hit
    assert.are.equal(3, string.unpack("<I8", data, rec + 17)) -- its hit number
    local start = rec + 88 + 8 * nargs
    local v = string.unpack("<I8", data, start + 1)
    data = data:sub(1, start + 8 * nvals) .. string.pack("<I8", v - 1) .. data:sub(start + 8 * nvals + 9)
    spit(path, fix_crcs(data, recs))
    local why = ("perfsh: %s: 1 record skipped as impossible (1 with a counter running backwards); 19 records kept\n")
      :format(path)
    local out, err, rc = support.sh(P .. " report --csv " .. path)
    assert.are.equal(0, rc, err)
    assert.are.equal(why, err)
    local hits, sum, top = out:match("\nspin,task%-clock,(%d+),(%d+),[^,]*,[^,]*,[^,]*,[^,]*,(%d+),")
    assert.are.equal(19, tonumber(hits), out)
    assert.are.equal(total, tonumber(sum), out)
    assert.are.equal(max, tonumber(top), out)
    out, err = support.sh(P .. " report " .. path)
    assert.are.equal(why, err)
    assert.truthy(out:find("; 19 records;", 1, true), out)
    assert.is_nil(out:find("e+19", 1, true), out)
    out = support.sh(P .. " report --hits-csv " .. path)
    local rows = support.lines(out)
    assert.are.equal(20, #rows) -- the header and 19 hits
    assert.is_nil(out:find(",-", 1, true), out)
    os.remove(path)
  end)

  it("keeps the event columns of a file whose event block is damaged: the names from their copy, else "
    .. "event1..eventN, saying which", function()
    local path = save("-r sum examples/sum")
    local data = slurp(path)
    local evnt = find_block(data, "EVNT")
    local copy = find_block(data, "META", "event.0") or evnt -- (no copy: both flips in the event block)
    local cases = {
      {flip(data, evnt.off + 32 + 6), "task-clock,page-faults", "event names taken from their copy in the metadata"},
      {flip(flip(data, evnt.off + 32 + 6), copy.off + 32 + 14), "event1,event2",
        "event names lost: the 2 event columns are named event1..event2"},
    }
    for _, c in ipairs(cases) do
      spit(path, c[1])
      local out, err, rc = support.sh(P .. " report --hits-csv " .. path)
      assert.are.equal(0, rc, err)
      assert.truthy(out:match("^region,[%w_,]+,flags," .. c[2]:gsub("%-", "%%-") .. "\nsum,"), out)
      assert.truthy(err:find(c[3] .. "; 1 record kept\n", 1, true), err)
      out = support.sh(P .. " report " .. path)
      local first = c[2]:match("^[^,]+"):gsub("%-", "%%-")
      assert.truthy(out:find("\n  " .. first .. " +1 "), out)
    end
    os.remove(path)
  end)

  it("reads every record when an intact block of records is copied in front of the regions block", function()
    local path = save("-r spin examples/loop 1 20")
    local data = slurp(path)
    local recs, regn = find_block(data, "RECS"), find_block(data, "REGN")
    assert.is_true(regn.off < recs.off)
    local copy = data:sub(recs.off + 1, recs.off + 32 + recs.len)
    spit(path, data:sub(1, regn.off) .. copy .. data:sub(regn.off + 1))
    local out, err, rc = support.sh(P .. " report --csv " .. path)
    assert.are.equal(0, rc, err)
    assert.are.equal(("perfsh: %s: 1 repeated block of records ignored (at byte %d); 20 records kept\n")
      :format(path, recs.off + #copy), err)
    assert.truthy(out:find("\nspin,task-clock,20,", 1, true), out)
    os.remove(path)
  end)
end)

describe("perfsh report's per-hit exports", function()
  it("stream the hits of the regions asked for, in file order, the same as the whole file's", function()
    local path = save("-r spin -r main examples/loop 1 20")
    local all = support.lines((support.sh(P .. " report --hits-csv " .. path)))
    assert.are.equal(22, #all) -- the header, 20 of spin, 1 of main (it ends last)
    assert.truthy(all[22]:find("^main,0,"), all[22])
    local spin = support.lines((support.sh(P .. " report --hits-csv -r spin " .. path)))
    assert.are.same({table.unpack(all, 1, 21)}, spin)
    local lines = support.lines((support.sh(P .. " report --jsonl -r main " .. path)))
    assert.are.equal(1, #lines)
    assert.are.equal("main", json.decode(lines[1]).region)
    local trace = os.tmpname()
    local _, err, rc = support.sh(P .. " report --trace " .. trace .. " " .. path)
    assert.are.equal(0, rc, err)
    local doc = json.decode(support.take(trace))
    local slices, seqs = 0, {}
    for _, e in ipairs(doc.traceEvents) do
      if e.ph == "X" then
        slices = slices + 1
        assert.is_true(e.ts >= 0)
        seqs[#seqs + 1] = e.args.hit
      end
    end
    assert.are.equal(21, slices)
    assert.are.equal(0, seqs[21]) -- main's only hit, last
    os.remove(path)
  end)

  it("write each JSON line as export.json writes the hit, arguments included", function()
    local path = os.tmpname() .. ".psnap"
    do
      local t <close> = perfsh.spawn{"examples/recursive", "3", "4", events = {"task-clock", "page-faults"},
        stdout = "/dev/null"}
      t:region{func = "walk", every_level = true, args = {"n"}}
      t:run()
      assert.are.equal(15, t:save(path))
    end
    local out, err, rc = support.sh(P .. " report --jsonl " .. path)
    assert.are.equal(0, rc, err)
    local lines = support.lines(out)
    assert.are.equal(15, #lines)
    for _, line in ipairs(lines) do
      local o = json.decode(line)
      assert.are.equal(6, #o.args)
      assert.are.equal(export.json(o), line)
    end
    os.remove(path)
  end)
end)
