package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// Create stores m as QUEUED with its creation entry, unless its idempotency
// key names a message already stored, and cancels the waiting messages it
// coalesces, all in one transaction.
func (s *Store) Create(ctx context.Context, m *herald.Message, opt herald.CreateOptions) (*herald.Message, bool, error) {
	msg := herald.AsCreated(m)
	params, err := encodeParams(msg.Params)
	if err != nil {
		return nil, false, wrap("create", err)
	}
	result, err := encodeParams(msg.Result)
	if err != nil {
		return nil, false, wrap("create", err)
	}
	var (
		stored    *herald.Message
		created   bool
		coalesced int
	)
	err = s.write(ctx, func(tx *wtx) error {
		if msg.IdempotencyKey != "" {
			prev, err := tx.findIdempotent(&msg)
			if prev != nil || err != nil {
				stored, created = prev, false
				return err
			}
		}
		if msg.DedupKey != "" && !opt.DedupSince.IsZero() {
			prev, err := tx.findDuplicate(&msg, opt.DedupSince)
			if prev != nil || err != nil {
				stored, created = prev, false
				return err
			}
		}
		if msg.CoalesceKey != "" {
			if coalesced, err = tx.coalesce(&msg, opt.CoalesceNotify); err != nil {
				return err
			}
		}
		if err := tx.insert(&msg, params, result); err != nil {
			return err
		}
		stored, created = &msg, true
		return nil
	})
	if err != nil {
		return nil, false, wrap("create", err)
	}
	if created && opt.Coalesced != nil {
		*opt.Coalesced = coalesced
	}
	return stored, created, nil
}

// findIdempotent returns the message, with its timeline, that has m's
// tenant, route and idempotency key, or nil.
func (tx *wtx) findIdempotent(m *herald.Message) (*herald.Message, error) {
	prev, err := scanWithTimeline(tx.st.findIdempotent.QueryRow(m.Tenant, m.Route, m.IdempotencyKey))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return prev, err
}

// findDuplicate returns the last message sent to m's target (same tenant
// and route), with its timeline, when it has m's dedup key, was sent at or
// after since, is the last created for the target and did not fail; or
// nil (see the last_sent table).
func (tx *wtx) findDuplicate(m *herald.Message, since time.Time) (*herald.Message, error) {
	prev, err := scanWithTimeline(tx.st.findDuplicate.QueryRow(m.Tenant, m.Route, m.Target, m.DedupKey, unixms.From(since)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return prev, err
}

// coalesce cancels the waiting messages that m replaces.
func (tx *wtx) coalesce(m *herald.Message, notify []string) (int, error) {
	rows, err := tx.st.selectCoalesced.Query(m.Tenant, m.Route, m.CoalesceKey)
	olds, err := collect(rows, err, func(sc rowScanner) (herald.Transition, error) {
		t := herald.Transition{To: herald.StatusCancelled, At: m.CreatedAt, Reason: "coalesced", Notify: notify}
		err := sc.Scan(&t.ID, &t.From)
		return t, err
	})
	if err != nil {
		return 0, err
	}
	for _, t := range olds {
		if err := tx.transition(t); err != nil {
			return 0, err
		}
	}
	return len(olds), nil
}

// insert stores m with its timeline, the creation entry; params and
// result are its Params and Result encoded (encodeParams).
func (tx *wtx) insert(m *herald.Message, params, result string) error {
	gated, ordered := tx.gated(m.Route), tx.rules[m.Route].Ordered
	if m.Pull {
		gated, ordered = gatedPull, false
	}
	_, err := tx.st.insertMessage.Exec(
		m.ID, m.Tenant, m.Route, m.Target, m.Lane, m.Priority, m.CorrelationID, m.DedupKey,
		m.IdempotencyKey, m.CoalesceKey, string(m.Status), m.Attempt, m.MaxAttempts, unixms.From(m.CreatedAt),
		unixms.From(m.UpdatedAt), unixms.From(m.DueAt), unixms.From(m.Deadline), unixms.From(m.ExpiresAt), m.ExternalID, m.LastError, m.Lease, m.TraceParent,
		result, gated, encodeBackoff(m.Backoff), params, m.Text, m.Payload, encodeEntry(m.Timeline[0]), ordered)
	if err == nil && gated == gatedKept && m.Status == herald.StatusQueued {
		tx.kept.changed(herald.LaneRef{Route: m.Route, Lane: m.Lane}, 0, 1, &keptKey{prio: int64(m.Priority), id: m.ID})
	}
	return err
}
