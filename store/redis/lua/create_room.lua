-- create_room.lua is Store.CreateRoom. ARGV: tenant (escaped), name, then
-- the field/value pairs of its hash, room:. It returns 0 when it stored
-- the room, 1 when the tenant has a room of that name.
local key = P .. 'room:' .. ARGV[1] .. '|' .. ARGV[2]
if redis.call('EXISTS', key) == 1 then
	return 1
end
redis.call('HSET', key, unpack(ARGV, 3))
redis.call('ZADD', P .. 'rooms:' .. ARGV[1], 0, ARGV[2])
return 0
