-- claim.lua is Store.Claim. ARGV: now, limit, gated limit, the default
-- accept timeout, the claiming node, the number of routes in its
-- KeptAhead and for each its name (escaped) and count, the number of
-- lanes in its KeptSent and for each its key (route|lane, escaped) and
-- count, whether to look at the held messages (1 or 0: see heldkeys
-- below), the number of routes and lanes in its Hold and for each its
-- route and lane (escaped; lane "" for the whole route), then pairs of
-- route (escaped) and accept timeout. It
-- returns the claimed messages, in claim order, each as {id, s}: its id
-- and the field s as the claim set it. The caller reads the other fields,
-- which a claim does not change, off the script (all but the timeline,
-- which Claim does not return).
local now, limit, gated, default, node = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local keptahead, keptsent = {}, {}
local at = 6
for _, kept in ipairs({ keptahead, keptsent }) do
	local n = tonumber(ARGV[at])
	for i = at + 1, at + 2 * n, 2 do
		kept[ARGV[i]] = tonumber(ARGV[i + 1])
	end
	at = at + 1 + 2 * n
end
-- holds are the routes and lanes of the claim's Hold: route|lane
-- (escaped; route| for a whole route) -> true.
local holds, unhold = {}, ARGV[at] == '1'
at = at + 1
do
	local n = tonumber(ARGV[at])
	for i = at + 1, at + 2 * n, 2 do
		holds[ARGV[i] .. '|' .. ARGV[i + 1]] = true
	end
	at = at + 1 + 2 * n
end

-- holdof returns the held key of message m when the claim holds it:
-- held:route|lane or held:route|, where the claim parks it.
local holding = next(holds) ~= nil
local function holdof(m)
	if not holding then
		return nil
	end
	for _, k in ipairs({ m.route .. '|', m.route .. '|' .. (m.lane or '') }) do
		if holds[k] then
			return P .. 'held:' .. k
		end
	end
end

