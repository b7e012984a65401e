package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// purgeChunk is how many dead letters one purge script looks at: Purge
// walks them all, in steps that keep each script short.
const purgeChunk = 500

// Purge deletes the DELIVERY_FAILED messages of q.Tenant (every tenant when
// empty) and q.Route (every route when empty) last updated before q.Before
// (any time when zero), with their timelines, and returns how many.
func (s *Store) Purge(ctx context.Context, q herald.PurgeQuery) (int, error) {
	total, cursor := 0, ""
	for {
		res, err := s.eval(ctx, purgeScript, esc(q.Tenant), esc(q.Route), unixms.From(q.Before), cursor, purgeChunk)
		if err != nil {
			return total, wrap(ctx, "purge", err)
		}
		reply, _ := res.([]any)
		if len(reply) != 2 {
			return total, fmt.Errorf("redis purge: unexpected reply %v", res)
		}
		n, err := count("purge", reply[0])
		if err != nil {
			return total, err
		}
		total, cursor = total+n, str(reply[1])
		if cursor == "" {
			return total, nil
		}
	}
}

// Prune deletes up to limit terminal messages last updated before before,
// with their timelines, and returns how many.
func (s *Store) Prune(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.evalCount(ctx, "prune", pruneScript, before, limit)
}
