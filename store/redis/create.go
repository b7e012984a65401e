package redis

import (
	"context"
	"fmt"
	"slices"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// createArgs is how many arguments a create has at most, besides the
// subscribers to tell about the messages it coalesces: 8, the hash's
// fields s, k and b, the pairs of coal, corr, idem, x and e, and the
// dedup window's.
const createArgs = 8 + 3 + 2*5 + 2

// Create stores m as QUEUED with its creation entry, unless its idempotency
// key names a message already stored, or its dedup key one delivered since
// opt.DedupSince, and cancels the waiting messages it coalesces, in one
// script (which may create other messages too: see batcher).
func (s *Store) Create(ctx context.Context, m *herald.Message, opt herald.CreateOptions) (*herald.Message, bool, error) {
	msg := herald.AsCreated(m)
	enc := newEncoding()
	args := slices.Grow(enc.args, createArgs+len(opt.CoalesceNotify))
	created, due := unixms.From(msg.CreatedAt), unixms.From(msg.DueAt)
	args = append(args, msg.ID, esc(msg.Tenant), esc(msg.Route), created)
	if due > created {
		args = append(args, "delayed", due)
	} else {
		args = append(args, "ready", -msg.Priority)
	}
	args = append(args, unixms.From(msg.ExpiresAt), len(opt.CoalesceNotify))
	for _, sub := range opt.CoalesceNotify {
		args = append(args, sub)
	}
	enc.args, enc.buf = hashFields(args, enc.buf, &msg)
	if msg.DedupKey != "" && !opt.DedupSince.IsZero() {
		enc.args = append(enc.args, "since", unixms.From(opt.DedupSince))
	}
	res, err := s.creates.do(ctx, enc)
	if err != nil {
		return nil, false, wrap(ctx, "create", err)
	}
	switch reply := res.(type) {
	case int64:
		if reply == 1 {
			return &msg, true, nil
		}
		if reply == 0 {
			return nil, false, fmt.Errorf("redis create: message %s already exists", msg.ID)
		}
	case []any:
		prev, err := withTimeline(replyMap(reply))
		if err != nil {
			return nil, false, wrap(ctx, "create", err)
		}
		return prev, false, nil
	}
	return nil, false, fmt.Errorf("redis create: unexpected reply %v", res)
}
