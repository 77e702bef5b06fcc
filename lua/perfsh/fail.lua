--- perfsh.fail: the errors perfsh raises for bad input or a run that cannot go on, as values: a
-- one-line message and a code a script branches on (never on the text). tostring(e) and
-- string.format's %s give the message; cli.main prints it alone (exit 2), where any other error
-- is a bug and gets a traceback.
local M = {}

local Fail = {__tostring = function(e) return e.message end}

--- Raise @message (a string, or a failure already raised, kept as it is) with @code ("usage"
-- when none: what was given cannot be done; the caller's messages say what to do instead).
function M.raise(message, code)
  if getmetatable(message) == Fail then error(message, 0) end
  error(setmetatable({message = tostring(message), code = code or "usage"}, Fail), 0)
end

--- True when @e is a failure M.raise raised.
function M.is(e)
  return getmetatable(e) == Fail
end

--- The code of failure @e, or nil for any other error.
function M.code(e)
  return getmetatable(e) == Fail and e.code or nil
end

return M
