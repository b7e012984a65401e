-- claim.lua is Store.Claim. ARGV: now, limit, the default accept timeout,
-- then pairs of route (escaped) and accept timeout. It returns the claimed
-- messages, in claim order, each as {id, s}: its id and the field s as the
-- claim set it. The caller reads the other fields, which a claim does not
-- change, off the script (all but the timeline, which Claim does not
-- return).
local now, limit, default = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local timeouts = {}
for i = 4, #ARGV, 2 do
	timeouts[ARGV[i]] = tonumber(ARGV[i + 1])
end

-- Make ready the delayed messages now due, up to PROMOTE of them.
local PROMOTE = 1000
local due = redis.call('ZRANGEBYSCORE', P .. 'delayed', '-inf', now, 'LIMIT', 0, PROMOTE)
if #due > 0 then
	local ready = {}
	for _, id in ipairs(due) do
		local k = redis.call('HGET', P .. 'm:' .. id, 'k')
		ready[#ready + 1], ready[#ready + 2] = -num(string.match(k, '^[^|]*|([^|]*)')), id
	end
	redis.call('ZADD', P .. 'ready', unpack(ready))
	redis.call('ZREM', P .. 'delayed', unpack(due))
end

-- Take the ready messages in order; one not due after all (queued by a
-- clock ahead of this one) goes to delayed.
local picked = {}
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
				if num(m.due) > now then
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
	m.st, m.attempt, m.updated, m.lease, m.seq = 'SENT_TO_NS', m.attempt + 1, now, lease + i, m.seq + 1
	m.deadline = now + (timeouts[m.route] or default)
	record(m, now, 'QUEUED', 'SENT_TO_NS', '')
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
