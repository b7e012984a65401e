package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// createArgs is how many arguments a create has at most, besides the
// subscribers to tell about the messages it coalesces: 8, the hash's
// fields s, k and b, the pairs of coal, corr, idem, x and e, and the
// dedup window's and the delivery's set (sd).
const createArgs = 8 + 3 + 2*5 + 2 + 2

// Create stores m as QUEUED with its creation entry, unless its idempotency
// key names a message already stored, or its dedup key one delivered since
// opt.DedupSince, and cancels the waiting messages it coalesces, in one
// script (which may create other messages too: see batcher).
func (s *Store) Create(ctx context.Context, m *herald.Message, opt herald.CreateOptions) (*herald.Message, bool, error) {
	msg := herald.AsCreated(m)
	enc := newEncoding()
	enc.args, enc.buf = createCall(slices.Grow(enc.args, createArgs+len(opt.CoalesceNotify)), enc.buf, &msg, opt.CoalesceNotify)
	if msg.DedupKey != "" && !opt.DedupSince.IsZero() {
		enc.args = append(enc.args, "since", unixms.From(opt.DedupSince))
	}
	res, err := s.creates.do(ctx, enc)
	if err != nil {
		return nil, false, wrap(ctx, "create", err)
	}
	switch reply := res.(type) {
	case int64:
		if reply >= 1 {
			if opt.Coalesced != nil {
				*opt.Coalesced = int(reply - 1)
			}
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

// createCall appends to args the arguments of the create of msg (see
// lua/create.lua), but the dedup window's, telling notify of the messages
// it coalesces, and returns them with buf, which they point into.
func createCall(args []any, buf []byte, msg *herald.Message, notify []string) ([]any, []byte) {
	created, due := unixms.From(msg.CreatedAt), unixms.From(msg.DueAt)
	args = append(args, msg.ID, esc(msg.Tenant), esc(msg.Route), created)
	switch {
	case msg.Pull:
		args = append(args, "pq:"+queueName(msg), -msg.Priority)
	case due > created:
		args = append(args, "delayed", due)
	default:
		args = append(args, "ready", -msg.Priority)
	}
	args = append(args, unixms.From(msg.ExpiresAt), len(notify))
	for _, sub := range notify {
		args = append(args, sub)
	}
	args, buf = hashFields(args, buf, msg)
	if kind(msg) != "" {
		args = append(args, "sd", queueName(msg))
	}
	return args, buf
}

// queueName returns the name of msg's route and target, escaped, R|G: its
// pq and sd sets are named after it.
func queueName(msg *herald.Message) string {
	return esc(msg.Route) + "|" + esc(msg.Target)
}

// kind returns the kind of msg that field k ends in: "p" when it is
// pulled, "d" when it is a room's delivery otherwise, "" for the others.
func kind(msg *herald.Message) string {
	switch {
	case msg.Pull:
		return "p"
	case strings.HasPrefix(msg.Route, herald.RoomRoutePrefix):
		return "d"
	}
	return ""
}
