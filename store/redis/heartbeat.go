package redis

import (
	"context"
	"time"

	"github.com/heraldmq/herald/internal/unixms"
)

// Heartbeat records that node is alive for ttl from now, in the lanes'
// time (the server's, unless the store URL says lane_clock=caller), so
// that nodes whose clocks disagree agree on which have lapsed: see
// lua/heartbeat.lua, and lua/claim.lua, which takes over the lanes of a
// node that has.
func (s *Store) Heartbeat(ctx context.Context, node string, now time.Time, ttl time.Duration) error {
	_, err := s.eval(ctx, heartbeatScript, node, unixms.From(now), ttl.Milliseconds())
	return wrap(ctx, "heartbeat", err)
}
