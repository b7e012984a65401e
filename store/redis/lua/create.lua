-- create.lua is Store.Create for a batch of messages, created in order.
-- ARGV holds, for each message, the number of its arguments and then
-- them: id, tenant, route (both escaped), idempotency key, coalesce key,
-- correlation id, created, due, expires, priority, n, the n subscribers to
-- tell about the messages it coalesces, then its hash's field/value pairs.
-- The reply has, for each message, {1} when it was stored, {0, HGETALL}
-- of the earlier message of its idempotency key, {-1} when its id is
-- taken, or {'ERR', text} (see batch).

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
	local id, tenant, route, idem, coal, corr = ARGV[o], ARGV[o + 1], ARGV[o + 2], ARGV[o + 3], ARGV[o + 4], ARGV[o + 5]
	local pr = tenant .. '|' .. route
	if idem ~= '' then
		local prev = redis.call('HGET', P .. 'idem', pr .. '|' .. idem)
		if prev then
			return { 0, redis.call('HGETALL', P .. 'm:' .. prev) }
		end
	end
	local key = P .. 'm:' .. id
	if redis.call('EXISTS', key) == 1 then
		return { -1 }
	end
	local created, nsubs = ARGV[o + 6], tonumber(ARGV[o + 10])
	if coal ~= '' then
		flush() -- the messages it cancels may be in this batch
		local subs = { unpack(ARGV, o + 11, o + 10 + nsubs) }
		local ck = P .. 'coal:' .. pr .. '|' .. coal
		for _, old in ipairs(redis.call('SMEMBERS', ck)) do
			move(load(old), 'CANCELLED', created, 'coalesced', 0, 0, 0, '', '', false, subs)
		end
		redis.call('SADD', ck, id)
	end
	redis.call('HSET', key, unpack(ARGV, o + 11 + nsubs, o + n - 1))
	local keys = pairkeys[pr]
	if not keys then
		keys = { grp = P .. 'grp:' .. pr .. '|QUEUED', ten = P .. 'ten:' .. tenant }
		pairkeys[pr] = keys
		newpairs[#newpairs + 1] = pr
	end
	local c, due, expires = tonumber(created), tonumber(ARGV[o + 7]), tonumber(ARGV[o + 8])
	zadd(keys.grp, c, id)
	zadd(keys.ten, 0, id)
	if due > c then
		zadd(P .. 'delayed', due, id)
	else
		zadd(P .. 'ready', -tonumber(ARGV[o + 9]), id)
	end
	if expires > 0 then
		zadd(P .. 'expiry', expires, id)
	end
	if corr ~= '' then
		zadd(P .. 'corr:' .. corr, 0, id)
	end
	if idem ~= '' then
		redis.call('HSET', P .. 'idem', pr .. '|' .. idem, id)
	end
	return { 1 }
end

local out = batch(create)
flush()
if #newpairs > 0 then
	redis.call('SADD', P .. 'pairs', unpack(newpairs))
end
return out
