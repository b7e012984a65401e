-- pull.lua is Store.Pull. ARGV: now, limit, deadline, the queue (route and
-- target, escaped, R|G), reason, lease. It leases up to limit messages of the
-- queue's pq that are due and not expired, in its order, reading on in
-- pages past those it may not lease (not yet due, or expired and not yet
-- failed by the reaper), LOOK of them at most, and returns them as
-- claim.lua does: each as {id, s}.
local now, limit, deadline, reason, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[5], ARGV[6]
local key = P .. 'pq:' .. ARGV[4]
local LOOK, PAGE = 4096, 256
local out = {}
local passed = 0 -- the messages passed over, which stay first in pq
while #out < limit and passed < LOOK do
	local page = redis.call('ZRANGE', key, passed, passed + limit - #out + PAGE - 1)
	if #page == 0 then
		break
	end
	for _, id in ipairs(page) do
		if #out == limit then
			break
		end
		local m = load(id)
		if not m or m.st ~= 'QUEUED' then
			redis.call('ZREM', key, id) -- left behind: no QUEUED pull message
		elseif num(m.due) <= now and (num(m.expires) == 0 or num(m.expires) > now) then
			local bz, bc, bx, bk = zsets(m), coalkey(m), extfield(m), counted(m)
			m.st, m.attempt, m.updated, m.seq = 'SENT_TO_NS', m.attempt + 1, now, m.seq + 1
			m.lease, m.deadline = lease, deadline -- a string: 63 bits, more than a Lua number holds
			record(m, now, 'QUEUED', 'SENT_TO_NS', reason)
			local s = packed(m)
			redis.call('HSET', P .. 'm:' .. id, 's', s, 't', m.timeline)
			reindex(id, bz, bc, bx, bk, m, now)
			out[#out + 1] = { id, s }
		else
			passed = passed + 1
		end
	end
end
return out
