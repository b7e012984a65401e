-- recount.lua is one step of the recount of the lanes' messages in flight
-- that SetAdmission makes when the rules are those kept already (when
-- they change, admission.lua recounts in its own call). ARGV: what
-- ('lanes' or 'flying'), a route (escaped; for lanes only), a cursor ('0'
-- to start) and how many to look at. 'lanes' looks at that many lanes of
-- the gated route's ln (SSCAN) and drops from each lane's lin the ids that
-- are no message of the lane in flight (a slot that leaked); 'flying'
-- looks at that many messages of inflight (ZSCAN) and puts each message
-- of a gated lane in its lane's lin (a slot that was lost), but for a lane
-- a node keeps (ClaimAhead), whose flights of a node whose heartbeat
-- lapsed left lin when another took the lane over. Each decides
-- by the message as it is at the step, and each write that moves a
-- message keeps lin in step, so the steps need no lock: a recount costs
-- in proportion to the lanes and the messages in flight, in short calls.
-- A lane whose lin changed goes in its place (at the lanes' time when it
-- is the server's: see lanenow). It returns the next cursor, '0' when
-- done.
local what, route, cursor, n = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

-- flying returns message id, from its fields s and k, when it exists.
local function flying(id)
	local v = redis.call('HMGET', P .. 'm:' .. id, 's', 'k')
	if v[1] then
		return state(id, v[1], v[2])
	end
end

local changed = {}
local res
if what == 'lanes' then
	if not rule(route) then
		return '0'
	end
	res = redis.call('SSCAN', P .. 'ln:' .. route, cursor, 'COUNT', n)
	for _, lane in ipairs(res[2]) do
		local rl = route .. '|' .. lane
		local lin = P .. 'lin:' .. rl
		for _, id in ipairs(redis.call('ZRANGE', lin, 0, -1)) do
			local m = flying(id)
			if not (m and inflight(m.st) and laneof(m) == rl) then
				redis.call('ZREM', lin, id)
				changed[rl] = true
			end
		end
	end
else
	res = redis.call('ZSCAN', P .. 'inflight', cursor, 'COUNT', n)
	for i = 1, #res[2], 2 do
		local id = res[2][i]
		local m = flying(id)
		local rl = m and inflight(m.st) and laneof(m)
		if rl and rule(m.route).ahead == 0 and redis.call('ZADD', P .. 'lin:' .. rl, 'NX', 0, id) == 1 then
			changed[rl] = true
		end
	end
end
for rl in pairs(changed) do
	place(lanestate(rl), lanenow())
end
return res[1]
