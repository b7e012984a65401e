-- admission.lua is Store.SetAdmission. ARGV: pairs of a gated route
-- (escaped) and its admission, as adm keeps it, then the lanes' clock
-- ('server' or 'caller', kept in lclock: see lanetime). When they are the rules
-- kept already, it changes nothing and returns 0 (SetAdmission then
-- recounts the messages in flight in steps: see recount.lua). Otherwise
-- it keeps them and returns 1, having moved the waiting messages of the
-- routes gated or ungated since, counted the lanes' messages in flight
-- afresh from the messages (which repairs a slot that leaked), indexed
-- afresh by target the active messages of the routes ordered before or
-- now (and found which of their queued messages wait for their target's
-- turn), and put every lane in its place. That costs a call in proportion
-- to the messages it moves and indexes, and to the messages in flight.
redis.call('SET', P .. 'lclock', ARGV[#ARGV])
local want, n = {}, 0
for i = 1, #ARGV - 1, 2 do
	want[ARGV[i]], n = ARGV[i + 1], n + 1
end
local have = redis.call('HGETALL', P .. 'adm')
local same = #have == 2 * n
for i = 1, #have, 2 do
	same = same and want[have[i]] == have[i + 1]
end
if same then
	return 0
end

-- PAGE is how many ids a step reads of a sorted set it walks.
local PAGE = 1000

-- routetenants returns the tenants that have messages of route.
local function routetenants(route)
	local out = {}
	for _, pr in ipairs(redis.call('SMEMBERS', P .. 'pairs')) do
		local tenant, r = string.match(pr, '^([^|]*)|(.*)$')
		if r == route then
			out[#out + 1] = tenant
		end
	end
	return out
end

-- ungate gives the messages of route's lanes back to the ungated indexes
-- (the due ones to ready; those due later are in delayed already), and
-- deletes the lanes, the tenants' buckets and the route's.
local function ungate(route)
	for _, lane in ipairs(redis.call('SMEMBERS', P .. 'ln:' .. route)) do
		local rl = route .. '|' .. lane
		local lq = P .. 'lq:' .. rl
		while true do
			local page = redis.call('ZRANGE', lq, 0, PAGE - 1, 'WITHSCORES')
			if #page == 0 then
				break
			end
			local ids, add = {}, {}
			for i = 1, #page, 2 do
				local score = tonumber(page[i + 1])
				if score >= WAITS then -- it waited for its target's turn: no more
					score = score - WAIT
				end
				ids[#ids + 1], add[#add + 1], add[#add + 2] = page[i], fmt(score), page[i]
			end
			redis.call('ZADD', P .. 'ready', unpack(add))
			redis.call('ZREM', lq, unpack(ids))
		end
		local sch = redis.call('HGET', P .. 'lst:' .. rl, 'sch')
		if sch and sch ~= '' then
			redis.call('ZREM', P .. 'lsched', sch)
		end
		redis.call('ZREM', P .. 'lpark', rl)
		redis.call('DEL', P .. 'ld:' .. rl, P .. 'lin:' .. rl, P .. 'lst:' .. rl)
	end
	redis.call('DEL', P .. 'ln:' .. route)
	for _, tenant in ipairs(routetenants(route)) do
		redis.call('DEL', P .. 'tb:' .. route .. '|' .. tenant)
	end
	redis.call('DEL', P .. 'tb:' .. route)
end

-- lanes collects the lanes to put in their place: R|L -> true.
local lanes = {}

-- eachqueued calls f(id, m, rl) for each QUEUED message of route that has
-- a lane (rl), and notes the lane to put in its place.
local function eachqueued(route, f)
	for _, tenant in ipairs(routetenants(route)) do
		local grp = P .. 'grp:' .. tenant .. '|' .. route .. '|QUEUED'
		for from = 0, redis.call('ZCARD', grp) - 1, PAGE do
			for _, id in ipairs(redis.call('ZRANGE', grp, from, from + PAGE - 1)) do
				local m = load(id)
				local rl = laneof(m)
				if rl then
					f(id, m, rl)
					lanes[rl] = true
				end
			end
		end
	end
end

-- gate moves the QUEUED messages of route into their lanes: the due ones
-- from ready to lq, those due later to ld too.
local function gate(route)
	eachqueued(route, function(id, m, rl)
		if redis.call('ZSCORE', P .. 'delayed', id) then
			redis.call('ZADD', P .. 'ld:' .. rl, m.due, id)
		else
			redis.call('ZREM', P .. 'ready', id)
			redis.call('ZADD', P .. 'lq:' .. rl, negated(m.prio), id)
		end
	end)
end

-- reorder holds the routes ordered before or now, whose active messages
-- are indexed afresh by target.
local reorder = {}
for route, v in pairs(want) do
	reorder[route] = parserule(v).ordered or nil
end

local was = {}
for i = 1, #have, 2 do
	was[have[i]] = true
	if parserule(have[i + 1]).ordered then
		reorder[have[i]] = true
	end
	if not want[have[i]] then
		ungate(have[i])
	end
end
redis.call('DEL', P .. 'adm')
if n > 0 then
	redis.call('HSET', P .. 'adm', unpack(ARGV, 1, #ARGV - 1))
end
for route in pairs(want) do
	if not was[route] then
		gate(route)
	end
end

-- cleared holds the tgt keys emptied so far.
local cleared = {}

-- retarget indexes active message m afresh by its target, when its route
-- is in reorder: its target's key is emptied when first met, and m goes
-- in when its route is ordered now.
local function retarget(m)
	if not (reorder[m.route] and m.target) then
		return
	end
	local key = P .. 'tgt:' .. m.route .. '|' .. m.target
	if not cleared[key] then
		redis.call('DEL', key)
		cleared[key] = true
	end
	if ordkey(m) then
		redis.call('ZADD', key, 0, m.id)
	end
end

-- Index the waiting messages of the routes in reorder by target; those in
-- flight come next.
for route in pairs(reorder) do
	for _, tenant in ipairs(routetenants(route)) do
		for _, st in ipairs({ 'QUEUED', 'TO_RETRY' }) do
			local grp = P .. 'grp:' .. tenant .. '|' .. route .. '|' .. st
			for from = 0, redis.call('ZCARD', grp) - 1, PAGE do
				for _, id in ipairs(redis.call('ZRANGE', grp, from, from + PAGE - 1)) do
					retarget(load(id))
				end
			end
		end
	end
end

-- Count the messages in flight afresh: empty the lanes' lin, then walk
-- inflight, which holds every message in flight.
for route in pairs(want) do
	for _, lane in ipairs(redis.call('SMEMBERS', P .. 'ln:' .. route)) do
		local rl = route .. '|' .. lane
		redis.call('DEL', P .. 'lin:' .. rl)
		lanes[rl] = true
	end
end
local inflight = P .. 'inflight'
for from = 0, redis.call('ZCARD', inflight) - 1, PAGE do
	for _, id in ipairs(redis.call('ZRANGE', inflight, from, from + PAGE - 1)) do
		local m = load(id)
		local rl = laneof(m)
		if rl then
			redis.call('ZADD', P .. 'lin:' .. rl, 0, id)
			lanes[rl] = true
		end
		retarget(m)
	end
end

-- Give the queued messages of the gated routes in reorder their place in
-- lq, now that tgt holds every active message: at the end when they wait
-- for their target's turn (see waits), by priority otherwise.
for route in pairs(reorder) do
	if want[route] then
		local ordered = rule(route).ordered
		eachqueued(route, function(id, m, rl)
			local score = negated(m.prio)
			if ordered and m.target and behind(route, m.target, id) then
				score = fmt(WAIT - num(m.prio))
			end
			redis.call('ZADD', P .. 'lq:' .. rl, 'XX', score, id)
		end)
	end
end

for rl in pairs(lanes) do
	place(lanestate(rl), lanenow())
end
return 1
