-- create.lua is Store.Create for a batch of messages, created in order.
-- ARGV holds, for each message, the number of its arguments and then
-- them: id, tenant, route (both escaped), created, the sorted set that
-- holds it (ready or delayed; the message of a gated route goes to its
-- lane's lq instead of ready, to ld as well as delayed) and its score
-- there, expires (0 for none), n,
-- the n subscribers to tell about the messages it coalesces, the values of
-- its hash's fields s, k and b, then the pairs of its other fields that are
-- set (of which coal, corr and idem name its keys), and last, when its
-- dedup key (in k) has a window, the pair since and the window's start
-- (which is not a field). A create costs Redis about a thousand
-- instructions an argument, so the common case takes few; and numbers
-- stay strings, as Lua would parse them and format them again.
-- The reply has, for each message, 1 when it was stored, 0 when its id is
-- taken, the HGETALL of the earlier message of its idempotency key or of
-- the latest delivered in the window of its dedup key, or {'ERR', text}
-- (see batch). (A table costs Redis thousands of instructions to reply, a
-- number next to nothing.)

-- The new messages' sorted-set entries go in together, one command per key
-- (zadds is key -> {score, id, ...}), and so do their pairs.
local zadds, newpairs, pairkeys = {}, {}, {}
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

local function create(o, n)
	local id, tenant, route, created = ARGV[o], ARGV[o + 1], ARGV[o + 2], ARGV[o + 3]
	local nsubs = 0
	if ARGV[o + 7] ~= '0' then
		nsubs = tonumber(ARGV[o + 7])
	end
	local f = o + 8 + nsubs -- field s
	local last = o + n - 1 -- the last argument of the hash's fields
	local idem, coal, corr, since
	for i = f + 3, last, 2 do
		local name = ARGV[i]
		if name == 'idem' then
			idem = ARGV[i + 1]
		elseif name == 'coal' then
			coal = ARGV[i + 1]
		elseif name == 'corr' then
			corr = ARGV[i + 1]
		elseif name == 'since' then
			since, last = ARGV[i + 1], i - 1
		end
	end
	local pr = tenant .. '|' .. route
	if idem then
		local prev = redis.call('HGET', P .. 'idem', pr .. '|' .. idem)
		if prev then
			return redis.call('HGETALL', P .. 'm:' .. prev)
		end
	end
	if since then
		local dd = select(7, keyed(ARGV[f + 1]))
		local prev = redis.call('ZRANGE', P .. 'dd:' .. pr .. '|' .. dd, '+inf', since, 'BYSCORE', 'REV', 'LIMIT', 0, 1)[1]
		if prev then
			return redis.call('HGETALL', P .. 'm:' .. prev)
		end
	end
	local key = P .. 'm:' .. id
	if redis.call('EXISTS', key) == 1 then
		return 0
	end
	if coal then
		flush() -- the messages it cancels may be in this batch
		local subs = { unpack(ARGV, o + 8, f - 1) }
		local ck = P .. 'coal:' .. pr .. '|' .. coal
		for _, old in ipairs(redis.call('SMEMBERS', ck)) do
			move(load(old), 'CANCELLED', created, 'coalesced', 0, 0, 0, '', '', '0', subs)
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
	return 1
end

local out = batch(create)
flush()
if #newpairs > 0 then
	redis.call('SADD', P .. 'pairs', unpack(newpairs))
end
relane()
return out
