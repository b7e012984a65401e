-- settle_inbound.lua is Store.SettleInbound. ARGV: later (an inbox event's
-- id, or empty), its due at, then '1' when there is an uplink event to
-- enqueue ('' when not), its id, type, at and data, then n, the n inbox
-- events done, and the subscribers to enqueue the uplink event for. Each
-- subscriber's event is the uplink's id.subscriber; one there already
-- stays as it is. Unknown ids are skipped. It returns 0.
local later, due, uplink = ARGV[1], ARGV[2], ARGV[3] == '1'
local n = tonumber(ARGV[8])
for i = 9, 8 + n do
	local id = ARGV[i]
	local key = P .. 'in:' .. id
	local v = redis.call('HMGET', key, 'ci', 'at')
	local ci = v[1]
	if ci then
		redis.call('ZADD', P .. 'indone', v[2], id) -- remembered until pruned
		redis.call('DEL', key)
		redis.call('ZREM', P .. 'indue', id)
		if ci ~= '' then
			redis.call('SREM', P .. 'incorr:' .. ci, id)
		end
	end
end
if later ~= '' and redis.call('EXISTS', P .. 'in:' .. later) == 1 then
	redis.call('ZADD', P .. 'indue', due, later)
end
if uplink then
	local uid, typ, at, data = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
	for i = 9 + n, #ARGV do
		local sub = ARGV[i]
		local eid = uid .. '.' .. sub
		local key = P .. 'ev:' .. eid
		if redis.call('EXISTS', key) == 0 then
			redis.call('HSET', key, 'sub', sub, 'msg', '', 'type', typ, 'at', at, 'attempt', 0, 'data', data)
			redis.call('ZADD', P .. 'evdue', at, eid)
		end
	end
end
return 0
