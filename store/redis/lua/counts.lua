-- counts.lua is Store.Counts. It returns {t|r|status, count, oldest
-- created_at} for every group that holds messages: the waiting statuses
-- from their groups' sorted sets, the others from cnt (oldest 0).
local WAITING = { 'QUEUED', 'TO_RETRY' }
local out = {}
for _, pr in ipairs(redis.call('SMEMBERS', P .. 'pairs')) do
	for _, st in ipairs(WAITING) do
		local g = pr .. '|' .. st
		local k = P .. 'grp:' .. g
		local n = redis.call('ZCARD', k)
		if n > 0 then
			out[#out + 1] = { g, n, redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')[2] }
		end
	end
end
local cnt = redis.call('HGETALL', P .. 'cnt')
for i = 1, #cnt, 2 do
	if tonumber(cnt[i + 1]) > 0 then
		out[#out + 1] = { cnt[i], cnt[i + 1], '0' }
	end
end
return out
