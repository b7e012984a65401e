-- touch_session.lua is Store.TouchSession. ARGV: id, used, expires, and
-- ttl, the session's life from now in ms. It returns 1 when it moved the
-- session's last use and end, 0 when the session had ended at used.
local key = P .. 'sess:' .. ARGV[1]
local h = redis.call('HMGET', key, 't', 'exp')
if not h[2] or tonumber(h[2]) <= tonumber(ARGV[2]) then
	return 0
end
local ttl = tonumber(ARGV[4])
redis.call('HSET', key, 'used', ARGV[2], 'exp', ARGV[3])
redis.call('PEXPIRE', key, ttl)
local zkey = P .. 'sessions:' .. h[1]
redis.call('ZADD', zkey, 'XX', ARGV[2], ARGV[1])
local left = redis.call('PTTL', zkey)
if left >= 0 and left < ttl then
	redis.call('PEXPIRE', zkey, ttl)
end
return 1
