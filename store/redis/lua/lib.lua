-- lib.lua opens the store's library of Redis functions: the key layout,
-- and the helpers that keep a message's indexes in step with its fields.
-- It runs once, when the library loads; each function (a file of lua/)
-- starts with enter.
--
-- Every call's one key is the key prefix, "{name}:". Every key starts
-- with it, so every key hashes to the slot of the name in braces: the
-- store runs on Redis Cluster, within one slot.
--
-- Keys, after the prefix (T, R and L: a tenant, a route and a lane,
-- escaped):
--   m:<id>        hash: the message, fields below
--   ready         zset: QUEUED and due, of ungated routes; score -priority,
--                 so equal scores go by id
--   delayed       zset: QUEUED, due later; score due_at
--   retry         zset: TO_RETRY; score due_at
--   inflight      zset: in flight; score deadline (+inf when none)
--   poll          zset: DELIVERED_TO_NS with a poll due; score due_at
--   expiry        zset: active messages with an ExpiresAt; score expires_at
--   done          zset: terminal messages; score updated_at
--   failed        zset: DELIVERY_FAILED; score 0, so by id
--   ten:<T>       zset: the ids of a tenant; score 0, so by id
--   corr:<c>      zset: the ids of a correlation id; score 0
--   grp:<T|R|S>   zset: the ids of a tenant, route and waiting status
--                 (QUEUED, TO_RETRY); score created_at
--   cnt           hash: T|R|S -> how many messages of a tenant and route are
--                 in status S, for the other statuses
--   pairs         set: the T|R of every grp: key
--   idem          hash: T|R|idempotency key -> id
--   coal:<T|R|K>  set: the waiting ids of a coalesce key
--   last:<T|R|G>  hash: Create's dedup for target G of a route with dedup
--                 (its messages have a dedup key): h, s and at, the dedup
--                 key, id and time of the last message sent to it (moved
--                 from SENT_TO_NS to DELIVERED_TO_NS or DELIVERY_SUCCESSFUL),
--                 and n, the id of the last created for it
--   lasts         zset: the T|R|G of every last: key; score its last
--                 change, for Prune
--   ext           hash: R|external id -> id of an active message
--   lease         counter of the claims' leases
--   pq:<R|G>      zset: the QUEUED pull messages (kind p, below) of route
--                 R and target G, due or not (Pull skips those not due);
--                 score -priority, as ready; no pull message is in ready,
--                 delayed or a lane
--   sd:<R|G>      zset: the active deliveries (kind p or d) of route R, a
--                 room's, to subscription G; score 0, so by id
--   ev:<id>       hash: an outbox event: sub, msg (empty for an uplink),
--                 type, at, attempt, err, dead, and data (an uplink's body)
--   evdue         zset: live events; score due time
--   evdead        zset: dead events; score event time
--
-- Rooms (T a tenant and N a room's name, escaped; durations in ms):
--   room:<T|N>    hash: a room: exp, delay, mult, att, rev (its revision)
--                 and at (created)
--   rooms:<T>     zset: the names of a tenant's rooms; score 0
--   sub:<id>      hash: a subscription: t, r (its tenant and room), type,
--                 url, senv, sec (the signing secret), types (JSON), delay, mult and att (empty:
--                 the room's) and at
--   subs:<T|N>    zset: the ids of a room's subscriptions; score 0
--   evt:<id>      hash: a room event: t, r, type, ver, corr, data, dl (its
--                 deliveries, JSON) and at
--   evts          zset: the room events; score at, for Prune
--
-- The admin page's sessions (herald.SessionStore; id a hash of the
-- cookie's, T escaped):
--   sess:<id>     hash: t (T), role, csrf, at (created), used and exp (its
--                 end), in ms; its TTL ends it at exp, as the store saw it
--   sessions:<T>  zset: the ids of a tenant's sessions; score used; its TTL
--                 the longest life of a session it holds
--
-- Inbox: the events push carriers sent back, until the engine applies them.
--   in:<id>       hash: an inbox event, fields INFIELDS (ack and perm 1 or
--                 0, at in ms) and ci, its correlation's R|C (escaped R,
--                 empty when it has no correlation)
--   indue         zset: the inbox events; score due time (a claim's lease
--                 end while claimed)
--   incorr:<R|C>  set: the inbox events of route R and correlation C
--   indone        zset: the ids of the settled inbox events; score their
--                 at, for Prune: a late copy of one is not stored again
--
-- Lanes: a gated route's messages wait in their lane, R|L, not in ready.
--   lclock        string: 'server' when the lanes' times are the server's
--                 (TIME), the same for every node; else ('caller', or
--                 none) each call's own (see lanetime)
--   adm           hash: R -> the admission of a gated route,
--                 spacing|concurrency|rate n|rate per|tenant n|tenant per,
--                 then, when the route is ordered or has a circuit, a
--                 route bucket or a ClaimAhead, |ordered (1 or 0)|circuit
--                 failures|circuit cool-down, then, when it has a route
--                 bucket or a ClaimAhead, |route n|route per, then, with a
--                 ClaimAhead, |ClaimAhead (durations in ms, 0 for none;
--                 the versions before knew the first six, then nine, then
--                 eleven only, and so keep the concurrency in claims)
--   lq:<R|L>      zset: the lane's QUEUED and due; score -priority, as ready,
--                 but WAIT - priority for a message of an ordered route
--                 known to wait for its target's turn (an older active
--                 message of its target in tgt): after the others
--   ld:<R|L>      zset: the lane's QUEUED due later (in delayed too); score
--                 due_at
--   lin:<R|L>     zset: the lane's messages in flight, each holding a slot
--                 of its concurrency; score 0, so by id
--   lst:<R|L>     hash: the lane's state: next (no dispatch before, by its
--                 spacing), tok and tat (its bucket's tokens as of tat; no
--                 tat while never drawn: full), pause and why (paused until,
--                 for), sch or park (its place, below), and its circuit:
--                 fails (transient failures in a row), circ ('' closed,
--                 open or probing) and cool (the cool-down, ms); own,
--                 with a ClaimAhead, the node whose claim took the
--                 messages in lin (emptied by a claim without one);
--                 gone, or with a TTL, while the lane holds no message
--                 (see forget)
--   tb:<R|T>      hash: a tenant's bucket on a route: tok and tat, as lst's;
--                 it expires a period after its last draw (full again)
--   tb:<R>        hash: a route's own bucket (route_rate), across its lanes
--                 and tenants: tok and tat (R escaped holds no |, so no
--                 tenant's bucket has its key)
--   ln:<R>        set: the lanes (L) of a gated route that hold messages
--   nodes         zset: the nodes' heartbeats (Store.Heartbeat); score the
--                 end of each, in the lanes' time: a lane whose own's has
--                 lapsed is taken over by the next claim of another node
--   lsched        zset: the head (first message of lq) of each lane that
--                 may admit now; score -priority, so by priority, then id
--   lpark         zset: the lanes (R|L) that admit nothing before a time;
--                 score that time
--   tgt:<R|G>     zset: the active messages of an ordered route's target G
--                 (escaped); score 0, so by id: the first holds the others
--                 back
-- A lane with a head is in lsched or lpark, or else full (as many in
-- flight as its concurrency) or held (its head waits for its target's
-- turn, and so every message of lq does), until what frees a slot, or
-- ends a message of one of those targets, puts it back. A message waits
-- at the end of lq (score WAIT - priority) from when its create, or a
-- claim that looks at it, finds that it waits, until the end of the
-- message it waits for gives it its place again (relane).
--
-- Message fields: s = status|attempt|lease|seq|updated|due|deadline|expires
-- (what transitions change; seq counts them), k = created|priority|T|R|L|G|
-- D (what they read; G the target, D the dedup key, escaped), and for a
-- room's delivery |K after them, its kind: p when it is pulled (Pull set),
-- d when it is pushed; t (the
-- timeline after the creation entry, which is derived: the latest TIMELINE
-- entries, each at|from|to|attempt|n|reason with n the length of reason),
-- x (external id), e (last error), coal, corr and idem (keys), b (the
-- rest, encoded by codec.go). Escaping turns | into %7C and % into %25.
-- Times are unix milliseconds, 0 for none.

-- ARGV is a call's arguments, the name they have in scripts run by EVAL,
-- and P its key prefix: enter sets both.
local ARGV, P

-- zadds, newpairs and pairkeys hold what the creates of a call leave to
-- write (see create): enter empties them.
local zadds, newpairs, pairkeys

-- rules holds the admission of the routes a call has looked up (route ->
-- rule, or false when not gated), touched the lanes whose messages it
-- moved (R|L -> the time it moved them), and ended the targets of ordered
-- routes whose messages it ended (tgt key -> the time it ended them):
-- enter empties them.
local rules, touched, ended

-- servertime is the server's time (TIME) in ms, read at most once a call,
-- or false when the store keeps lane times in its callers' times; nil
-- until looked up: enter empties it.
local servertime

-- TIMELINE is how many entries field t keeps, the latest.
local TIMELINE = 99

local function num(v)
	return tonumber(v) or 0
end

-- lanetime returns the time in which the lanes' limits are kept (next
-- dispatch, buckets, pauses, parks) for a change made at at, in the
-- caller's time: the server's own, one clock for every node, when
-- lclock (set by SetAdmission) says 'server', else at itself.
local function lanetime(at)
	if servertime == nil then
		servertime = false
		if redis.call('GET', P .. 'lclock') == 'server' then
			local t = redis.call('TIME')
			servertime = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
		end
	end
	if servertime and at then
		return servertime
	end
	return at
