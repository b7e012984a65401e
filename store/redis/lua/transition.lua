-- transition.lua is Store.Transition for a batch of transitions, applied in
-- order. ARGV holds, for each, the number of its arguments and then them:
-- id, from, to, lease (0 for any), at, due, deadline, expires, external id,
-- last error, reset (1 to reset attempts), reason, then the subscribers to
-- notify. The reply has, for each, 0 when applied, 1 when there is no such
-- message, 2 on a conflict, or {'ERR', text} (see batch).
local function transition(o, n)
	local m = load(ARGV[o])
	if not m then
		return 1
	end
	local lease = ARGV[o + 3]
	if m.st ~= ARGV[o + 1] or (lease ~= '0' and m.lease ~= lease) then
		return 2
	end
	move(m, ARGV[o + 2], ARGV[o + 4], ARGV[o + 11], ARGV[o + 5], ARGV[o + 6], ARGV[o + 7], ARGV[o + 8],
		ARGV[o + 9], ARGV[o + 10] == '1', { unpack(ARGV, o + 12, o + n - 1) })
	return 0
end

deferz() -- no transition reads the sorted sets
local out = batch(transition)
flushz()
return out
