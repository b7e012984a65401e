package sqlite

import (
	"context"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// inboxCols are the inbox columns that make up a herald.Inbound, in the
// order scanInbound reads them.
const inboxCols = `id, route, kind, external_id, correlation, acknowledged, permanent,
	reason, device, uplink, at, due_at`

// AddInbound stores ev in the inbox; an id stored already keeps its row.
func (s *Store) AddInbound(ctx context.Context, ev herald.Inbound) error {
	err := s.write(ctx, func(tx *wtx) error {
		_, err := tx.st.addInbound.Exec(ev.ID, ev.Route, string(ev.Kind), ev.ExternalID, ev.Correlation,
			ev.Acknowledged, ev.Permanent, ev.Reason, ev.Device, ev.Uplink, unixms.From(ev.At), unixms.From(ev.DueAt))
		return err
	})
	return wrap("add inbound", err)
}

// ClaimInbound returns up to limit inbox events due at now, earliest due
// first, and makes them due again only at leaseUntil.
func (s *Store) ClaimInbound(ctx context.Context, now time.Time, limit int, leaseUntil time.Time) ([]herald.Inbound, error) {
	if limit <= 0 {
		return nil, nil
	}
	var evs []herald.Inbound
	err := s.write(ctx, func(tx *wtx) error {
		rows, err := tx.st.claimInbound.Query(unixms.From(now), limit)
		if evs, err = collect(rows, err, scanInbound); err != nil {
			return err
		}
		for _, ev := range evs {
			if _, err := tx.st.laterInbound.Exec(ev.ID, unixms.From(leaseUntil)); err != nil {
				return err
			}
		}
		return nil
	})
	return evs, wrap("claim inbound", err)
}

// InboundByCorrelation returns the inbox events of route with correlation.
func (s *Store) InboundByCorrelation(ctx context.Context, route, correlation string) ([]herald.Inbound, error) {
	if correlation == "" {
		return nil, nil
	}
	rows, err := s.rs.inboundByCorrelation.QueryContext(ctx, route, correlation)
	evs, err := collect(rows, err, scanInbound)
	return evs, wrap("inbound by correlation", err)
}

// SettleInbound deletes s.Done, reschedules s.Later and enqueues s.Event
// for s.Notify, in one transaction.
func (s *Store) SettleInbound(ctx context.Context, settle herald.InboundSettle) error {
	err := s.write(ctx, func(tx *wtx) error {
		for _, id := range settle.Done { // remembered, then deleted
			if _, err := tx.st.settledInbound.Exec(id); err != nil {
				return err
			}
			if _, err := tx.st.deleteInbound.Exec(id); err != nil {
				return err
			}
		}
		if settle.Later != "" {
			if _, err := tx.st.laterInbound.Exec(settle.Later, unixms.From(settle.DueAt)); err != nil {
				return err
			}
		}
		if ev := settle.Event; ev != nil {
			for _, sub := range settle.Notify {
				if _, err := tx.st.insertDataEvent.Exec(ev.ID+"."+sub, sub, string(ev.Type), unixms.From(ev.At), ev.Data); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return wrap("settle inbound", err)
}

// scanInbound reads the inboxCols.
func scanInbound(sc rowScanner) (herald.Inbound, error) {
	var (
		ev        herald.Inbound
		kind      string
		at, dueAt int64
	)
	err := sc.Scan(&ev.ID, &ev.Route, &kind, &ev.ExternalID, &ev.Correlation, &ev.Acknowledged, &ev.Permanent,
		&ev.Reason, &ev.Device, &ev.Uplink, &at, &dueAt)
	ev.Kind, ev.At, ev.DueAt = herald.InboundKind(kind), unixms.Time(at), unixms.Time(dueAt)
	return ev, err
}
