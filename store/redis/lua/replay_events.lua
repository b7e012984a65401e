-- replay_events.lua is Store.ReplayEvents. ARGV: now, tenant (escaped,
-- '' for any), then the ids of the dead events to make live again, due
-- at now with no delivery tried. It returns how many it made live.
local now = ARGV[1]
local f = { tenant = ARGV[2], sub = '', since = 0, untl = 0 }
local n = 0
for i = 3, #ARGV do
	local id = ARGV[i]
	local at = redis.call('ZSCORE', P .. 'evdead', id)
	if at and deadmatch(f, id, at) then
		revive(id, now)
		n = n + 1
	end
end
return n
