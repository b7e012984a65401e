-- inbound_by_corr.lua is Store.InboundByCorrelation. ARGV: the
-- correlation's R|C. It returns the row of inrow (see lib.lua) of each
-- inbox event of it, claimed or not, with its due time now.
local ids = redis.call('SMEMBERS', P .. 'incorr:' .. ARGV[1])
local out = {}
for _, id in ipairs(ids) do
	local row = inrow(id, redis.call('ZSCORE', P .. 'indue', id))
	if row then
		out[#out + 1] = row
	end
end
return out
