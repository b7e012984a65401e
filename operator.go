package herald

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxSendAhead bounds how far ahead a message may be scheduled
// (SendRequest.SendAt).
const MaxSendAhead = 366 * 24 * time.Hour

// sentNowReason is the timeline's reason of an operator's send-now.
const sentNowReason = "sent now by an operator"

// scheduled reports whether m waits QUEUED for a time still ahead of now
// (its send_at, or a replay's spacing).
func scheduled(m *Message, now time.Time) bool {
	return m.Status == StatusQueued && !m.Pull && m.DueAt.After(now)
}

// SendNow makes tenant's message id due now: a QUEUED message scheduled
// for later, or a TO_RETRY message waiting for its next attempt (which
// becomes QUEUED). Its timeline records it; the attempts it used stay
// used. Any other message returns ErrNotWaiting.
func (e *Engine) SendNow(ctx context.Context, tenant, id string) (*Message, error) {
	for range 3 {
		m, err := e.Get(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		now := e.clock.Now()
		t := Transition{From: m.Status, At: now, DueAt: now, Reason: sentNowReason}
		switch {
		case m.Status == StatusToRetry:
			t.To = StatusQueued
		case scheduled(m, now):
			t.To = StatusQueued
		default:
			why := "message is " + string(m.Status)
			if m.Status == StatusQueued {
				why += " and due already"
			}
			return m, fmt.Errorf("%w: %s", ErrNotWaiting, why)
		}
		err = e.transition(ctx, m, t)
		if errors.Is(err, ErrConflict) {
			continue // it moved between the read and the write: look again
		}
		if err != nil {
			return nil, err
		}
		e.log.Info("sent now by an operator", "id", m.ID, "route", m.Route, "from", m.Status, "due", m.DueAt)
		e.nudge(e.wake)
		return e.Get(ctx, tenant, id)
	}
	return nil, fmt.Errorf("%w: message keeps changing", ErrNotWaiting)
}

// CancelFilter selects the waiting messages CancelMessages cancels: every
// field given must match.
type CancelFilter struct {
	Route  string    // required
	Lane   string    // matched exactly when not empty
	Target string    // matched exactly when not empty
	Status Status    // QUEUED or TO_RETRY; empty for both
	Before time.Time // created before it, when not zero
}

// CancelMessages cancels tenant's QUEUED and TO_RETRY messages that match
// f, each by a compare-and-set of the status it was read in, so that none
// that has moved on since (claimed, in flight) is touched, and returns how
// many it cancelled. A filter without a route, or with another status,
// returns an *InvalidError.
func (e *Engine) CancelMessages(ctx context.Context, tenant string, f CancelFilter) (int, error) {
	if f.Route == "" {
		return 0, Invalid("route", "is required: bulk cancel acts on one route's messages")
	}
	statuses := []Status{StatusQueued, StatusToRetry}
	switch f.Status {
	case "":
	case StatusQueued, StatusToRetry:
		statuses = []Status{f.Status}
	default:
		return 0, Invalid("status", "%q: want QUEUED or TO_RETRY, or none for both", f.Status)
	}
	var all []*Message
	for _, st := range statuses {
		q := Query{Tenant: tenant, Status: st, Route: f.Route, Target: f.Target, Limit: 500}
		for {
			page, next, err := e.store.List(ctx, q)
			if err != nil {
				return 0, err
			}
			for _, m := range page {
				if (f.Lane == "" || m.Lane == f.Lane) && (f.Before.IsZero() || m.CreatedAt.Before(f.Before)) {
					all = append(all, m)
				}
			}
			if next == "" {
				break
			}
			q.Cursor = next
		}
	}
	n := 0
	defer func() {
		e.log.Info("bulk cancel", "tenant", tenant, "route", f.Route, "lane", f.Lane, "target", f.Target, "status", f.Status,
			"matched", len(all), "cancelled", n)
	}()
	for _, m := range all {
		err := e.transition(ctx, m, Transition{From: m.Status, To: StatusCancelled, Reason: "cancelled by user"})
		switch {
		case err == nil:
			n++
		case !errors.Is(err, ErrConflict): // a conflict: it moved on, and is left alone
			return n, err
		}
	}
	return n, nil
}
