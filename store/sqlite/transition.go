package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
)

// Transition applies t if the message is still in t.From (and under
// t.Lease when it is set), records it in the timeline (unless the status
// stays) and enqueues one outcome event per name in t.Notify.
func (s *Store) Transition(ctx context.Context, t herald.Transition) error {
	return wrap("transition", s.write(ctx, func(tx *wtx) error { return tx.transition(t) }))
}

// transition is Transition inside the writer's transaction: one UPDATE
// applies it and appends its timeline entry. On ErrConflict and
// ErrNotFound it has changed nothing.
func (tx *wtx) transition(t herald.Transition) error {
	moved := t.To != t.From
	var seq int
	err := tx.st.transition.QueryRow(
		string(t.To), ms(t.At), ms(t.DueAt), ms(t.Deadline),
		ms(t.ExpiresAt), t.ExternalID, t.LastError, t.ResetAttempts, t.To.InFlight(),
		t.ID, string(t.From), t.Lease,
		moved, entryTail(t.At, t.From, t.To, t.Reason),
	).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return tx.missing(t.ID)
	}
	if err != nil || !moved {
		return err
	}
	for _, sub := range t.Notify {
		id := t.ID + "." + strconv.Itoa(seq) + "." + sub
		if _, err := tx.st.insertEvent.Exec(id, sub, t.ID, string(t.To), ms(t.At)); err != nil {
			return err
		}
	}
	return nil
}

// missing tells why a compare-and-set matched no row: ErrNotFound when the
// message does not exist, ErrConflict when it is not as expected.
func (tx *wtx) missing(id string) error {
	var one int
	err := tx.st.exists.QueryRow(id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return herald.ErrNotFound
	case err != nil:
		return err
	default:
		return herald.ErrConflict
	}
}

// Release moves up to limit TO_RETRY messages whose DueAt <= now back to
// QUEUED, earliest due first, and returns how many moved.
func (s *Store) Release(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int
	err := s.write(ctx, func(tx *wtx) error {
		n = 0
		rows, err := tx.st.selectRetry.Query(ms(now), limit)
		due, err := collect(rows, err, func(sc rowScanner) (herald.Transition, error) {
			var dueAt int64
			t := herald.Transition{From: herald.StatusToRetry, To: herald.StatusQueued, At: now}
			err := sc.Scan(&t.ID, &dueAt)
			t.DueAt = fromMS(dueAt)
			return t, err
		})
		if err != nil {
			return err
		}
		for _, t := range due {
			if err := tx.transition(t); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, wrap("release", err)
}
