-- circuit.lua is Store.ReportCircuit. ARGV: route and lane (escaped), at,
-- 1 for a transient failure or 0 for a success, and the longest cool-down
-- (ms). It returns {opened, closed, until, failures}, the CircuitChange
-- (1 or 0 for true or false, until 0 unless opened), having changed the
-- circuit of the lane's state (lst: fails, circ, cool) and its pause (an
-- opening circuit never shortens a longer pause, and keeps its reason:
-- see pause), and put the lane in its place at at. A route without a
-- circuit is left alone.
local route, at, failed, maxcool = ARGV[1], tonumber(ARGV[3]), ARGV[4] == '1', tonumber(ARGV[5])
local r = rule(route)
if not r or r.cfail == 0 then
	return { 0, 0, 0, 0 }
end
local caller = at -- the report's time, in which until is answered
at = lanetime(at)
local rl = route .. '|' .. ARGV[2]
local key = P .. 'lst:' .. rl
local v = redis.call('HMGET', key, 'fails', 'circ', 'cool', 'why', 'pause')
local fails, circ, cool = num(v[1]), v[2] or '', num(v[3])

-- A success closes the circuit and ends its pause (not another one, nor
-- one that another pause outlasted: it kept that one's reason).
if not failed then
	if fails == 0 and circ == '' then
		return { 0, 0, 0, 0 }
	end
	redis.call('HSET', key, 'fails', 0, 'circ', '', 'cool', 0)
	if string.sub(v[4] or '', 1, 8) == 'circuit_' then
		redis.call('HSET', key, 'pause', 0, 'why', '')
	end
	place(lanestate(rl), at)
	return { 0, circ ~= '' and 1 or 0, 0, 0 }
end

-- A failure counts; it opens the circuit when the probe failed (for twice
-- the cool-down) or when it makes the rule's failures in a row.
fails = fails + 1
if circ == 'probing' then
	cool = math.min(2 * cool, maxcool)
elseif circ == '' and fails >= r.cfail then
	cool = r.ccool
else -- counting, or open already: messages sent before it opened answer late
	redis.call('HSET', key, 'fails', fails)
	place(lanestate(rl), at) -- a lane with no message keeps the count a day (see forget)
	return { 0, 0, 0, fails }
end
local til = at + cool
redis.call('HSET', key, 'fails', fails, 'circ', 'open', 'cool', cool,
	unpack(pause({ pause = num(v[5]) }, til, 'circuit_open')))
place(lanestate(rl), at)
return { 1, 0, caller + cool, fails }
