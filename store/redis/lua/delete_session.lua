-- delete_session.lua is Store.DeleteSession. ARGV: id. It forgets the
-- session and its place among its tenant's.
local key = P .. 'sess:' .. ARGV[1]
local tenant = redis.call('HGET', key, 't')
if tenant then
	redis.call('DEL', key)
	redis.call('ZREM', P .. 'sessions:' .. tenant, ARGV[1])
end
return 0
