package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/heraldmq/herald"
)

// Purge deletes the DELIVERY_FAILED messages of q.Tenant (every tenant when
// empty) and q.Route (every route when empty) last updated before q.Before
// (any time when zero), with their timelines, and returns how many.
func (s *Store) Purge(ctx context.Context, q herald.PurgeQuery) (int, error) {
	var n int
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		n, err = tx.deleteMessages(tx.st.purge.Query(q.Tenant, q.Route, ms(q.Before)))
		return err
	})
	return n, wrap("purge", err)
}

// Prune deletes up to limit terminal messages last updated before before,
// with their timelines, and returns how many.
func (s *Store) Prune(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		n, err = tx.deleteMessages(tx.st.prune.Query(ms(before), limit))
		return err
	})
	return n, wrap("prune", err)
}

// deleteMessages takes the ids returned by a DELETE of messages and deletes
// their timelines; it returns how many there were.
func (tx *wtx) deleteMessages(rows *sql.Rows, err error) (int, error) {
	ids, err := collect(rows, err, func(sc rowScanner) (string, error) {
		var id string
		err := sc.Scan(&id)
		return id, err
	})
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if _, err := tx.st.deleteTimeline.Exec(id); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}