-- The held messages of routes and lanes the claim no longer holds go back
-- through delayed, due at once, to their lanes or to ready; those no
-- longer QUEUED are dropped. heldkeys names the held sets. The caller
-- asks for it (unhold) when it holds something, and now and then.
if unhold then
	for _, key in ipairs(redis.call('SMEMBERS', P .. 'heldkeys')) do
		if not holds[string.sub(key, #P + 6)] then
			for _, id in ipairs(redis.call('ZRANGE', key, 0, -1)) do
				local m = load(id)
				if m and m.st == 'QUEUED' then
					redis.call('ZADD', P .. 'delayed', 0, id)
				end
			end
			redis.call('DEL', key)
			redis.call('SREM', P .. 'heldkeys', key)
		end
	end
end

-- lnow is the time of the lanes' limits (see lanetime): set before the
-- claim takes from the lanes.
local lnow
local timeouts = {}
for i = at, #ARGV, 2 do
	timeouts[ARGV[i]] = tonumber(ARGV[i + 1])
end

-- Make ready the delayed messages now due, up to PROMOTE of them: those
-- of gated routes in their lanes.
local PROMOTE = 1000
local due = redis.call('ZRANGEBYSCORE', P .. 'delayed', '-inf', now, 'LIMIT', 0, PROMOTE)
if #due > 0 then
	local ready = {}
	for _, id in ipairs(due) do
		local m = {}
		m.created, m.prio, m.tenant, m.route, m.lane, m.target = keyed(redis.call('HGET', P .. 'm:' .. id, 'k'))
		local rl = laneof(m)
		if rl then
			redis.call('ZREM', P .. 'ld:' .. rl, id)
			if m.target and rule(m.route).ordered and behind(m.route, m.target, id) then
				waits(rl, id, m.prio)
			else
				redis.call('ZADD', P .. 'lq:' .. rl, -num(m.prio), id)
			end
			touched[rl] = now
		else
			ready[#ready + 1], ready[#ready + 2] = -num(m.prio), id
		end
	end
	if #ready > 0 then
		redis.call('ZADD', P .. 'ready', unpack(ready))
	end
	redis.call('ZREM', P .. 'delayed', unpack(due))
	relane()
end

local picked = {}

-- Take up to gated messages of gated routes through their lanes, first
-- waking the parked lanes whose time came, up to WAKE of them. A lane at
-- the head of lsched gives its next message, if it admits one, and goes
-- back in its place; it parks when it admits none. A claim looks at no
-- more than SKIPS lanes that admit nothing, and at no more than LOOK
-- messages of a lane for one that may go: whose tenant has a token and,
-- on an ordered route, whose target has no older active message. One
-- that waits for its target's turn goes to the end of lq (see waits)
-- until then, out of the way of the next claims; a lane whose LOOK
-- messages all wait is looked at again by the next claim, and is held
-- (see place) once all of its messages wait. It passes over no more than
-- PASSES lanes that another node keeps, or this one keeps as far ahead as
-- the claim allows (Claim.KeptBound), which stay where they are.
local WAKE, SKIPS, LOOK, PASSES = 1000, 256, 64, 4096

-- buckets holds the buckets that the claim read, the tenants' (R|T) and
-- the routes' own (R): key -> {key, tok}, tok the tokens at now.
local buckets = {}

-- bucket returns the bucket tb:<key>, which refills n every per ms.
local function bucket(key, n, per)
	local b = buckets[key]
	if not b then
		local v = redis.call('HMGET', P .. 'tb:' .. key, 'tok', 'tat')
		b = { key = key, per = per, tok = tokens(n, per, num(v[1]), num(v[2]), lnow) }
		buckets[key] = b
	end
	return b
end

-- draw takes a token of bucket b, which is full again, as a bucket that
-- is gone reads, a period after.
local function draw(b)
	b.tok = b.tok - 1
	redis.call('HSET', P .. 'tb:' .. b.key, 'tok', fmt(b.tok), 'tat', lnow)
	redis.call('PEXPIRE', P .. 'tb:' .. b.key, b.per)
end

-- lapsed reports whether the heartbeat of node, which keeps a lane, has
-- lapsed at lnow: a node of which nodes has no heartbeat (a version
-- before heartbeats) has not, and nor has no node.
local function lapsed(node)
	if node == '' then
		return false
	end
	local til = redis.call('ZSCORE', P .. 'nodes', node)
	return til and tonumber(til) <= lnow
end

-- take takes message m of lane l for the claim, with a token of its
-- tenant's bucket b (false when the route has none) and of the route's
-- own bucket when it has one, and returns the fields of lst, as HSET
-- takes them, that record the dispatch in the lane's state: the caller
-- writes them, and moves m from lq to lin, where it holds a slot of the
-- lane. When the lane's circuit is open (its cool-down over) or probing
-- (a probe that never answered), m is the probe: the lane pauses for the
-- cool-down, until its answer.
local function take(l, m, b)
	local r = l.rule
	local h = {}
	if r.ahead > 0 and l.own ~= node then
		l.own = node
		h[#h + 1], h[#h + 2] = 'own', node
	elseif r.ahead == 0 and l.own ~= '' then
		-- The claims keep the concurrency now: the lane's flights are no
		-- one node's, and a ClaimAhead set again waits for them to end.
		l.own = ''
		h[#h + 1], h[#h + 2] = 'own', ''
	end
	if r.spacing > 0 then
		l.next = lnow + r.spacing
		h[#h + 1], h[#h + 2] = 'next', l.next
	end
	if r.rn > 0 then
		l.tok, l.tat = tokens(r.rn, r.rper, l.tok, l.tat, lnow) - 1, lnow
		h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'tok', fmt(l.tok), 'tat', lnow
	end
	if r.cfail > 0 and l.circ ~= '' then
		l.circ = 'probing'
		h[#h + 1], h[#h + 2] = 'circ', 'probing'
		for _, v in ipairs(pause(l, lnow + l.cool, 'circuit_probe')) do
			h[#h + 1] = v
		end
	end
	if b then
		draw(b)
	end
	if r.qn > 0 then
		draw(bucket(l.route, r.qn, r.qper))
	end
	return h
end

-- admit takes for the claim the first message of lane l that the lane
-- admits at now, and returns it: nil when there is none (when the route's
-- own bucket has no token, the lane parks until it has one). head is the
-- lane's first message, which it takes unless its tenant has no token or
-- it waits for its target's turn (it then looks at the lane's first LOOK
-- messages, but for those known to wait). It puts the lane in its place,
-- but for a lane of a route with a ClaimAhead whose messages in flight
-- another node claimed: that one stays where it is, and admit returns nil
-- and true, unless that node's heartbeat lapsed: the claim then takes the
-- lane over, and the lapsed node's flights no longer hold its slots (they
-- leave lin; the reaper retries them at their deadline). A lane that only its concurrency limits gives up to room
-- messages of its first one's priority at once; admit returns the
-- messages it took, in order.
local function admit(l, head, room)
	local r, rl = l.rule, l.rl
	local cap = lanecap(r)
	local flying = cap > 0 and redis.call('ZCARD', P .. 'lin:' .. rl) or 0
	if r.ahead > 0 then
		if flying > 0 and l.own ~= node then
			if not lapsed(l.own) then
				return nil, true -- another node's
			end
			redis.call('DEL', P .. 'lin:' .. rl)
			flying = 0
		end
		-- As far ahead as this node keeps it now: Claim.KeptBound.
		cap = math.min(cap, r.conc + (keptahead[l.route] or 0) + (keptsent[rl] or 0))
		if flying >= cap then
			return nil, true
		end
	end
	if wake(l, lnow) > lnow or (cap > 0 and flying >= cap) then
		place(l, lnow)
		return nil
	end
	if r.qn > 0 then
		local q = bucket(l.route, r.qn, r.qper)
		if q.tok < 1 then
			place(l, lnow, tokenat(r.qn, r.qper, q.tok, lnow))
			return nil
		end
	end
	local later -- the earliest time that a tenant without a token gets one
	local waited = 0 -- how many of the messages looked at wait for their target's turn
	-- admissible returns whether the lane may take message id (m, from
	-- load) at now, and its tenant's bucket; it drops an id that is not
	-- QUEUED and due from lq, and puts one that waits for its target's
	-- turn at the end of lq.
	local function admissible(id, m)
		if not m or m.st ~= 'QUEUED' then
			redis.call('ZREM', P .. 'lq:' .. rl, id)
		elseif num(m.due) > now then -- queued by a clock ahead of this one
			redis.call('ZREM', P .. 'lq:' .. rl, id)
			redis.call('ZADD', P .. 'delayed', m.due, id)
			redis.call('ZADD', P .. 'ld:' .. rl, m.due, id)
		elseif r.ordered and m.target and behind(m.route, m.target, id) then
			waits(rl, id, m.prio)
			waited = waited + 1
		else
			local b = r.tn > 0 and bucket(m.route .. '|' .. m.tenant, r.tn, r.tper)
			if not b or b.tok >= 1 then
				return true, b
			end
			later = math.min(later or math.huge, tokenat(r.tn, r.tper, b.tok, lnow))
		end
		return false
	end
	local m, ok, b = head, admissible(head.id, head)
	if not ok then
		local ids = redis.call('ZRANGEBYSCORE', P .. 'lq:' .. rl, '-inf', '(' .. fmt(WAITS), 'LIMIT', 0, LOOK)
		for _, id in ipairs(ids) do
			if id ~= head.id then
				m = load(id)
				ok, b = admissible(id, m)
				if ok then
					break
				end
			end
		end
	end
	if not ok then
		-- A tenant's token comes by itself; a target's turn when a message
		-- of the target ends, which gives the message its place and
		-- touches the lane (see relane). A lane whose messages looked at
		-- went to the end of lq may have others that may go: the next
		-- claim looks at it, not this one, which goes on to other lanes.
		place(l, lnow, later, waited > 0)
		return nil
	end
	local h = take(l, m, b)
	local took, moved, lin = { m }, { m.id }, { '0', m.id }
	if r.spacing == 0 and r.rn == 0 and r.tn == 0 and r.qn == 0 and not r.ordered and l.circ == '' then
		local more = room - 1
		if cap > 0 then
			more = math.min(more, cap - flying - 1)
		end
		if more > 0 then
			-- Of the priority of the first (so that a lane with messages
			-- of a lower priority next takes them after the other lanes'
			-- of a higher one), with no limit but the concurrency.
			-- m, still in lq, is among the first more + 1: passed over.
			for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. 'lq:' .. rl, '-inf', -num(m.prio), 'LIMIT', 0, more + 1)) do
				local next = id ~= m.id and #moved <= more and load(id)
				if next and admissible(id, next) then
					moved[#moved + 1], lin[#lin + 1], lin[#lin + 2] = id, '0', id
					took[#took + 1] = next
				end
			end
		end
	end
	-- The moves from lq to lin, one command per key for them all.
	redis.call('ZREM', P .. 'lq:' .. rl, unpack(moved))
	redis.call('ZADD', P .. 'lin:' .. rl, unpack(lin))
	place(l, lnow, nil, nil, h)
	return took
end

if gated > 0 then
	lnow = lanetime(now)
	for _, rl in ipairs(redis.call('ZRANGEBYSCORE', P .. 'lpark', '-inf', lnow, 'LIMIT', 0, WAKE)) do
		place(lanestate(rl), lnow)
	end
	-- The lanes another node dispatches, or this one keeps KeptAhead far
	-- already, stay first in lsched, passed over: at most PASSES of them.
	local taken, skips, passed = 0, 0, 0
	while taken < gated and #picked < limit and skips < SKIPS and passed < PASSES do
		local top = redis.call('ZRANGE', P .. 'lsched', passed, passed)[1]
		if not top then
			break
		end
		local head, l, took, theirs = load(top), nil, nil, false
		if head and laneof(head) then
			l = lanestate(laneof(head))
		end
		if l and l.sch == top and holdof(head) then
			theirs = true -- held: it stays in its place, passed over
		elseif l and l.sch == top then
			took, theirs = admit(l, head, math.min(gated - taken, limit - #picked))
		else -- no lane's head: an entry that place never leaves, dropped
			redis.call('ZREM', P .. 'lsched', top)
		end
		if took then
			for _, m in ipairs(took) do
				picked[#picked + 1], taken = m, taken + 1
			end
		elseif theirs then
			passed = passed + 1
		else
			skips = skips + 1
		end
	end
end

-- Take the ready messages in order; one not due after all (queued by a
-- clock ahead of this one) goes to delayed.
while #picked < limit do
	local popped = redis.call('ZPOPMIN', P .. 'ready', limit - #picked)
	if #popped == 0 then
		break
	end
	for i = 1, #popped, 2 do
		local id = popped[i]
		local m = load(id)
		if m then
			if m.st == 'QUEUED' then
				local held = holdof(m)
				if held then
					redis.call('ZADD', held, -num(m.prio), id)
					redis.call('SADD', P .. 'heldkeys', held)
				elseif num(m.due) > now then
					redis.call('ZADD', P .. 'delayed', m.due, id)
				else
					picked[#picked + 1] = m
				end
			end
		end
	end
end
if #picked == 0 then
	return {}
end

-- Claim them; the sorted sets change together, one command per key.
local lease = redis.call('INCRBY', P .. 'lease', #picked) - #picked
local zrems, zadds, sent, out = {}, {}, {}, {}
local function push(t, k, a, b)
	local list = t[k]
	if not list then
		list = {}
		t[k] = list
	end
	list[#list + 1] = a
	if b then
		list[#list + 1] = b
	end
end
for i, m in ipairs(picked) do
	local id, group = m.id, P .. 'grp:' .. pair(m) .. '|'
	local coal = coalkey(m)
	if coal then
		redis.call('SREM', coal, id)
	end
	-- Times go as strings, formatted as integers: Lua formats a number
	-- that a string takes with %.14g, and Redis one that a command takes
	-- with %.17g, both slower.
	m.st, m.attempt, m.updated, m.lease, m.seq = 'SENT_TO_NS', m.attempt + 1, ARGV[1], lease + i, m.seq + 1
	m.deadline = string.format('%d', now + (timeouts[m.route] or default))
	record(m, ARGV[1], 'QUEUED', 'SENT_TO_NS', '')
	local s = packed(m)
	redis.call('HSET', P .. 'm:' .. id, 's', s, 't', m.timeline)
	push(zrems, group .. 'QUEUED', id)
	sent[pair(m)] = (sent[pair(m)] or 0) + 1
	push(zadds, P .. 'inflight', m.deadline, id)
	out[i] = { id, s }
end
for k, ids in pairs(zrems) do
	redis.call('ZREM', k, unpack(ids))
end
for k, list in pairs(zadds) do
	redis.call('ZADD', k, unpack(list))
end
for pr, n in pairs(sent) do
	redis.call('HINCRBY', P .. 'cnt', pr .. '|SENT_TO_NS', n)
end
return out
