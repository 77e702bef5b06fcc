--- perfsh.attribute: least-squares attribution of a counter to work units.
-- Seed idea: when a function's cost is a*A + b*B + c*C + k for arguments A, B, C, solve for
-- the per-unit costs a, b, c and the constant k from many hits (an SVD-based solver,
-- LAPACKE dgelsd).
--   perfsh.attribute(hits, {"A", "B", "C"}, "instructions")
--   -> {costs = {A = a, B = b, C = c}, const = k, rms = , rss = , cond = , rank = , n = }
local core = require "perfsh.core"

local attribute = {}

function attribute.solve(hits, names, event, opts)
  if type(hits) ~= "table" then error("bad argument #1 to 'attribute' (an array of hits expected)", 2) end
  if type(names) ~= "table" or #names == 0 then
    error("bad argument #2 to 'attribute' (the names of the work units expected)", 2)
  end
  if type(event) ~= "string" then error("bad argument #3 to 'attribute' (an event or field name expected)", 2) end
  local const = not (opts and opts.const == false)
  local rows, b = {}, {}
  for i, h in ipairs(hits) do
    if not (h.unwound or h.exited) then
      local row = {}
      for k, name in ipairs(names) do
        local v = h[name]
        if type(v) ~= "number" then error(("hit %d has no number '%s' (record the arguments with region{args = {...}})")
          :format(i, name), 2) end
        row[k] = v
      end
      if const then row[#row + 1] = 1 end
      local y = h[event]
      if type(y) ~= "number" then error(("hit %d has no field '%s'"):format(i, event), 2) end
      rows[#rows + 1] = row
      b[#b + 1] = y
    end
  end
  local unknowns = #names + (const and 1 or 0)
  if #rows < unknowns then
    error(("too few hits: %d for %d unknowns; run more calls"):format(#rows, unknowns), 2)
  end
  local ok, sol = pcall(core.lstsq, rows, b)
  if not ok then error(tostring(sol), 2) end -- core.lstsq raises from C: no position to take off
  local out = {costs = {}, n = #rows, rss = sol.rss, cond = sol.cond, rank = sol.rank, event = event,
    names = names}
  for k, name in ipairs(names) do out.costs[name] = sol.x[k] end
  out.const = const and sol.x[#names + 1] or 0
  out.rms = math.sqrt(sol.rss / #rows)
  return out
end

return attribute
