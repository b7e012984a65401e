-- prune.lua is Store.Prune. ARGV: before, limit. It returns how many
-- terminal messages, room events and settled inbox ids it deleted.
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
return #ids + #evs + #seen
