-- add_inbound.lua is Store.AddInbound. ARGV: id, then the values of
-- INFIELDS (see lib.lua), due at and ci (the correlation's R|C, empty for
-- none). An id stored already keeps its event: it returns 1 then, 0 when
-- it stored the event. So does an id settled already (indone), until
-- pruned.
local id = ARGV[1]
local key = P .. 'in:' .. id
if redis.call('EXISTS', key) == 1 or redis.call('ZSCORE', P .. 'indone', id) then
	return 1
end
local ci = ARGV[13]
local h = { 'ci', ci }
for i, f in ipairs(INFIELDS) do
	h[#h + 1], h[#h + 2] = f, ARGV[i + 1]
end
redis.call('HSET', key, unpack(h))
redis.call('ZADD', P .. 'indue', ARGV[12], id)
if ci ~= '' then
	redis.call('SADD', P .. 'incorr:' .. ci, id)
end
return 0
