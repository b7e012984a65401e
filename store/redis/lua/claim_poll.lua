-- claim_poll.lua is Store.ClaimPoll. ARGV: id, lease, due, until. It
-- returns 0 when it moved the message's due to until, 1 when there is no
-- such message, 2 when it is not DELIVERED_TO_NS under lease and due at
-- due.
local m = load(ARGV[1])
if not m then
	return 1
end
if m.st ~= 'DELIVERED_TO_NS' or m.lease ~= ARGV[2] or num(m.due) ~= tonumber(ARGV[3]) then
	return 2
end
m.due = ARGV[4]
redis.call('HSET', P .. 'm:' .. m.id, 's', packed(m))
redis.call('ZADD', P .. 'poll', m.due, m.id)
return 0
