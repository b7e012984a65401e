-- delete_room.lua is Store.DeleteRoom. ARGV: tenant (escaped), name, the
-- room's route (escaped), at, reason, n, the n subscribers to tell of a
-- delivery cancelled, then those to tell of one failed. It deletes the
-- room and its subscriptions, ends their active deliveries (see
-- enddeliveries) and returns how many it ended, or -1 when there is no
-- such room.
local tenant, name, route, at, reason = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local nc = tonumber(ARGV[6])
local csubs, fsubs = { unpack(ARGV, 7, 6 + nc) }, { unpack(ARGV, 7 + nc) }
local room, subs = P .. 'room:' .. tenant .. '|' .. name, P .. 'subs:' .. tenant .. '|' .. name
if redis.call('EXISTS', room) == 0 then
	return -1
end
local n = 0
for _, id in ipairs(redis.call('ZRANGE', subs, 0, -1)) do
	n = n + enddeliveries(route .. '|' .. id, at, reason, csubs, fsubs)
	redis.call('DEL', P .. 'sub:' .. id)
end
redis.call('DEL', room, subs)
redis.call('ZREM', P .. 'rooms:' .. tenant, name)
relane()
return n
