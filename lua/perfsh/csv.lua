--- perfsh.csv: the one CSV writer of every recipe (--csv, --hits-csv), quoting as RFC 4180 says:
-- a field that holds a comma, a double quote, a CR or a LF is put in double quotes, each double
-- quote in it doubled; any other field is written as it is. Rows end with "\n".
--   csv.write(io.stdout, {"region", "event", "hits"})
--   csv.write(out, {name, ("%.2f"):format(mean), ""})
local csv = {}

--- Field @v as it goes in a row: a number as tostring gives it (an integer without ".0"), nil as
-- an empty field, anything else as text, quoted when it must be.
function csv.field(v)
  if v == nil then return "" end
  if type(v) == "number" then return tostring(v) end
  v = tostring(v)
  if v:find('[,"\r\n]') then return '"' .. v:gsub('"', '""') .. '"' end
  return v
end

--- One row of the fields of array @fields (n = #fields unless @n says; a nil is an empty field),
-- with its "\n".
function csv.row(fields, n)
  local out = {}
  for i = 1, n or #fields do out[i] = csv.field(fields[i]) end
  return table.concat(out, ",") .. "\n"
end

--- Write csv.row(@fields, @n) to @out (a file, or anything with :write).
function csv.write(out, fields, n)
  out:write(csv.row(fields, n))
end

return csv
