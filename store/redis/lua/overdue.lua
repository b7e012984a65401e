-- overdue.lua is Store.Overdue. ARGV: now, limit. It returns up to limit
-- messages, as HGETALL replies, past their deadline or past their expiry.
local now, limit = ARGV[1], tonumber(ARGV[2])
local seen, out = {}, {}
for _, k in ipairs({ P .. 'inflight', P .. 'expiry' }) do
	for _, id in ipairs(redis.call('ZRANGEBYSCORE', k, '-inf', now, 'LIMIT', 0, limit)) do
		if #out == limit then
			return out
		end
		if not seen[id] then
			seen[id] = true
			out[#out + 1] = redis.call('HGETALL', P .. 'm:' .. id)
		end
	end
end
return out
