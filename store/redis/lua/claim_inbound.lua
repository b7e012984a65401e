-- claim_inbound.lua is Store.ClaimInbound. ARGV: now, limit, lease end. It
-- returns the row of inrow (see lib.lua) of each inbox event due at now,
-- earliest due first (then by id), with the due time it had, and makes it
-- due again at the lease's end.
local due = redis.call('ZRANGEBYSCORE', P .. 'indue', '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for i = 1, #due, 2 do
	local id = due[i]
	local row = inrow(id, due[i + 1])
	if row then
		redis.call('ZADD', P .. 'indue', ARGV[3], id)
		out[#out + 1] = row
	else
		redis.call('ZREM', P .. 'indue', id)
	end
end
return out
