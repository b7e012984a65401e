-- delete_sub.lua is Store.DeleteSubscription. ARGV: tenant (escaped), id,
-- the prefix of rooms' routes, at, reason, n, the n subscribers to tell
-- of a delivery cancelled, then those to tell of one failed. It deletes
-- the subscription, changes its room's revision, ends its active
-- deliveries (see enddeliveries) and returns how many it ended, or -1
-- when the tenant has no such subscription.
local tenant, id, prefix, at, reason = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local nc = tonumber(ARGV[6])
local csubs, fsubs = { unpack(ARGV, 7, 6 + nc) }, { unpack(ARGV, 7 + nc) }
local sub = P .. 'sub:' .. id
local v = redis.call('HMGET', sub, 't', 'r')
if v[1] ~= tenant then
	return -1
end
local room = v[2]
local n = enddeliveries(prefix .. room .. '|' .. id, at, reason, csubs, fsubs)
redis.call('DEL', sub)
redis.call('ZREM', P .. 'subs:' .. tenant .. '|' .. room, id)
redis.call('HINCRBY', P .. 'room:' .. tenant .. '|' .. room, 'rev', 1)
relane()
return n
