package herald

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// carrierWait turns a carrier's "the next attempt in D" (a
// RetryAfterError) into the transition that makes m wait, and reports
// whether err was one. Without a reason it is backpressure. With one, the
// message waits for it: a counted send waits exactly D (the carrier's
// schedule, not the route's retry policy) or fails when it was the last
// of its attempts; a send that did not count is undone and pauses a gated
// lane until then, as backpressure does.
func (e *Engine) carrierWait(r *route, m *Message, err error) (Transition, bool) {
	var ra *RetryAfterError
	if !errors.As(err, &ra) || (ra.After <= 0 && !ra.Counted) {
		return Transition{}, false
	}
	if ra.Reason == "" && !ra.Counted {
		return e.backpressure(r, m, err, ra.After), true
	}
	reason := ra.Reason
	if !slices.Contains(WaitReasons, reason) {
		reason = "retry after"
	}
	now := e.clock.Now()
	t := Transition{From: m.Status, Lease: m.Lease, At: now, LastError: err.Error(), Reason: reason}
	switch {
	case !ra.Counted:
		t.To, t.DueAt, t.UndoAttempt = StatusToRetry, now.Add(ra.After), true
		if r.Policy.Admission.Gated() {
			t.PauseUntil, t.PauseReason = t.DueAt, reason
		}
	case m.Attempt >= m.MaxAttempts:
		t.To, t.Reason = StatusDeliveryFailed, fmt.Sprintf("%s; %d of %d attempts used", reason, m.Attempt, m.MaxAttempts)
	default:
		t.To, t.DueAt = StatusToRetry, now.Add(ra.After)
	}
	e.obs.Throttled(m.Route, reason, !t.PauseUntil.IsZero())
	e.log.Info("carrier asked to wait", "id", m.ID, "route", m.Route, "lane", m.Lane, "attempt", m.Attempt,
		"reason", reason, "counted", ra.Counted, "wait", ra.After, "err", err)
	return t, true
}

// waitingFor returns the wait reason (one of WaitReasons) of a message
// that waits for its carrier's reason at now, or "".
func waitingFor(m *Message, now time.Time) string {
	if !m.Status.Waiting() || !m.DueAt.After(now) || len(m.Timeline) == 0 {
		return ""
	}
	last := m.Timeline[len(m.Timeline)-1]
	if last.To == m.Status && slices.Contains(WaitReasons, last.Reason) {
		return last.Reason
	}
	return ""
}
