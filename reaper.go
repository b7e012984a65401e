package herald

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// reapBatch bounds the overdue messages handled in one store scan.
const reapBatch = 500

// reapWorkers bounds the overdue messages handled at once. A queue check
// is a carrier call, and every message's end is a store write: one at a
// time, a fleet's deadlines would hold each other back by a carrier's
// answer each, and their writes would not share a commit. A scan still
// waits for its slowest call (at most the route's accept timeout) before
// the next. Polls are not the reaper's (see pollLoop).
const reapWorkers = 16

// reapLoop runs the reaper every ReapInterval on the engine's clock.
func (e *Engine) reapLoop(ctx context.Context) {
	failures := 0
	for {
		wait := e.cfg.ReapInterval
		e.refreshHoldsEvery(ctx)
		if err := e.reap(ctx); err != nil && ctx.Err() == nil {
			failures++
			e.problem("store_error", "reaper", "err", err)
			wait = max(wait, backoff(failures))
		} else {
			failures = 0
		}
		if !e.sleep(ctx, wait) {
			return
		}
		e.nudge(e.retryPending)
	}
}

// reap handles every overdue message once: expired ones fail, stages past
// their deadline retry or fail.
func (e *Engine) reap(ctx context.Context) error {
	seen := make(map[string]bool)
	for {
		msgs, err := e.store.Overdue(ctx, e.clock.Now(), reapBatch)
		if err != nil {
			return err
		}
		var fresh []*Message
		for _, m := range msgs {
			if !seen[m.ID] {
				seen[m.ID] = true
				fresh = append(fresh, m)
			}
		}
		e.reapAll(ctx, fresh)
		if len(fresh) == 0 || len(msgs) < reapBatch || ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// reapAll handles msgs, up to reapWorkers at once, and returns once those
// it started are handled: all of them, unless ctx ends first.
func (e *Engine) reapAll(ctx context.Context, msgs []*Message) {
	var wg sync.WaitGroup
	workers := make(chan struct{}, reapWorkers)
	for _, m := range msgs {
		if ctx.Err() != nil {
			break
		}
		workers <- struct{}{}
		wg.Go(func() {
			defer func() { <-workers }()
			e.reapOne(ctx, m)
		})
	}
	wg.Wait()
}

func (e *Engine) reapOne(ctx context.Context, m *Message) {
	now := e.clock.Now()
	lease := int64(0)
	if m.Status.InFlight() {
		lease = m.Lease
	}
	expired := !m.ExpiresAt.IsZero() && !now.Before(m.ExpiresAt)
	if e.isOrphan(m.Route) && !expired {
		// Held where it is until its route is back (findOrphans). One in
		// flight past its stage deadline has no policy to retry or fail
		// by: its deadline moves orphanRecheck on, so that it leaves the
		// overdue messages, where it would fill the reaper's batches for
		// good, and is looked at again (by its route's policy, once the
		// route is back) then.
		if m.Status.InFlight() && !m.Deadline.IsZero() && !now.Before(m.Deadline) {
			e.record(ctx, m, Transition{From: m.Status, To: m.Status, Lease: m.Lease, At: now,
				Deadline: now.Add(orphanRecheck), DueAt: m.DueAt})
		}
		return
	}
	if expired {
		lastErr := "expired at " + m.ExpiresAt.UTC().Format(time.RFC3339)
		if e.awaitingTask(m) {
			lastErr = TaskTimeoutReason + " (" + lastErr + ")"
		}
		e.record(ctx, m, Transition{From: m.Status, To: StatusDeliveryFailed, Lease: lease, At: now,
			Reason: "expired", LastError: lastErr})
		return
	}
	r, _ := e.route(m.Route)
	deadlinePassed := !m.Deadline.IsZero() && !now.Before(m.Deadline)
	switch m.Status {
	case StatusSentToNS:
		switch {
		case deadlinePassed && m.Pull:
			e.record(ctx, m, e.failure(r, m, errors.New("not acknowledged before its lease ran out"), "lease expired"))
		case deadlinePassed:
			e.record(ctx, m, e.failure(r, m, errors.New(AcceptTimeoutError), "accept timeout"))
		}
	case StatusDeliveredToNS:
		if deadlinePassed {
			e.carrierTimeout(ctx, r, m)
		}
	case StatusSentToDevice:
		if deadlinePassed {
			cause := fmt.Errorf("%s (no confirmation within the device timeout, %v)", DeviceTimeoutReason, r.Policy.Timeouts.Device)
			e.record(ctx, m, e.failure(r, m, cause, "device timeout"))
		}
	}
}

// orphanRecheck is how far the reaper moves the stage deadline of an
// orphan in flight past its deadline: it is looked at again then.
const orphanRecheck = 10 * time.Minute

// queueRecheck is how long after a failed check of a push carrier's queue
// (QueueChecker) the reaper checks again.
const queueRecheck = time.Minute

// carrierTimeout handles a DELIVERED_TO_NS deadline: extended while a push
// carrier still holds the message, retried or failed otherwise. A check
// that fails with a transient error tells neither, so the message waits
// for the next one, a queueRecheck later, while its stage is younger than
// twice the carrier timeout; a permanent error (no server to ask, a device
// gone) or failures beyond that count as the carrier holding it no more.
func (e *Engine) carrierTimeout(ctx context.Context, r *route, m *Message) {
	now := e.clock.Now()
	if qc, ok := r.Carrier.(QueueChecker); ok {
		callCtx, end := e.startCall(ctx, CallQueueCheck, m)
		queued, err := qc.StillQueued(callCtx, m)
		end(queueCallOutcome(queued, err), "", err)
		if err != nil {
			e.problem("carrier_error", "check carrier queue", "id", m.ID, "err", err)
		}
		unknown := err != nil && !isPermanent(err) && now.Sub(m.UpdatedAt) < 2*r.Policy.Timeouts.Carrier
		if unknown || (err == nil && queued) {
			next := r.Policy.Timeouts.Carrier
			if err != nil {
				next = min(next, queueRecheck)
			}
			e.record(ctx, m, Transition{From: m.Status, To: m.Status, Lease: m.Lease, At: now,
				Deadline: now.Add(next), DueAt: m.DueAt})
			return
		}
	}
	cause := fmt.Errorf("%s (not transmitted within the carrier timeout, %v)", RelayTimeoutReason, r.Policy.Timeouts.Carrier)
	if e.awaitingTask(m) {
		cause = fmt.Errorf("%s (none within %v of its acceptance)", TaskTimeoutReason, r.Policy.Timeouts.Carrier)
	}
	if !r.Policy.RetryCarrierTimeout {
		e.record(ctx, m, Transition{From: m.Status, To: StatusDeliveryFailed, Lease: m.Lease, At: now,
			Reason: "carrier timeout", LastError: cause.Error()})
		return
	}
	e.record(ctx, m, e.failure(r, m, cause, "carrier timeout"))
}

// awaitingTask reports whether m is a pull carrier's task being polled.
func (e *Engine) awaitingTask(m *Message) bool {
	r, ok := e.route(m.Route)
	return ok && m.Status == StatusDeliveredToNS && r.Carrier.Path() == PathPull
}

// Drain is the startup drain: it holds the messages of routes that are
// not configured (findOrphans) and reaps what became overdue while herald
// was down, within the DrainBudget. What the budget leaves is handled by
// the loops.
func (e *Engine) Drain(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.DrainBudget)
	defer cancel()
	if err := e.findOrphans(ctx); err != nil {
		return err
	}
	if err := e.refreshHolds(ctx); err != nil {
		return err
	}
	if err := e.reap(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
