package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// DeadEvents returns up to q.Limit dead outbox events that match q,
// newest first, and where the next page starts; see herald.Store. A call
// looks at 4,096 dead events at most (dead_events.lua).
func (s *Store) DeadEvents(ctx context.Context, q herald.EventQuery) ([]herald.Event, herald.EventCursor, error) {
	var after string
	if !q.After.IsZero() {
		after = strconv.FormatInt(unixms.From(q.After.At), 10)
	}
	args := []any{esc(q.Tenant), q.Subscriber, unixms.From(q.Since), unixms.From(q.Until), after, q.After.ID, q.Limit}
	for _, id := range q.IDs {
		args = append(args, id)
	}
	res, err := s.eval(ctx, deadEventsScript, args...)
	if err != nil {
		return nil, herald.EventCursor{}, wrap(ctx, "dead events", err)
	}
	rows, _ := res.([]any)
	if len(rows) == 0 {
		return nil, herald.EventCursor{}, fmt.Errorf("redis dead events: unexpected reply %v", res)
	}
	var next herald.EventCursor
	if head, _ := rows[0].([]any); len(head) == 2 && str(head[1]) != "" {
		at, err := strconv.ParseInt(str(head[0]), 10, 64)
		if err != nil {
			return nil, herald.EventCursor{}, fmt.Errorf("redis dead events: unexpected reply %v", rows[0])
		}
		next = herald.EventCursor{At: unixms.Time(at), ID: str(head[1])}
	}
	events := make([]herald.Event, 0, len(rows)-1)
	for _, r := range rows[1:] {
		row, _ := r.([]any)
		if len(row) != 8 {
			return nil, herald.EventCursor{}, fmt.Errorf("redis dead events: unexpected reply %v", r)
		}
		at, err1 := strconv.ParseInt(str(row[4]), 10, 64)
		attempt, err2 := strconv.Atoi(str(row[5]))
		if err1 != nil || err2 != nil {
			return nil, herald.EventCursor{}, fmt.Errorf("redis dead events: unexpected reply %v", r)
		}
		e := herald.Event{ID: str(row[0]), Subscriber: str(row[1]), MessageID: str(row[2]), Type: herald.Status(str(row[3])),
			At: unixms.Time(at), Attempt: attempt, LastError: str(row[7])}
		if data := str(row[6]); data != "" {
			e.Data = []byte(data)
		}
		events = append(events, e)
	}
	return events, next, nil
}

// ReplayEvents makes the dead events ids (of tenant's messages, unless
// tenant is empty) live again, due at now with no delivery tried; see
// herald.Store.
func (s *Store) ReplayEvents(ctx context.Context, tenant string, ids []string, now time.Time) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := []any{unixms.From(now), esc(tenant)}
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := s.eval(ctx, replayEventsScript, args...)
	if err != nil {
		return 0, wrap(ctx, "replay events", err)
	}
	n, ok := res.(int64)
	if !ok {
		return 0, fmt.Errorf("redis replay events: unexpected reply %v", res)
	}
	return int(n), nil
}
