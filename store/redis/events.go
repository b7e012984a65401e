package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// ClaimEvents returns up to limit outbox events due at now, earliest first,
// and makes them due again only at leaseUntil. An uplink event has its
// Data; a message's event has none.
func (s *Store) ClaimEvents(ctx context.Context, now time.Time, limit int, leaseUntil time.Time) ([]herald.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	res, err := s.eval(ctx, claimEventsScript, unixms.From(now), limit, unixms.From(leaseUntil))
	if err != nil {
		return nil, wrap(ctx, "claim events", err)
	}
	rows, _ := res.([]any)
	events := make([]herald.Event, len(rows))
	for i, r := range rows {
		row, _ := r.([]any)
		if len(row) != 7 {
			return nil, fmt.Errorf("redis claim events: unexpected reply %v", r)
		}
		at, err1 := strconv.ParseInt(str(row[4]), 10, 64)
		attempt, err2 := strconv.Atoi(str(row[5]))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("redis claim events: unexpected reply %v", r)
		}
		events[i] = herald.Event{
			ID: str(row[0]), Subscriber: str(row[1]), MessageID: str(row[2]), Type: herald.Status(str(row[3])),
			At: unixms.Time(at), Attempt: attempt,
		}
		if data := str(row[6]); data != "" {
			events[i].Data = []byte(data)
		}
	}
	return events, nil
}

// SettleEvent deletes a delivered event, marks a dead one so that no claim
// returns it again, or reschedules it at r.RetryAt. It returns ErrNotFound
// for an unknown event.
func (s *Store) SettleEvent(ctx context.Context, r herald.EventResult) error {
	result := "retry"
	switch {
	case r.Delivered:
		result = "delivered"
	case r.Dead:
		result = "dead"
	}
	res, err := s.eval(ctx, settleEventScript, r.ID, result, unixms.From(r.RetryAt), r.Attempt, r.Error)
	if err != nil {
		return wrap(ctx, "settle event", err)
	}
	return outcome("settle event", res)
}
