-- create_sub.lua is Store.CreateSubscription. ARGV: tenant (escaped),
-- room, id, then the field/value pairs of its hash, sub:. It returns 0
-- when it stored the subscription and changed the room's revision, 1 when
-- there is no such room.
local room = P .. 'room:' .. ARGV[1] .. '|' .. ARGV[2]
if redis.call('EXISTS', room) == 0 then
	return 1
end
redis.call('HSET', P .. 'sub:' .. ARGV[3], unpack(ARGV, 4))
redis.call('ZADD', P .. 'subs:' .. ARGV[1] .. '|' .. ARGV[2], 0, ARGV[3])
redis.call('HINCRBY', room, 'rev', 1)
return 0
