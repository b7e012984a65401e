package redis

import (
	"context"
	"errors"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
)

// ownLanes keeps of lanes (their states read; routes, their routes,
// escaped) those that hold messages of tenant, queued or in flight, with
// Queued and InFlight counting those alone. The tenant's QUEUED messages
// are its group of each route (grp:), whose lanes their field k names;
// the lanes' messages in flight are read for their tenant. It costs a
// read of each of the tenant's QUEUED messages of those routes.
func (s *Store) ownLanes(ctx context.Context, lanes []herald.LaneState, routes []string, tenant string) ([]herald.LaneState, error) {
	keys := make([]string, len(routes))
	for i, r := range routes {
		keys[i] = s.key("grp:" + esc(tenant) + "|" + r + "|" + string(herald.StatusQueued))
	}
	cmds, err := s.pipelined(ctx, keys, func(p goredis.Pipeliner, key string) { p.ZRange(ctx, key, 0, -1) })
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range cmds {
		ids = append(ids, c.(*goredis.StringSliceCmd).Val()...)
	}
	queuedIDs := len(ids)
	for _, l := range lanes {
		ids = append(ids, l.InFlight...)
	}
	msgKeys := make([]string, len(ids))
	for i, id := range ids {
		msgKeys[i] = s.key("m:" + id)
	}
	if cmds, err = s.pipelined(ctx, msgKeys, func(p goredis.Pipeliner, key string) { p.HGet(ctx, key, "k") }); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	queued := map[herald.LaneRef]int{}
	mine := map[string]bool{} // the tenant's messages in flight
	for i, c := range cmds {
		owner, lane, ok := keyedLane(c.(*goredis.StringCmd).Val())
		if !ok || owner != tenant {
			continue
		}
		if i < queuedIDs {
			queued[lane]++
		} else {
			mine[ids[i]] = true
		}
	}
	out := lanes[:0]
	for _, l := range lanes {
		l.Queued = queued[herald.LaneRef{Route: l.Route, Lane: l.Lane}]
		flying := l.InFlight[:0]
		for _, id := range l.InFlight {
			if mine[id] {
				flying = append(flying, id)
			}
		}
		l.InFlight = flying
		if l.Queued+len(l.InFlight) > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

// keyedLane reads the tenant and the lane of a message from its field k
// (created|priority|tenant|route|lane|...); ok is false for a message
// that is gone or has no lane.
func keyedLane(k string) (tenant string, lane herald.LaneRef, ok bool) {
	parts := strings.SplitN(k, "|", 6)
	if len(parts) < 6 {
		return "", herald.LaneRef{}, false
	}
	return unesc(parts[2]), herald.LaneRef{Route: unesc(parts[3]), Lane: unesc(parts[4])}, true
}
