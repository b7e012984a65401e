package sqlite

import (
	"context"
	"encoding/json"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// deadEventsWhere selects the dead events of an EventQuery, read through
// events_dead: ?1 the tenant (empty: any), ?2 the subscriber (empty:
// any), ?3 and ?4 the bounds of at (0 for none), ?5 a JSON array of ids
// (NULL for any).
const deadEventsWhere = `FROM events e INDEXED BY events_dead LEFT JOIN messages m ON m.id = e.message_id
	WHERE e.dead = 1 AND (?1 = '' OR m.tenant = ?1) AND (?2 = '' OR e.subscriber = ?2)
		AND e.at >= ?3 AND (?4 = 0 OR e.at < ?4)
		AND (?5 IS NULL OR e.id IN (SELECT value FROM json_each(?5)))`

// deadEventsArgs returns the arguments of deadEventsWhere for q.
func deadEventsArgs(q herald.EventQuery) ([]any, error) {
	var ids any
	if q.IDs != nil {
		b, err := json.Marshal(q.IDs)
		if err != nil {
			return nil, err
		}
		ids = string(b)
	}
	return []any{q.Tenant, q.Subscriber, unixms.From(q.Since), unixms.From(q.Until), ids}, nil
}

// DeadEvents returns up to q.Limit dead outbox events that match q,
// newest first, and where the next page starts; see herald.Store.
func (s *Store) DeadEvents(ctx context.Context, q herald.EventQuery) ([]herald.Event, herald.EventCursor, error) {
	args, err := deadEventsArgs(q)
	if err != nil {
		return nil, herald.EventCursor{}, wrap("dead events", err)
	}
	rows, err := s.read.QueryContext(ctx, `SELECT e.id, e.subscriber, e.message_id, e.type, e.at, e.attempt, e.data, e.last_error `+
		deadEventsWhere+` AND (?6 = '' OR e.at < ?7 OR (e.at = ?7 AND e.id < ?6))
		ORDER BY e.at DESC, e.id DESC LIMIT CAST(?8 AS INTEGER)`,
		append(args, q.After.ID, unixms.From(q.After.At), q.Limit+1)...)
	events, err := collect(rows, err, func(sc rowScanner) (herald.Event, error) {
		var (
			e   herald.Event
			typ string
			at  int64
		)
		err := sc.Scan(&e.ID, &e.Subscriber, &e.MessageID, &typ, &at, &e.Attempt, &e.Data, &e.LastError)
		e.Type, e.At = herald.Status(typ), unixms.Time(at)
		return e, err
	})
	if err != nil {
		return nil, herald.EventCursor{}, wrap("dead events", err)
	}
	var next herald.EventCursor
	if len(events) > q.Limit {
		events = events[:q.Limit]
		last := events[len(events)-1]
		next = herald.EventCursor{At: last.At, ID: last.ID}
	}
	return events, next, nil
}

// ReplayEvents makes the dead events ids (of tenant's messages, unless
// tenant is empty) live again, due at now with no delivery tried; see
// herald.Store.
func (s *Store) ReplayEvents(ctx context.Context, tenant string, ids []string, now time.Time) (int, error) {
	args, err := deadEventsArgs(herald.EventQuery{Tenant: tenant, IDs: ids})
	if err != nil {
		return 0, wrap("replay events", err)
	}
	var n int64
	err = s.write(ctx, func(tx *wtx) error {
		res, err := tx.conn.ExecContext(ctx, `UPDATE events SET dead = 0, attempt = 0, last_error = '', due_at = ?6
			WHERE id IN (SELECT e.id `+deadEventsWhere+`)`, append(args, unixms.From(now))...)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	return int(n), wrap("replay events", err)
}
