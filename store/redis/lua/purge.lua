-- purge.lua is one step of Store.Purge. ARGV: tenant and route (escaped;
-- "" for all), before (0 for any time), cursor ("" to start), chunk. It
-- looks at the next chunk of dead letters after cursor, by id, deletes
-- those that match, and returns {deleted, next cursor} ("" when done).
local tenant, route, before = ARGV[1], ARGV[2], tonumber(ARGV[3])
local from = ARGV[4] == '' and '-' or '(' .. ARGV[4]
local chunk = tonumber(ARGV[5])
local ids = redis.call('ZRANGEBYLEX', P .. 'failed', from, '+', 'LIMIT', 0, chunk)
local n = 0
for _, id in ipairs(ids) do
	local m = load(id, true)
	if (tenant == '' or m.tenant == tenant) and (route == '' or m.route == route)
		and (before == 0 or num(m.updated) < before) then
		delete(m)
		n = n + 1
	end
end
if #ids < chunk then
	return { n, '' }
end
return { n, ids[#ids] }