end

-- lanenow returns the lanes' time now when it is known without a caller's
-- time: the server's, when lclock says 'server'; nil otherwise.
local function lanenow()
	local t = lanetime(0)
	if t ~= 0 then
		return t
	end
end

local function active(st)
	return st == 'QUEUED' or st == 'TO_RETRY' or st == 'SENT_TO_NS' or st == 'DELIVERED_TO_NS' or st == 'SENT_TO_DEVICE'
end

local function inflight(st)
	return st == 'SENT_TO_NS' or st == 'DELIVERED_TO_NS' or st == 'SENT_TO_DEVICE'
end

local function waiting(st)
	return st == 'QUEUED' or st == 'TO_RETRY'
end

-- keyed returns the parts of field k: created, priority, tenant, route,
-- lane, target, dedup key and kind (nil but for a room's delivery). A
-- message stored before lanes has no lane in k (nil): it is never gated;
-- one stored before targets has neither target nor dedup key (nil): it is
-- never held back by order, nor found by dedup. Clean cuts for the stores
-- of older versions.
local function keyed(k)
	local created, prio, tenant, route, lane, target, dedup =
		string.match(k, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
	if not created then
		local kind
		created, prio, tenant, route, lane, target, dedup, kind =
			string.match(k, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([pd])$')
		if created then
			return created, prio, tenant, route, lane, target, dedup, kind
		end
	end
	if not created then
		created, prio, tenant, route, lane = string.match(k, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
	end
	if not created then
		created, prio, tenant, route = string.match(k, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
	end
	return created, prio, tenant, route, lane, target, dedup
end

-- state returns message id, of fields s and k and of x, coal, t, corr and
-- idem (false or nil when absent), as a table.
local function state(id, s, k, x, coal, t, corr, idem)
	local st, attempt, lease, seq, updated, due, deadline, expires =
		string.match(s, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
	local created, prio, tenant, route, lane, target, dedup, kind = keyed(k)
	return {
		id = id, st = st, attempt = attempt, lease = lease, seq = seq, updated = updated, due = due,
		deadline = deadline, expires = expires, created = created, prio = prio, tenant = tenant, route = route,
		lane = lane, target = target, dedup = dedup or '', kind = kind or '', ext = x or '', coal = coal or '',
		timeline = t or '', corr = corr or '', idem = idem or '',
	}
end

-- parserule returns the admission v, as adm keeps it, as a table
-- (durations in ms).
local function parserule(v)
	local spacing, conc, rn, rper, tn, tper, rest = string.match(v, '^(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)(.*)$')
	local ordered, cfail, ccool, more = string.match(rest, '^|([01])|(%d+)|(%d+)(.*)$')
	local qn, qper, ahead = string.match(more or '', '^|(%d+)|(%d+)|?(%d*)$')
	return {
		spacing = tonumber(spacing), conc = tonumber(conc), rn = tonumber(rn), rper = tonumber(rper),
		tn = tonumber(tn), tper = tonumber(tper), ordered = ordered == '1', cfail = num(cfail), ccool = num(ccool),
		qn = num(qn), qper = num(qper), ahead = num(ahead),
	}
end

-- lanecap returns how many messages of a lane of rule r (from parserule)
-- may be in flight, 0 for no bound: its ClaimAhead when it has one (its
-- concurrency is then kept by the node that claims them), else its
-- concurrency.
local function lanecap(r)
	if r.ahead > 0 then
		return r.ahead
	end
	return r.conc
end

-- rule returns the admission of route, from adm, as a table (see
-- parserule), or false when the route is not gated.
local function rule(route)
	local r = rules[route]
	if r == nil then
		r = false
		local v = redis.call('HGET', P .. 'adm', route)
		if v then
			r = parserule(v)
		end
		rules[route] = r
	end
	return r
end

-- laneof returns the lane of m, R|L, when its route is gated, nil
-- otherwise.
local function laneof(m)
	if m.lane and rule(m.route) then
		return m.route .. '|' .. m.lane
	end
end

-- touch notes that message m, moved at time at, changed its lane's
-- messages, when it has one: relane puts the lane in its place.
local function touch(m, at)
	local rl = laneof(m)
	if rl then
		touched[rl] = num(at)
	end
end

-- ordkey returns the key of m's target, tgt:, when m is active and its
-- route ordered, nil otherwise (and for a message stored without its
-- target).
local function ordkey(m)
	if m.target and active(m.st) then
		local r = rule(m.route)
		if r and r.ordered then
			return P .. 'tgt:' .. m.route .. '|' .. m.target
		end
	end
end

-- packed returns the field s of m.
local function packed(m)
	return m.st .. '|' .. m.attempt .. '|' .. m.lease .. '|' .. m.seq .. '|' .. m.updated .. '|' .. m.due .. '|' ..
		m.deadline .. '|' .. m.expires
end

local function pair(m)
	return m.tenant .. '|' .. m.route
end

local function coalkey(m)
	if m.coal ~= '' and (m.st == 'QUEUED' or m.st == 'TO_RETRY') then
		return P .. 'coal:' .. pair(m) .. '|' .. m.coal
	end
end

local function extfield(m)
	if m.ext ~= '' and active(m.st) then
		return m.route .. '|' .. m.ext
	end
end

-- load returns message id as a table, with its keys too when keys is
-- true, or nil when there is no such message.
local function load(id, keys)
	local v
	if keys then
		v = redis.call('HMGET', P .. 'm:' .. id, 's', 'k', 'x', 'coal', 't', 'corr', 'idem')
	else
		v = redis.call('HMGET', P .. 'm:' .. id, 's', 'k', 'x', 'coal', 't')
	end
	if not v[1] then
		return nil
	end
	return state(id, v[1], v[2], v[3], v[4], v[5], v[6], v[7])
end

-- negated returns the negation of integer string v, as a string.
local function negated(v)
	if v == '0' or v == '' then
		return '0'
	elseif string.sub(v, 1, 1) == '-' then
		return string.sub(v, 2)
	end
	return '-' .. v
end

-- zsets returns the sorted sets that hold m, key -> score: its status's,
-- and its group's when it waits. A QUEUED message is in ready (in its
-- lane's lq, when its route is gated) when due at now, in delayed (and its
-- lane's ld) otherwise; with now nil (its place unknown) each is listed,
-- score false; a QUEUED pull message is in its pq, due or not. A message
-- in flight holds a slot of its lane: lin. An active message of an
-- ordered route is in its target's tgt; an active delivery of a room in
-- its subscription's sd.
-- Scores are m's fields as they are, strings mostly: Redis parses them
-- either way, and a number would be formatted first.
local function zsets(m, now)
	local st = m.st
	local z = {}
	if waiting(st) then
		z[P .. 'grp:' .. m.tenant .. '|' .. m.route .. '|' .. st] = m.created
	end
	if st == 'QUEUED' and m.kind == 'p' then
		z[P .. 'pq:' .. m.route .. '|' .. m.target] = negated(m.prio)
	elseif st == 'QUEUED' then
		local rl = laneof(m)
		if now == nil then
			z[P .. 'delayed'] = false
			if rl then
				z[P .. 'lq:' .. rl], z[P .. 'ld:' .. rl] = false, false
			else
				z[P .. 'ready'] = false
			end
		elseif num(m.due) > now then
			z[P .. 'delayed'] = m.due
			if rl then
				z[P .. 'ld:' .. rl] = m.due
			end
		elseif rl then
			z[P .. 'lq:' .. rl] = negated(m.prio)
		else
			z[P .. 'ready'] = negated(m.prio)
		end
	elseif st == 'TO_RETRY' then
		z[P .. 'retry'] = m.due
	elseif inflight(st) then
		z[P .. 'inflight'] = num(m.deadline) > 0 and m.deadline or '+inf'
		local rl = laneof(m)
		if rl then
			z[P .. 'lin:' .. rl] = '0'
		end
		if st == 'DELIVERED_TO_NS' and num(m.due) > 0 then
			z[P .. 'poll'] = m.due
		end
	else
		z[P .. 'done'] = m.updated
		if st == 'DELIVERY_FAILED' then
			z[P .. 'failed'] = '0'
		end
	end
	if num(m.expires) > 0 and active(st) then
		z[P .. 'expiry'] = m.expires
	end
	if m.kind ~= '' and active(st) then
		z[P .. 'sd:' .. m.route .. '|' .. m.target] = '0'
	end
	local tgt = ordkey(m)
	if tgt then
		z[tgt] = '0'
	end
	return z
end

-- counted returns the field of cnt that counts m, nil when m waits (its
-- group's sorted set counts it).
local function counted(m)
	if not waiting(m.st) then
		return m.tenant .. '|' .. m.route .. '|' .. m.st
	end
end

-- zpend, when set (deferz), collects the sorted-set changes of reindex
-- instead of making them: key -> id -> new score, or false to remove it
-- (the last change of an id in a key wins). flushz makes them, one ZREM
-- and one ZADD per key, at the end of a script that reads none of them.
local zpend
-- cpend, alongside, collects the changes of cnt: field -> sum of changes.
local cpend

local function deferz()
	zpend, cpend = {}, {}
end

-- count adds d to field f of cnt.
local function count(f, d)
	if cpend then
		cpend[f] = (cpend[f] or 0) + d
	else
		redis.call('HINCRBY', P .. 'cnt', f, d)
	end
end

local function zset(k, id, score)
	if not zpend then
		if score then
			redis.call('ZADD', k, score, id)
		else
			redis.call('ZREM', k, id)
		end
		return
	end
	local t = zpend[k]
	if not t then
		t = {}
		zpend[k] = t
	end
	t[id] = score
end

local function flushz()
	for k, t in pairs(zpend) do
		local rem, add = {}, {}
		for id, score in pairs(t) do
			if score then
				add[#add + 1], add[#add + 2] = score, id
			else
				rem[#rem + 1] = id
			end
		end
		if #rem > 0 then
			redis.call('ZREM', k, unpack(rem))
		end
		if #add > 0 then
			redis.call('ZADD', k, unpack(add))
		end
	end
	zpend = nil
	for f, d in pairs(cpend) do
		if d ~= 0 then
			redis.call('HINCRBY', P .. 'cnt', f, d)
		end
	end
	cpend = nil
end

-- reindex moves message id between the indexes that depend on its state:
-- from sorted sets bz, coalesce set bc, external id field bx and count
-- field bk to those of m (none when m is nil: it is deleted). now tells
-- where a QUEUED m goes.
local function reindex(id, bz, bc, bx, bk, m, now)
	local az, ac, ax, ak = {}, nil, nil, nil
	if m then
		az, ac, ax, ak = zsets(m, now), coalkey(m), extfield(m), counted(m)
	end
	if bk ~= ak then
		if bk then
			count(bk, -1)
		end
		if ak then
			count(ak, 1)
		end
	end
	for k in pairs(bz) do
		if az[k] == nil then
			zset(k, id, false)
		end
	end
	for k, score in pairs(az) do
		if bz[k] ~= score then
			zset(k, id, score)
		end
	end
	if bc ~= ac then
		if bc then
			redis.call('SREM', bc, id)
		end
		if ac then
			redis.call('SADD', ac, id)
		end
	end
	if bx ~= ax then
		if bx and redis.call('HGET', P .. 'ext', bx) == id then
			redis.call('HDEL', P .. 'ext', bx)
		end
		if ax then
			redis.call('HSET', P .. 'ext', ax, id)
		end
	end
end

-- record appends an entry to m.timeline, which holds m.seq - 1 entries,
-- and drops the first when there are too many.
local function record(m, at, from, to, reason)
	local t = m.timeline
	if tonumber(m.seq) > TIMELINE then
		local _, e, n = string.find(t, '^[^|]*|[^|]*|[^|]*|[^|]*|(%d+)|')
		t = string.sub(t, e + n + 1)
	end
	m.timeline = t .. at .. '|' .. from .. '|' .. to .. '|' .. m.attempt .. '|' .. #reason .. '|' .. reason
end

-- move applies a transition to message m (from load): to, at, reason, due
-- and deadline (0 clears them), expires, ext and err (kept when 0 or
-- empty), attempts ('reset' to 0, 'undo' to take one off, anything else
-- to keep) and subs, the subscribers to notify. When to is m's status, it
-- only updates the fields. Its lane, if any, is touched; so is, when m
-- ends, the lane of its target's next message (see relane).
local function move(m, to, at, reason, due, deadline, expires, ext, err, attempts, subs)
	local id, from = m.id, m.st
	local bz, bc, bx, bk = zsets(m), coalkey(m), extfield(m), counted(m)
	local tgt = not active(to) and ordkey(m)
	if tgt then
		ended[tgt] = num(at)
	end
	m.due, m.deadline = due, deadline
	if num(expires) ~= 0 then
		m.expires = expires
	end
	if attempts == 'reset' then
		m.attempt = 0
	elseif attempts == 'undo' then
		m.attempt = math.max(0, m.attempt - 1)
	end
	local moved = to ~= from or reason ~= '' -- a reason records an entry even when the status stays
	if moved then
		m.st, m.updated, m.seq = to, at, m.seq + 1
		if not inflight(to) then
			m.lease = 0
		end
		record(m, at, from, to, reason)
	end
	local key = P .. 'm:' .. id
	if ext == '' and err == '' then
		redis.call('HSET', key, 's', packed(m), 't', m.timeline)
	else
		local h = { 's', packed(m), 't', m.timeline }
		if ext ~= '' then
			m.ext = ext
			h[5], h[6] = 'x', ext
		end
		if err ~= '' then
			h[#h + 1], h[#h + 2] = 'e', err
		end
		redis.call('HSET', key, unpack(h))
	end
	reindex(id, bz, bc, bx, bk, m, num(at))
	touch(m, at)
	if moved then
		for _, sub in ipairs(subs) do
			local eid = id .. '.' .. m.seq .. '.' .. sub
			redis.call('HSET', P .. 'ev:' .. eid, 'sub', sub, 'msg', id, 'type', to, 'at', at, 'attempt', 0)
			redis.call('ZADD', P .. 'evdue', at, eid)
		end
	end
end

-- delete removes message m (from load with keys) and its index entries.
-- (The versions that deduplicated against any message delivered lately
-- kept a delivered one with a dedup key in dd:<T|R|K> too.)
local function delete(m)
	local id = m.id
	reindex(id, zsets(m), coalkey(m), extfield(m), counted(m), nil)
	if m.dedup ~= '' and m.st == 'DELIVERY_SUCCESSFUL' then
		redis.call('ZREM', P .. 'dd:' .. pair(m) .. '|' .. m.dedup, id)
	end
	redis.call('DEL', P .. 'm:' .. id)
	redis.call('ZREM', P .. 'ten:' .. m.tenant, id)
	if m.corr ~= '' then
		redis.call('ZREM', P .. 'corr:' .. m.corr, id)
	end
	if m.idem ~= '' then
		local f = pair(m) .. '|' .. m.idem
		if redis.call('HGET', P .. 'idem', f) == id then
			redis.call('HDEL', P .. 'idem', f)
		end
	end
end

-- Lanes. A gated route's message is claimed through its lane: a claim
-- takes the lanes of lsched in order, each for a message it admits, and
-- parks those that admit nothing. A lane leaves lsched when it may admit
-- nothing for a while (lpark) or at all until something else happens
-- (empty, its messages due later, full); what happens touches it, and
-- relane puts it back. Lane state keeps its times in the lanes' time (see lanetime).

-- fmt formats number v with every digit that a double holds.
local function fmt(v)
	return string.format('%.17g', v)
end

-- WAIT is what lq adds to the score of a message that waits for its
-- target's turn, and WAITS the least score of such a message: the
-- priorities (within +-1000) stay far from both.
local WAIT, WAITS = 2 ^ 40, 2 ^ 39

-- behind reports whether message id of route, for target, waits for an
-- older active message of its target (the route being ordered).
local function behind(route, target, id)
	return redis.call('ZRANGEBYLEX', P .. 'tgt:' .. route .. '|' .. target, '-', '(' .. id, 'LIMIT', 0, 1)[1] ~= nil
end

-- waits puts message id, of priority prio, at the end of lane rl's lq
-- (which holds it): it waits for its target's turn.
local function waits(rl, id, prio)
	redis.call('ZADD', P .. 'lq:' .. rl, fmt(WAIT - num(prio)), id)
end

-- lanestate returns the state of lane rl (R|L), from lst, with its route
-- and the route's rule.
local function lanestate(rl)
	local route = string.match(rl, '^[^|]*')
	local v = redis.call('HMGET', P .. 'lst:' .. rl, 'next', 'tok', 'tat', 'pause', 'sch', 'park', 'circ', 'cool', 'own', 'fails')
	return {
		rl = rl, route = route, rule = rule(route), next = num(v[1]), tok = num(v[2]), tat = num(v[3]),
		pause = num(v[4]), sch = v[5] ~= '' and v[5], park = num(v[6]), circ = v[7] or '', cool = num(v[8]),
		own = v[9] or '', fails = num(v[10]),
	}
end

-- pause returns the fields of lst that pause lane l (from lanestate, or
-- with the current pause only) until til for why, as HSET takes them,
-- and sets l.pause: none when it is paused as long already. A pause never
-- shortens another; the longer keeps its reason, and the later one's goes
-- only with a pause at least as long.
local function pause(l, til, why)
	til = num(til)
	if til < l.pause then
		return {}
	end
	l.pause = til
	return { 'pause', til, 'why', why }
end

-- tokens returns the tokens at now of a bucket that refills n every per
-- ms, up to n, and held tok at tat (0: never drawn, so full): Rate.Refill.
local function tokens(n, per, tok, tat, now)
	if tat == 0 then
		return n
	end
	if now > tat then
		tok = tok + (now - tat) * n / per
	end
	return math.min(tok, n)
end

-- tokenat returns when a bucket that refills n every per ms, holding tok
-- at now, holds a whole token: Rate.NextToken.
local function tokenat(n, per, tok, now)
	if tok >= 1 then
		return now
	end
	return now + math.ceil((1 - tok) * per / n)
end

-- wake returns when lane l, at now, may admit a message next, by its
-- pause, its spacing and its bucket: its next dispatch counts only while
-- its route has a spacing (SetAdmission may have taken it away).
local function wake(l, now)
	local r = l.rule
	local w = l.pause
	if r.spacing > 0 then
		w = math.max(w, l.next)
	end
	if r.rn > 0 then
		w = math.max(w, tokenat(r.rn, r.rper, tokens(r.rn, r.rper, l.tok, l.tat, now), now))
	end
	return w
end

-- CIRCUITIDLE is how long, in ms, a lane with no message keeps its
-- circuit's state after its other times have passed: a day.
local CIRCUITIDLE = 86400000

-- forget makes the state of lane l (from lanestate), which holds no
-- message, go once nothing of it holds at now any longer: its spacing,
-- pause and bucket (with now unknown, nil, only a state that holds nothing
-- at all); a lane state that is gone reads as a fresh one, which is what
-- it would have become. A circuit that is open or counts failures stays
-- CIRCUITIDLE longer, so that a lane whose messages come far apart, and
-- between them hold none, keeps counting its failures. (place keeps the
-- state again once the lane holds a message.)
local function forget(l, now)
	local r = l.rule
	local til = math.max(l.next, l.pause, l.park)
	if l.circ ~= '' or l.fails > 0 then
		if not now then
			return
		end
		til = math.max(til, now) + CIRCUITIDLE
	end
	if r and r.rn > 0 and l.tat > 0 then
		til = math.max(til, l.tat + r.rper)
	end
	if til == 0 or (now and til <= now) then
		redis.call('DEL', P .. 'lst:' .. l.rl)
	elseif now then -- relative: now and til are the lanes' time, which may not be the server's clock
		redis.call('PEXPIRE', P .. 'lst:' .. l.rl, til - now)
	end
end

-- place puts lane l (from lanestate, of a gated route) in its place at
-- now: in lsched under its head when it may admit a message, in lpark
-- until it may (and not before later, when given), in neither when it has
-- no head, is full or is held (its head waits for its target's turn).
-- With now nil (unknown), a lane with a head and a free slot goes in
-- lsched, for a claim to look at. With defer, a lane that may admit now
-- goes in lpark at now instead: the claims after this one look at it. It
-- keeps ln too, and writes the fields also (of lst, as HSET takes them)
-- with its own, when given.
local function place(l, now, later, defer, also)
	local rl, r = l.rl, l.rule
	local head = redis.call('ZRANGE', P .. 'lq:' .. rl, 0, 0, 'WITHSCORES')
	local flying = redis.call('ZCARD', P .. 'lin:' .. rl)
	local sch, park = false, 0
	if head[1] and tonumber(head[2]) < WAITS and (lanecap(r) == 0 or flying < lanecap(r)) then
		if now then
			park = math.max(wake(l, now), later or 0, defer and now or 0)
		end
		if now == nil or (park <= now and not defer) then
			sch, park = head[1], 0
		end
	end
	-- ln holds the lanes with messages: one placed before, that still has a
	-- head, is in it. A lane with none forgets its state, once its place
	-- is written.
	local empty = false
	if not (head[1] and (l.sch or l.park > 0)) then
		local lane = string.match(rl, '|(.*)$')
		if head[1] or flying > 0 or redis.call('ZCARD', P .. 'ld:' .. rl) > 0 then
			-- Only a lane that is not in ln has a TTL (see forget).
			if redis.call('SADD', P .. 'ln:' .. l.route, lane) == 1 then
				redis.call('PERSIST', P .. 'lst:' .. rl)
			end
		else
			redis.call('SREM', P .. 'ln:' .. l.route, lane)
			empty = true
		end
	end
	if sch == l.sch and park == l.park then
		if also and #also > 0 then
			redis.call('HSET', P .. 'lst:' .. rl, unpack(also))
		end
		if empty then
			forget(l, now)
		end
		return
	end
	if sch ~= l.sch then
		if l.sch then
			redis.call('ZREM', P .. 'lsched', l.sch)
		end
		if sch then
			redis.call('ZADD', P .. 'lsched', head[2], sch)
		end
	end
	if park ~= l.park then
		if park > 0 then
			redis.call('ZADD', P .. 'lpark', park, rl)
		else
			redis.call('ZREM', P .. 'lpark', rl)
		end
	end
	local h = { 'sch', sch or '', 'park', park }
	for _, v in ipairs(also or {}) do
		h[#h + 1] = v
	end
	redis.call('HSET', P .. 'lst:' .. rl, unpack(h))
	l.sch, l.park = sch, park
	if empty then
		forget(l, now)
	end
end

-- relane puts each lane that the call touched in its place, at the time
-- it was touched, and first, for each target of an ordered route whose
-- message the call ended, gives the target's next message its place in
-- its lane's lq (when it is there, waiting for its turn) and touches its
-- lane: a lane held by it may admit again, even a lane that the call did
-- not change.
local function relane()
	for tgt, at in pairs(ended) do
		local next = redis.call('ZRANGE', tgt, 0, 0)[1]
		local m = next and load(next)
		local rl = m and m.st == 'QUEUED' and laneof(m)
		if rl then
			redis.call('ZADD', P .. 'lq:' .. rl, 'XX', negated(m.prio), next)
			touch(m, at)
		end
	end
	ended = {}
	for rl, at in pairs(touched) do
		place(lanestate(rl), lanetime(at))
	end
	touched = {}
end

-- Creates (create.lua, publish.lua). The new messages' sorted-set entries
-- go in together, one command per key (zadds is key -> {score, id, ...}),
-- and so do their pairs: created writes them once the call's creates are
-- done.
local function flush()
	for k, list in pairs(zadds) do
		redis.call('ZADD', k, unpack(list))
	end
	zadds = {}
end
local function zadd(k, score, id)
	local list = zadds[k]
	if not list then
		list = {}
		zadds[k] = list
	end
	list[#list + 1], list[#list + 2] = score, id
end

-- create is one create of the call's ARGV, from ARGV[o], n arguments (see
-- create.lua). It returns its reply.
local function create(o, n)
	local id, tenant, route, created = ARGV[o], ARGV[o + 1], ARGV[o + 2], ARGV[o + 3]
	local nsubs = 0
	if ARGV[o + 7] ~= '0' then
		nsubs = tonumber(ARGV[o + 7])
	end
	local f = o + 8 + nsubs -- field s
	local last = o + n - 1 -- the last argument of the hash's fields
	local idem, coal, corr, since, sd
	for i = f + 3, last, 2 do
		local name = ARGV[i]
		if name == 'idem' then
			idem = ARGV[i + 1]
		elseif name == 'coal' then
			coal = ARGV[i + 1]
		elseif name == 'corr' then
			corr = ARGV[i + 1]
		elseif name == 'since' or name == 'sd' then -- after the fields
			if name == 'since' then
				since = ARGV[i + 1]
			else
				sd = ARGV[i + 1]
			end
			last = math.min(last, i - 1)
		end
	end
	local pr = tenant .. '|' .. route
	if idem then
		local prev = redis.call('HGET', P .. 'idem', pr .. '|' .. idem)
		if prev then
			return redis.call('HGETALL', P .. 'm:' .. prev)
		end
	end
	local target, dd = select(6, keyed(ARGV[f + 1]))
	local sentkey = dd and dd ~= '' and P .. 'last:' .. pr .. '|' .. target
	if since and sentkey then
		-- The last message sent to the target, with this dedup key, within
		-- the window, the last created for it, not failed: the same
		-- command the device shows.
		local h, sentid, at, newest = unpack(redis.call('HMGET', sentkey, 'h', 's', 'at', 'n'))
		if h == dd and sentid == newest and num(at) >= num(since) then
			local prev = load(sentid)
			if prev and prev.st ~= 'DELIVERY_FAILED' and prev.st ~= 'CANCELLED' then
				return redis.call('HGETALL', P .. 'm:' .. sentid)
			end
		end
	end
	local key = P .. 'm:' .. id
	if redis.call('EXISTS', key) == 1 then
		return 0
	end
	local cancelled = 0
	if coal then
		flush() -- the messages it cancels may be in this batch
		local subs = { unpack(ARGV, o + 8, f - 1) }
		local ck = P .. 'coal:' .. pr .. '|' .. coal
		for _, old in ipairs(redis.call('SMEMBERS', ck)) do
			move(load(old), 'CANCELLED', created, 'coalesced', 0, 0, 0, '', '', '0', subs)
			cancelled = cancelled + 1
		end
		redis.call('SADD', ck, id)
	end
	redis.call('HSET', key, 's', ARGV[f], 'k', ARGV[f + 1], 'b', ARGV[f + 2], unpack(ARGV, f + 3, last))
	local keys = pairkeys[pr]
	if not keys then
		keys = { grp = P .. 'grp:' .. pr .. '|QUEUED', ten = P .. 'ten:' .. tenant }
		pairkeys[pr] = keys
		newpairs[#newpairs + 1] = pr
	end
	zadd(keys.grp, created, id)
	zadd(keys.ten, '0', id)
	local where, score = ARGV[o + 4], ARGV[o + 5]
	local r = rule(route)
	if not r then
		zadd(P .. where, score, id)
	else
		local _, _, _, _, lane, target = keyed(ARGV[f + 1])
		local rl = route .. '|' .. lane
		if r.ordered then
			-- A message that waits for its target's turn goes to the end of
			-- lq (see waits). tgt takes each message at once, for the
			-- messages of its target after it in the batch.
			if where == 'ready' and behind(route, target, id) then
				score = fmt(WAIT + tonumber(score))
			end
			redis.call('ZADD', P .. 'tgt:' .. route .. '|' .. target, '0', id)
		end
		if where == 'ready' then
			zadd(P .. 'lq:' .. rl, score, id)
		else
			zadd(P .. 'delayed', score, id)
			zadd(P .. 'ld:' .. rl, score, id)
		end
		touched[rl] = num(created)
	end
	if ARGV[o + 6] ~= '0' then
		zadd(P .. 'expiry', ARGV[o + 6], id)
	end
	if corr then
		zadd(P .. 'corr:' .. corr, '0', id)
	end
	if idem then
		redis.call('HSET', P .. 'idem', pr .. '|' .. idem, id)
	end
	if sd then
		zadd(P .. 'sd:' .. sd, '0', id)
	end
	if sentkey then
		redis.call('HSET', sentkey, 'n', id)
		redis.call('ZADD', P .. 'lasts', 'GT', created, pr .. '|' .. target)
	end
	return 1 + cancelled
end

-- sent records message m, which the network accepted at its updated time,
-- as the last message sent to its target (last:, lasts), and as the last
-- created for it too when there is none (a message stored before last:
-- was).
local function sent(m)
	local tk = pair(m) .. '|' .. m.target
	local key = P .. 'last:' .. tk
	redis.call('HSET', key, 'h', m.dedup, 's', m.id, 'at', m.updated)
	redis.call('HSETNX', key, 'n', m.id)
	redis.call('ZADD', P .. 'lasts', 'GT', m.updated, tk)
end

-- created writes what the call's creates left to write.
local function created()
	flush()
	if #newpairs > 0 then
		redis.call('SADD', P .. 'pairs', unpack(newpairs))
	end
end

-- enddeliveries ends the active deliveries of sd:<rg>, a room's route and
-- a subscription (see Store.DeleteSubscription): those waiting CANCELLED,
-- telling subscribers csubs, those in flight DELIVERY_FAILED, telling
-- fsubs, at at with reason. It returns how many it ended.
local function enddeliveries(rg, at, reason, csubs, fsubs)
	local n = 0
	for _, id in ipairs(redis.call('ZRANGE', P .. 'sd:' .. rg, 0, -1)) do
		local m = load(id)
		if m and waiting(m.st) then
			move(m, 'CANCELLED', at, reason, 0, 0, 0, '', '', '0', csubs)
			n = n + 1
		elseif m and active(m.st) then
			move(m, 'DELIVERY_FAILED', at, reason, 0, 0, 0, '', reason, '0', fsubs)
			n = n + 1
		end
	end
	redis.call('DEL', P .. 'sd:' .. rg, P .. 'pq:' .. rg)
	return n
end

-- Dead outbox events (dead_events.lua, replay_events.lua). A filter f is
-- {tenant, sub, since, untl}: the tenant (escaped) of the event's message
-- and the subscriber, '' for any; the bounds of its at, inclusive and
-- exclusive, 0 for none. DEADFIELDS are the fields of an event that
-- deadmatch returns.
local DEADFIELDS = { 'sub', 'msg', 'type', 'attempt', 'data', 'err' }

-- deadmatch returns the DEADFIELDS of dead event id at at when it matches
-- filter f, nil otherwise.
local function deadmatch(f, id, at)
	local t = num(at)
	if (f.since ~= 0 and t < f.since) or (f.untl ~= 0 and t >= f.untl) then
		return nil
	end
	local v = redis.call('HMGET', P .. 'ev:' .. id, unpack(DEADFIELDS))
	if f.sub ~= '' and v[1] ~= f.sub then
		return nil
	end
	if f.tenant ~= '' then
		local k = v[2] and v[2] ~= '' and redis.call('HGET', P .. 'm:' .. v[2], 'k')
		if not k or select(3, keyed(k)) ~= f.tenant then
			return nil
		end
	end
	return v
end

-- deadscan walks evdead from the newest, or from after the event bid at
-- bat (bid '' for the newest), and calls visit(id, at, fields) for each
-- dead event that matches filter f, fields its DEADFIELDS, until visit
-- returns false or it has looked at budget events. It returns the id and
-- at of the last event it looked at when the budget stopped it, else nil.
local function deadscan(f, bat, bid, budget, visit)
	local max, min = '+inf', '-inf'
	if bid ~= '' then
		max = bat
	end
	if f.since ~= 0 then
		min = f.since
	end
	local seen, offset = 0, 0
	while true do
		local page = redis.call('ZRANGE', P .. 'evdead', max, min, 'BYSCORE', 'REV', 'LIMIT', offset, 256, 'WITHSCORES')
		if #page == 0 then
			return nil
		end
		offset = offset + #page / 2
		for i = 1, #page, 2 do
			local id, at = page[i], page[i + 1]
			if not (bid ~= '' and at == bat and id >= bid) then
				seen = seen + 1
				local v = deadmatch(f, id, at)
				if v and not visit(id, at, v) then
					return nil
				end
				if seen >= budget then
					return id, at
				end
			end
		end
	end
end

-- revive makes dead event id live again, due at now, no delivery tried.
local function revive(id, now)
	redis.call('HSET', P .. 'ev:' .. id, 'dead', 0, 'attempt', 0, 'err', '')
	redis.call('ZREM', P .. 'evdead', id)
	redis.call('ZADD', P .. 'evdue', now, id)
end

-- INFIELDS are the fields of an inbox event's hash that inrow returns, in
-- order after its id.
local INFIELDS = { 'route', 'kind', 'ext', 'corr', 'ack', 'perm', 'reason', 'dev', 'up', 'at' }

-- inrow returns inbox event id as claim_inbound and inbound_by_corr reply
-- it: {id, INFIELDS..., due}, with due as given; nil when there is no such
-- event.
local function inrow(id, due)
	local v = redis.call('HMGET', P .. 'in:' .. id, unpack(INFIELDS))
	if not v[1] then
		return nil
	end
	local row = { id }
	for i = 1, #INFIELDS do
		row[i + 1] = v[i]
	end
	row[#INFIELDS + 2] = due or ''
	return row
end

-- batch runs op(o, n) for each of the calls in ARGV, which holds for each
-- the number n of its arguments and then them, from ARGV[o]. It returns the
-- replies of op in order; a call that fails gets the error's text, as
-- {'ERR', text}, and the others go on (a failed call's writes before its
-- error stay, as with any script).
local function batch(op)
	local out, i = {}, 1
	while i <= #ARGV do
		local n = tonumber(ARGV[i])
		local ok, res = pcall(op, i + 1, n)
		if not ok then
			res = { 'ERR', type(res) == 'table' and res.err or tostring(res) }
		end
		out[#out + 1] = res
		i = i + 1 + n
	end
	return out
end

-- enter starts a call of a function, with its keys and arguments: the
-- library's state outlives its calls, so each starts it afresh.
local function enter(keys, args)
	ARGV, P = args, keys[1]
	zpend, cpend = nil, nil
	rules, touched, ended = {}, {}, {}
	zadds, newpairs, pairkeys = {}, {}, {}
	servertime = nil
end
