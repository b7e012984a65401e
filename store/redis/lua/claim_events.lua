-- claim_events.lua is Store.ClaimEvents. ARGV: now, limit, lease end. It
-- returns {id, subscriber, message id, type, at, attempt, data} for each
-- event due at now, and makes it due again at the lease's end.
local ids = redis.call('ZRANGEBYSCORE', P .. 'evdue', '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for i, id in ipairs(ids) do
	redis.call('ZADD', P .. 'evdue', ARGV[3], id)
	local e = redis.call('HMGET', P .. 'ev:' .. id, 'sub', 'msg', 'type', 'at', 'attempt', 'data')
	out[i] = { id, e[1], e[2], e[3], e[4], e[5], e[6] }
end
return out
