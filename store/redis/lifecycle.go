package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldmq/herald"
)

// Claim moves up to c.Limit due QUEUED messages to SENT_TO_NS, highest
// priority first and oldest id first within a priority, in one script: no
// two claims, from any process, return the same message.
func (s *Store) Claim(ctx context.Context, c herald.Claim) ([]*herald.Message, error) {
	if c.Limit <= 0 {
		return nil, nil
	}
	args := make([]any, 0, 3+2*len(c.AcceptTimeouts))
	args = append(args, ms(c.Now), c.Limit, c.DefaultAccept.Milliseconds())
	for route, d := range c.AcceptTimeouts {
		args = append(args, esc(route), d.Milliseconds())
	}
	res, err := s.eval(ctx, claimScript, args...)
	if err != nil {
		return nil, wrap(ctx, "claim", err)
	}
	replies, _ := res.([]any)
	claimed := make([]*herald.Message, len(replies))
	for i, r := range replies {
		if claimed[i], err = decodeReply(r); err != nil {
			return nil, wrap(ctx, "claim", err)
		}
	}
	return claimed, nil
}

// Transition applies t if the message is still in t.From (and under
// t.Lease when it is set), records it in the timeline and enqueues one
// outcome event per name in t.Notify, in one script (with other
// transitions: see batcher).
func (s *Store) Transition(ctx context.Context, t herald.Transition) error {
	reset := 0
	if t.ResetAttempts {
		reset = 1
	}
	args := make([]any, 0, 12+len(t.Notify))
	args = append(args, t.ID, string(t.From), string(t.To), t.Lease, ms(t.At), ms(t.DueAt), ms(t.Deadline),
		ms(t.ExpiresAt), t.ExternalID, t.LastError, reset, t.Reason)
	for _, sub := range t.Notify {
		args = append(args, sub)
	}
	res, err := s.transitions.do(ctx, args)
	if err != nil {
		return wrap(ctx, "transition", err)
	}
	switch res {
	case int64(0):
		return nil
	case int64(1):
		return herald.ErrNotFound
	case int64(2):
		return herald.ErrConflict
	default:
		return fmt.Errorf("redis transition: unexpected reply %v", res)
	}
}

// Release moves up to limit TO_RETRY messages whose DueAt <= now back to
// QUEUED, earliest due first, and returns how many moved.
func (s *Store) Release(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	res, err := s.eval(ctx, releaseScript, ms(now), limit)
	if err != nil {
		return 0, wrap(ctx, "release", err)
	}
	return count("release", res)
}
