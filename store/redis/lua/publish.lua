-- publish.lua is Store.Publish for a batch of publications, applied in
-- order. ARGV holds, for each, the number of its arguments and then them:
-- tenant (escaped), room, revision, then the event's id, type, version,
-- correlation id, data, deliveries (JSON) and time, then each delivery's
-- create (see create.lua), as the number of its arguments and then them.
-- The reply has, for each, 0 when it stored the event and its
-- deliveries, 1 when there is no such room, 2 when the room's revision is
-- another, 3 when a delivery's id is taken (in those cases it wrote
-- nothing), or {'ERR', text} (see batch).
local function publish(o, n)
	local tenant, room, rev = ARGV[o], ARGV[o + 1], ARGV[o + 2]
	local id, at = ARGV[o + 3], ARGV[o + 9]
	local cur = redis.call('HGET', P .. 'room:' .. tenant .. '|' .. room, 'rev')
	if not cur then
		return 1
	elseif cur ~= rev then
		return 2
	end
	local first, last = o + 10, o + n - 1 -- the first delivery's number of arguments; the last argument
	local i = first
	while i <= last do
		if redis.call('EXISTS', P .. 'm:' .. ARGV[i + 1]) == 1 then
			return 3
		end
		i = i + 1 + tonumber(ARGV[i])
	end
	redis.call('HSET', P .. 'evt:' .. id, 't', tenant, 'r', room, 'type', ARGV[o + 4], 'ver', ARGV[o + 5],
		'corr', ARGV[o + 6], 'data', ARGV[o + 7], 'dl', ARGV[o + 8], 'at', at)
	zadd(P .. 'evts', at, id)
	i = first
	while i <= last do
		local k = tonumber(ARGV[i])
		create(i + 1, k)
		i = i + 1 + k
	end
	return 0
end

local out = batch(publish)
created()
relane()
return out
