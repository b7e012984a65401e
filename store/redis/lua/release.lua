-- release.lua is Store.Release. ARGV: now, limit. It returns how many
-- TO_RETRY messages moved to QUEUED.
local now = ARGV[1]
local ids = redis.call('ZRANGEBYSCORE', P .. 'retry', '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
	local m = load(id)
	move(m, 'QUEUED', now, '', m.due, 0, 0, '', '', '0', {})
end
relane()
return #ids
