-- prune.lua is Store.Prune. ARGV: before, limit. It returns how many
-- terminal messages, room events (once none of their deliveries is
-- active) and settled inbox ids it deleted; the
-- dedup state of targets untouched since before goes too, uncounted (a
-- dedup window never reaches back that far).
local ids = redis.call('ZRANGEBYSCORE', P .. 'done', '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
	delete(load(id, true))
end
-- A room event goes once none of its deliveries is active: they read its
-- data when they are sent. The events kept for one are passed over, up to
-- as many as the limit.
local function delivering(dl)
	for _, pair in ipairs(cjson.decode(dl)) do
		local s = redis.call('HGET', P .. 'm:' .. pair[2], 's')
		if s and active(string.match(s, '^[^|]*')) then
			return true
		end
	end
	return false
end
local evs, kept, limit = {}, 0, tonumber(ARGV[2])
while #evs < limit and kept < limit do
	local page = redis.call('ZRANGEBYSCORE', P .. 'evts', '-inf', '(' .. ARGV[1], 'LIMIT', #evs + kept, limit)
	if #page == 0 then
		break
	end
	for _, id in ipairs(page) do
		local dl = redis.call('HGET', P .. 'evt:' .. id, 'dl')
		if dl and delivering(dl) then
			kept = kept + 1
		else
			evs[#evs + 1] = id
		end
	end
end
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
