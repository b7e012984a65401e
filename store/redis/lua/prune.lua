-- prune.lua is Store.Prune. ARGV: before, limit. It returns how many
-- terminal messages it deleted.
local ids = redis.call('ZRANGEBYSCORE', P .. 'done', '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
	delete(load(id, true))
end
return #ids
