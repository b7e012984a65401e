-- transition.lua is Store.Transition for a batch of transitions, applied in
-- order. A message with a dedup key that the network accepted (from
-- SENT_TO_NS to DELIVERED_TO_NS or DELIVERY_SUCCESSFUL) becomes the last
-- sent to its target (see sent). ARGV holds, for each, the number of its
-- arguments and then them: id, from, to, lease (0 for any), at, due, deadline, expires, external id,
-- last error, attempts (reset, undo or 0: see move), reason, the pause of
-- the message's lane (until|reason, or 0 for none; a pause never shortens
-- the lane's current one: see pause), the subscription that must exist
-- ('' for none), the message's result (field res; '' keeps it, but a
-- replay, attempts reset, clears it), then the subscribers to notify.
-- The reply has, for each, 0 when applied, 1 when there is no such
-- message, 2 on a conflict (the subscription named gone included), or
-- {'ERR', text} (see batch).
local function transition(o, n)
	local m = load(ARGV[o])
	if not m then
		return 1
	end
	local lease, sub = ARGV[o + 3], ARGV[o + 13]
	if m.st ~= ARGV[o + 1] or (lease ~= '0' and m.lease ~= lease) then
		return 2
	end
	if sub ~= '' and redis.call('EXISTS', P .. 'sub:' .. sub) == 0 then
		return 2
	end
	move(m, ARGV[o + 2], ARGV[o + 4], ARGV[o + 11], ARGV[o + 5], ARGV[o + 6], ARGV[o + 7], ARGV[o + 8],
		ARGV[o + 9], ARGV[o + 10], { unpack(ARGV, o + 15, o + n - 1) })
	if m.dedup ~= '' and ARGV[o + 1] == 'SENT_TO_NS' and (m.st == 'DELIVERED_TO_NS' or m.st == 'DELIVERY_SUCCESSFUL') then
		sent(m)
	end
	if ARGV[o + 14] ~= '' then
		redis.call('HSET', P .. 'm:' .. m.id, 'res', ARGV[o + 14])
	elseif ARGV[o + 10] == 'reset' then
		redis.call('HDEL', P .. 'm:' .. m.id, 'res')
	end
	local rl = ARGV[o + 12] ~= '0' and laneof(m)
	if rl then
		local til, why = string.match(ARGV[o + 12], '^(%d+)|(.*)$')
		local at = num(ARGV[o + 4])
		til = lanetime(at) + num(til) - at -- as long, in the lanes' time
		local key = P .. 'lst:' .. rl
		local h = pause({ pause = num(redis.call('HGET', key, 'pause')) }, til, why)
		if #h > 0 then
			redis.call('HSET', key, unpack(h))
		end
	end
	return 0
end

deferz() -- no transition reads the sorted sets; relane reads them after
local out = batch(transition)
flushz()
relane()
return out
