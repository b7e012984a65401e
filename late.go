package herald

import (
	"context"
	"errors"
	"fmt"
)

// A late answer is a carrier's answer to attempt N of a message that has
// moved on meanwhile: the reaper timed attempt N out (TO_RETRY, perhaps
// released to QUEUED), or attempt N+1 was claimed. A success is adopted
// rather than thrown away, so that what the carrier already delivered is
// not sent again: a message still waiting for its next attempt takes the
// answer as if it had come in time (delivered, or accepted by a push or
// pull carrier, with its external id); one whose next attempt is at the
// carrier already ends DELIVERY_SUCCESSFUL on a late delivery, the first
// success, and the next attempt's answer comes too late in its turn. A
// late failure, or a late answer to a message that ended, changes
// nothing. The timeline says "late answer of attempt N adopted".

// lateReason is the timeline's reason of a late answer of attempt n
// adopted, which answered reason.
func lateReason(n int, reason string) string {
	return fmt.Sprintf("late answer of attempt %d adopted: %s", n, reason)
}

// adoptLate handles t, the answer to attempt m.Attempt of m (m as it was
// claimed for that attempt), which found the message moved on
// (ErrConflict). It returns what recording the adoption returned, or
// ErrConflict when there was nothing to adopt.
func (e *Engine) adoptLate(ctx context.Context, m *Message, t Transition) error {
	if !answersAccepted(t.To) {
		e.dropLate(m, t, "a late failure changes nothing")
		return ErrConflict
	}
	cur, err := e.store.Get(ctx, m.ID)
	if err != nil {
		return err
	}
	a := t
	a.Reason = lateReason(m.Attempt, t.Reason)
	switch {
	case cur.Status.Waiting() && cur.Attempt == m.Attempt && cur.Lease == m.Lease:
		a.From, a.Lease = cur.Status, m.Lease // no newer claim: the lease is still attempt N's
	case cur.Status.InFlight() && cur.Attempt > m.Attempt && t.To == StatusDeliverySuccessful:
		a = Transition{From: cur.Status, To: StatusDeliverySuccessful, Lease: cur.Lease, At: t.At,
			ExternalID: t.ExternalID, Reason: a.Reason}
	default:
		e.dropLate(m, t, fmt.Sprintf("the message is %s at attempt %d", cur.Status, cur.Attempt))
		return ErrConflict
	}
	err = e.apply(ctx, cur, a)
	switch {
	case err == nil:
		e.obs.Problem("late_answer_adopted")
		e.log.Info("late answer adopted", "id", m.ID, "route", m.Route, "attempt", m.Attempt, "from", a.From, "to", a.To)
		e.slotFreed(cur, a)
	case errors.Is(err, ErrConflict):
		e.dropLate(m, t, "the message moved again")
	}
	return err
}

// answersAccepted reports whether a transition to s records a carrier
// that took the message: delivered, or accepted by a push or pull carrier.
func answersAccepted(s Status) bool {
	return s == StatusDeliverySuccessful || s == StatusDeliveredToNS || s == StatusSentToDevice
}

// dropLate counts and logs t, m's answer, dropped: why says why.
func (e *Engine) dropLate(m *Message, t Transition, why string) {
	e.problem("stale_completion", "late answer dropped", "id", m.ID, "from", t.From, "to", t.To, "attempt", m.Attempt, "lease", m.Lease, "why", why)
}
