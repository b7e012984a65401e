package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// ClaimEvents returns up to limit live outbox events due at now, earliest
// first, and makes them due again only at leaseUntil.
func (s *Store) ClaimEvents(ctx context.Context, now time.Time, limit int, leaseUntil time.Time) ([]herald.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	var events []herald.Event
	err := s.write(ctx, func(tx *wtx) error {
		rows, err := tx.st.claimEvents.Query(unixms.From(leaseUntil), unixms.From(now), limit)
		events, err = collect(rows, err, scanEvent)
		return err
	})
	return events, wrap("claim events", err)
}

// scanEvent reads id, subscriber, message_id, type, at, attempt, data.
func scanEvent(sc rowScanner) (herald.Event, error) {
	var (
		e   herald.Event
		typ string
		at  int64
	)
	err := sc.Scan(&e.ID, &e.Subscriber, &e.MessageID, &typ, &at, &e.Attempt, &e.Data)
	e.Type, e.At = herald.Status(typ), unixms.Time(at)
	return e, err
}

// SettleEvent deletes a delivered event, marks a dead one so that no claim
// returns it again, or reschedules it at r.RetryAt. It returns ErrNotFound
// for an unknown event.
func (s *Store) SettleEvent(ctx context.Context, r herald.EventResult) error {
	err := s.write(ctx, func(tx *wtx) error {
		var (
			res sql.Result
			err error
		)
		switch {
		case r.Delivered:
			res, err = tx.st.deleteEvent.Exec(r.ID)
		case r.Dead:
			res, err = tx.st.killEvent.Exec(r.Attempt, r.Error, r.ID)
		default:
			res, err = tx.st.retryEvent.Exec(unixms.From(r.RetryAt), r.Attempt, r.Error, r.ID)
		}
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 {
			err = herald.ErrNotFound
		}
		return err
	})
	return wrap("settle event", err)
}
