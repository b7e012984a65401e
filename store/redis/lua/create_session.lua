-- create_session.lua is Store.CreateSession. ARGV: id, tenant (escaped),
-- role, csrf, created, used, expires, the tenant's bound (0: none), and
-- ttl, the session's life from now in ms. It forgets the tenant's
-- sessions that have ended at created (gone by their TTL, or whose exp is
-- at or before it), then, while the tenant holds the bound or more, its
-- least recently used (sessions: by used, then id), and stores the new one.
local id, tenant, created, bound, ttl = ARGV[1], ARGV[2], tonumber(ARGV[5]), tonumber(ARGV[8]), tonumber(ARGV[9])
local zkey = P .. 'sessions:' .. tenant
for _, sid in ipairs(redis.call('ZRANGE', zkey, 0, -1)) do
	local exp = redis.call('HGET', P .. 'sess:' .. sid, 'exp')
	if not exp or tonumber(exp) <= created then
		redis.call('DEL', P .. 'sess:' .. sid)
		redis.call('ZREM', zkey, sid)
	end
end
if bound > 0 then
	local n = redis.call('ZCARD', zkey)
	if n >= bound then
		for _, sid in ipairs(redis.call('ZRANGE', zkey, 0, n - bound)) do
			redis.call('DEL', P .. 'sess:' .. sid)
		end
		redis.call('ZREMRANGEBYRANK', zkey, 0, n - bound)
	end
end
local key = P .. 'sess:' .. id
redis.call('HSET', key, 't', tenant, 'role', ARGV[3], 'csrf', ARGV[4], 'at', ARGV[5], 'used', ARGV[6], 'exp', ARGV[7])
redis.call('PEXPIRE', key, ttl)
redis.call('ZADD', zkey, ARGV[6], id)
local left = redis.call('PTTL', zkey)
if left < ttl then
	redis.call('PEXPIRE', zkey, ttl)
end
return 0
