package redis

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// The inbox keeps each event in a hash, in:<id>, its due time in the
// sorted set indue, and its id in the set of its route and correlation,
// incorr:<R|C>, when it has a correlation (see lua/lib.lua).

// inboundRow is the length of a row of an inbox event in a script's reply:
// its id, the fields of lib.lua's INFIELDS, its due time.
const inboundRow = 12

// AddInbound stores ev in the inbox, due at ev.DueAt. An event whose id is
// stored already stays as it is.
func (s *Store) AddInbound(ctx context.Context, ev herald.Inbound) error {
	_, err := s.eval(ctx, addInboundScript, ev.ID,
		ev.Route, string(ev.Kind), ev.ExternalID, ev.Correlation, flag(ev.Acknowledged), flag(ev.Permanent),
		ev.Reason, ev.Device, ev.Uplink, unixms.From(ev.At),
		unixms.From(ev.DueAt), correlationKey(ev.Route, ev.Correlation))
	return wrap(ctx, "add inbound", err)
}

// ClaimInbound returns up to limit inbox events due at now, earliest due
// first (then by id), each with the due time it had, and makes them due
// again only at leaseUntil.
func (s *Store) ClaimInbound(ctx context.Context, now time.Time, limit int, leaseUntil time.Time) ([]herald.Inbound, error) {
	if limit <= 0 {
		return nil, nil
	}
	res, err := s.eval(ctx, claimInboundScript, unixms.From(now), limit, unixms.From(leaseUntil))
	if err != nil {
		return nil, wrap(ctx, "claim inbound", err)
	}
	return inboundRows("claim inbound", res)
}

// InboundByCorrelation returns the inbox events of route whose
// Correlation is correlation, claimed or not, in no order; none for an
// empty correlation. A claimed event's DueAt is its lease's end.
func (s *Store) InboundByCorrelation(ctx context.Context, route, correlation string) ([]herald.Inbound, error) {
	if correlation == "" {
		return nil, nil
	}
	res, err := s.eval(ctx, inboundByCorrScript, correlationKey(route, correlation))
	if err != nil {
		return nil, wrap(ctx, "inbound by correlation", err)
	}
	return inboundRows("inbound by correlation", res)
}

// SettleInbound deletes st.Done, makes st.Later due at st.DueAt and
// enqueues st.Event for each of st.Notify, in one script call. Unknown
// inbox events are skipped; an outbox event whose id is stored already
// stays as it is.
func (s *Store) SettleInbound(ctx context.Context, st herald.InboundSettle) error {
	withEvent := st.Event != nil && len(st.Notify) > 0
	if len(st.Done) == 0 && st.Later == "" && !withEvent {
		return nil
	}
	args := make([]any, 0, 8+len(st.Done)+len(st.Notify))
	args = append(args, st.Later, unixms.From(st.DueAt))
	if withEvent {
		u := st.Event
		args = append(args, "1", u.ID, string(u.Type), unixms.From(u.At), u.Data)
	} else {
		args = append(args, "", "", "", 0, "")
	}
	args = append(args, len(st.Done))
	for _, id := range st.Done {
		args = append(args, id)
	}
	if withEvent {
		for _, sub := range st.Notify {
			args = append(args, sub)
		}
	}
	_, err := s.eval(ctx, settleInboundScript, args...)
	return wrap(ctx, "settle inbound", err)
}

// correlationKey returns the name of the set of route's inbox events of
// correlation, after incorr: (route escaped, so that it holds no |), or ""
// for an empty correlation.
func correlationKey(route, correlation string) string {
	if correlation == "" {
		return ""
	}
	return esc(route) + "|" + correlation
}

// flag returns b as a script stores it.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// inboundRows returns the inbox events of a script's reply of rows, as
// lib.lua's inrow makes them.
func inboundRows(op string, res any) ([]herald.Inbound, error) {
	rows, _ := res.([]any)
	if len(rows) == 0 {
		return nil, nil
	}
	events := make([]herald.Inbound, len(rows))
	for i, r := range rows {
		row, _ := r.([]any)
		if len(row) != inboundRow {
			return nil, fmt.Errorf("redis %s: unexpected reply %v", op, r)
		}
		at, err1 := strconv.ParseInt(str(row[10]), 10, 64)
		due, err2 := score(str(row[11]))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("redis %s: unexpected reply %v", op, r)
		}
		ev := herald.Inbound{
			ID: str(row[0]), Route: str(row[1]), Kind: herald.InboundKind(str(row[2])), ExternalID: str(row[3]),
			Correlation: str(row[4]), Acknowledged: str(row[5]) == "1", Permanent: str(row[6]) == "1",
			Reason: str(row[7]), Device: str(row[8]), At: unixms.Time(at), DueAt: unixms.Time(due),
		}
		if up := str(row[9]); up != "" {
			ev.Uplink = []byte(up)
		}
		events[i] = ev
	}
	return events, nil
}

// score parses a sorted set's score of unix milliseconds, as Redis
// formats it; "" (no score) is 0.
func score(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("score %q is not a time", v)
	}
	return int64(math.Round(f)), nil
}
