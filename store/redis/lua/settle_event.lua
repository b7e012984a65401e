-- settle_event.lua is Store.SettleEvent. ARGV: id, outcome (delivered,
-- dead or retry), retry at, attempt, error. It returns 0, or 1 when there
-- is no such event.
local id, outcome = ARGV[1], ARGV[2]
local key = P .. 'ev:' .. id
if redis.call('EXISTS', key) == 0 then
	return 1
end
if outcome == 'delivered' then
	redis.call('DEL', key)
	redis.call('ZREM', P .. 'evdue', id)
elseif outcome == 'dead' then
	redis.call('HSET', key, 'attempt', ARGV[4], 'err', ARGV[5], 'dead', 1)
	redis.call('ZREM', P .. 'evdue', id)
	redis.call('ZADD', P .. 'evdead', redis.call('HGET', key, 'at'), id)
else
	redis.call('HSET', key, 'attempt', ARGV[4], 'err', ARGV[5])
	redis.call('ZADD', P .. 'evdue', ARGV[3], id)
end
return 0
