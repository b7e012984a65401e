-- prune.lua is Store.Prune. ARGV: before, limit. It returns how many
-- terminal messages, room events and settled inbox ids it deleted; the
-- dedup state of targets untouched since before goes too, uncounted (a
-- dedup window never reaches back that far).
local ids = redis.call('ZRANGEBYSCORE', P .. 'done', '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
	delete(load(id, true))
end
local evs = redis.call('ZRANGEBYSCORE', P .. 'evts', '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(evs) do
	redis.call('DEL', P .. 'evt:' .. id)
end
if #evs > 0 then
	redis.call('ZREM', P .. 'evts', unpack(evs))
end
-- Settled inbox events' ids go by when the events came.
local seen = redis.call('ZRANGEBYSCORE', P .. 'indone', '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #seen > 0 then
	redis.call('ZREM', P .. 'indone', unpack(seen))
end
local idle = redis.call('ZRANGEBYSCORE', P .. 'lasts', '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, k in ipairs(idle) do
	redis.call('DEL', P .. 'last:' .. k)
end
if #idle > 0 then
	redis.call('ZREM', P .. 'lasts', unpack(idle))
end
return #ids + #evs + #seen
