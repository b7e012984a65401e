package sqlite

import (
	"context"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// The operator's pauses are rows of lane_pauses, times in unix
// milliseconds (0: none). They are few and seldom written: their
// statements are not prepared.

// PauseLane keeps p in place of the pause of its route and lane.
func (s *Store) PauseLane(ctx context.Context, p herald.LanePause) error {
	err := s.write(ctx, func(tx *wtx) error {
		_, err := tx.conn.ExecContext(ctx, `INSERT OR REPLACE INTO lane_pauses (route, lane, until, reason, tenant, at)
			VALUES (?, ?, ?, ?, ?, ?)`, p.Route, p.Lane, unixms.From(p.Until), p.Reason, p.Tenant, unixms.From(p.At))
		return err
	})
	return wrap("pause lane", err)
}

// ResumeLane deletes the pause of route and lane.
func (s *Store) ResumeLane(ctx context.Context, route, lane string) (bool, error) {
	var n int
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		n, err = deleted(tx.conn.ExecContext(ctx, `DELETE FROM lane_pauses WHERE route = ? AND lane = ?`, route, lane))
		return err
	})
	return n > 0, wrap("resume lane", err)
}

// LanePauses returns the pauses kept, by route, then lane.
func (s *Store) LanePauses(ctx context.Context) ([]herald.LanePause, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT route, lane, until, reason, tenant, at FROM lane_pauses ORDER BY route, lane`)
	pauses, err := collect(rows, err, func(sc rowScanner) (herald.LanePause, error) {
		var (
			p         herald.LanePause
			until, at int64
		)
		err := sc.Scan(&p.Route, &p.Lane, &until, &p.Reason, &p.Tenant, &at)
		p.Until, p.At = unixms.Time(until), unixms.Time(at)
		return p, err
	})
	return pauses, wrap("lane pauses", err)
}
