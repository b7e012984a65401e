-- due_polls.lua is Store.DuePolls. ARGV: now, limit. It returns up to
-- limit DELIVERED_TO_NS messages with a poll due at now, as HGETALL
-- replies, earliest due first.
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. 'poll', '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))) do
	out[#out + 1] = redis.call('HGETALL', P .. 'm:' .. id)
end
return out
