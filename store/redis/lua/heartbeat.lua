-- heartbeat.lua is Store.Heartbeat. ARGV: node, now, ttl (ms). It records
-- in nodes that node is alive until ttl after now, in the lanes' time
-- (see lanetime), and forgets the heartbeats that lapsed a day before.
local lnow = lanetime(tonumber(ARGV[2]))
redis.call('ZADD', P .. 'nodes', lnow + tonumber(ARGV[3]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', P .. 'nodes', '-inf', lnow - 86400000)
return 0
