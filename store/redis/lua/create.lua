-- create.lua is Store.Create for a batch of messages, created in order.
-- ARGV holds, for each message, the number of its arguments and then
-- them: id, tenant, route (both escaped), created, the sorted set that
-- holds it (ready or delayed; the message of a gated route goes to its
-- lane's lq instead of ready, to ld as well as delayed; a pull message to
-- its pq) and its score there, expires (0 for none), n,
-- the n subscribers to tell about the messages it coalesces, the values of
-- its hash's fields s, k and b, then the pairs of its other fields that are
-- set (of which coal, corr and idem name its keys), and last the pairs
-- that are not fields: when its dedup key (in k) has a window, since and
-- the window's start; when it is a room's delivery, sd and the name of
-- its subscription's sd. A create costs Redis about a thousand
-- instructions an argument, so the common case takes few; and numbers
-- stay strings, as Lua would parse them and format them again.
-- The reply has, for each message, 1 when it was stored (plus the number
-- of messages it cancelled by coalescing), 0 when its id is taken, the HGETALL of the earlier message of its idempotency key or of
-- the latest delivered in the window of its dedup key, or {'ERR', text}
-- (see batch). (A table costs Redis thousands of instructions to reply, a
-- number next to nothing.)

local out = batch(create)
created()
relane()
return out
