package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// Purge deletes the DELIVERY_FAILED messages of q.Tenant (every tenant when
// empty) and q.Route (every route when empty) last updated before q.Before
// (any time when zero) and returns how many.
func (s *Store) Purge(ctx context.Context, q herald.PurgeQuery) (int, error) {
	var n int
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		n, err = deleted(tx.st.purge.Exec(q.Tenant, q.Route, unixms.From(q.Before)))
		return err
	})
	return n, wrap("purge", err)
}

// Prune deletes up to limit terminal messages last updated before before,
// and up to limit room events published before before, and returns how
// many of both.
func (s *Store) Prune(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := s.write(ctx, func(tx *wtx) error {
		msgs, err := deleted(tx.st.prune.Exec(unixms.From(before), limit))
		if err != nil {
			return err
		}
		events, err := deleted(tx.st.pruneEvents.Exec(unixms.From(before), limit))
		if err != nil {
			return err
		}
		n = msgs + events
		// What the lanes kept of lanes and tenants idle since before goes
		// too, uncounted: nothing of it is lost (see pruneLanes).
		if _, err := tx.st.pruneLanes.Exec(unixms.From(before), limit); err != nil {
			return err
		}
		if _, err := tx.st.pruneBuckets.Exec(unixms.From(before), limit); err != nil {
			return err
		}
		// So do the last messages sent to targets untouched since: a
		// dedup window never reaches back that far.
		if _, err := tx.st.pruneLastSent.Exec(unixms.From(before), limit); err != nil {
			return err
		}
		seen, err := deleted(tx.st.pruneInboxDone.Exec(unixms.From(before), limit))
		n += seen
		return err
	})
	return n, wrap("prune", err)
}

// deleted returns how many rows a DELETE removed.
func deleted(res sql.Result, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
