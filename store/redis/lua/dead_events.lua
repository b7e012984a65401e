-- dead_events.lua is Store.DeadEvents. ARGV: tenant (escaped, '' for
-- any), subscriber ('' for any), since and until (ms, 0 for none), the
-- page's start after (at and id, '' and '' for the newest), limit, then
-- the ids to match, if any (ids given: only those). It returns {next at,
-- next id} ('' and '' when no matching event is left), then {id,
-- subscriber, message id, type, at, attempt, data, error} for each dead
-- event that matches, newest first. It looks at no more than 4,096
-- events a call.
local f = { tenant = ARGV[1], sub = ARGV[2], since = num(ARGV[3]), untl = num(ARGV[4]) }
local limit = tonumber(ARGV[7])
local only
if #ARGV > 7 then
	only = {}
	for i = 8, #ARGV do
		only[ARGV[i]] = true
	end
end
local rows = {}
local nid, nat = deadscan(f, ARGV[5], ARGV[6], 4096, function(id, at, v)
	if not only or only[id] then
		rows[#rows + 1] = { id, v[1], v[2] or '', v[3], at, v[4], v[5] or '', v[6] or '' }
	end
	return #rows <= limit -- one more than the page: there is a next page
end)
local next = { '', '' }
if #rows > limit then
	rows[#rows] = nil
	next = { rows[#rows][5], rows[#rows][1] }
elseif nid then
	next = { nat, nid }
end
table.insert(rows, 1, next)
return rows
