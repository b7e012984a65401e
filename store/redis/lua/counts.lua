-- counts.lua is Store.Counts. It returns {t|r|status, count, oldest
-- created_at} for every group that holds messages.
local STATUSES = { 'QUEUED', 'SENT_TO_NS', 'DELIVERED_TO_NS', 'SENT_TO_DEVICE', 'TO_RETRY',
	'DELIVERY_SUCCESSFUL', 'DELIVERY_FAILED', 'CANCELLED' }
local out = {}
for _, pr in ipairs(redis.call('SMEMBERS', P .. 'pairs')) do
	for _, st in ipairs(STATUSES) do
		local g = pr .. '|' .. st
		local k = P .. 'grp:' .. g
		local n = redis.call('ZCARD', k)
		if n > 0 then
			out[#out + 1] = { g, n, redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')[2] }
		end
	end
end
return out
