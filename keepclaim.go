package herald

import (
	"errors"
	"sync"
	"time"

	"github.com/heraldmq/herald/clock"
)

// A claimKeeper keeps the claim of a message alive while its carrier call
// runs: shortly before the message's SENT_TO_NS deadline (a quarter of the
// accept timeout before it) it moves the deadline an accept timeout on,
// and again before that one, until the call ends or its bound passes. No
// reaper, on any node, then retries a message whose call may still
// succeed; one whose node died, or whose call outlived its bound, is
// retried once its last deadline passes. A move the store fails is tried
// again after a backoff, as long as the deadline has not passed.
type claimKeeper struct {
	e      *Engine
	id     string
	lease  int64
	accept time.Duration
	until  time.Time // the call's bound: no deadline is moved past it

	// writing serializes the keeper's moves and the call's progress
	// writes, which write the deadline too: neither puts back an earlier
	// one.
	writing sync.Mutex

	mu       sync.Mutex
	deadline time.Time // the message's deadline in the store
	failures int       // moves failed in a row
	timer    clock.Timer
	stopped  bool
}

// keepClaim starts keeping the claim of m, whose call on route r is bound
// by until, alive. The caller stops it once the call has returned.
func (e *Engine) keepClaim(r *route, m *Message, until time.Time) *claimKeeper {
	k := &claimKeeper{e: e, id: m.ID, lease: m.Lease, accept: r.Policy.Timeouts.Accept, until: until, deadline: m.Deadline}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.arm()
	return k
}

// arm schedules the next move of the deadline. k.mu is held.
func (k *claimKeeper) arm() {
	if k.deadline.IsZero() || !k.deadline.Before(k.until) {
		return
	}
	left := k.deadline.Sub(k.e.clock.Now())
	wait := max(left-k.accept/4, time.Millisecond)
	if k.failures > 0 { // again soon, and a few times before the deadline
		wait = max(min(backoff(k.failures), left/4), time.Millisecond)
	}
	k.timer = k.e.clock.AfterFunc(wait, k.extend)
}

// busyRetry is how soon the keeper tries again to move a deadline when a
// progress write of the call is under way.
const busyRetry = 10 * time.Millisecond

// extend moves the deadline on, and arms the next move. It never waits
// for a progress write (a clock may call it in its own goroutine): it
// tries again busyRetry later.
func (k *claimKeeper) extend() {
	if !k.writing.TryLock() {
		k.mu.Lock()
		if !k.stopped {
			k.timer = k.e.clock.AfterFunc(busyRetry, k.extend)
		}
		k.mu.Unlock()
		return
	}
	defer k.writing.Unlock()
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.mu.Unlock()
	now := k.e.clock.Now()
	next := now.Add(k.accept)
	if next.After(k.until) {
		next = k.until
	}
	err := k.e.store.Transition(k.e.sendCtx, Transition{ID: k.id, From: StatusSentToNS, To: StatusSentToNS, Lease: k.lease, At: now, Deadline: next})
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound), k.e.sendCtx.Err() != nil:
		return // the message moved on (the call's answer came first), or herald stops
	case err != nil:
		k.failures++
		k.e.problem("store_error", "keep a claim alive", "id", k.id, "err", err)
		if !now.Before(k.deadline) {
			return // the deadline passed: the reaper may have retried the message
		}
	default:
		k.deadline, k.failures = next, 0
	}
	if !k.stopped {
		k.arm()
	}
}

// progress runs write, a progress write of the call that writes deadline
// as the message's, with the deadline in the store, and no move of the
// keeper's between.
func (k *claimKeeper) progress(write func(deadline time.Time) error) error {
	k.writing.Lock()
	defer k.writing.Unlock()
	k.mu.Lock()
	deadline := k.deadline
	k.mu.Unlock()
	return write(deadline)
}

// stop ends the keeping; a move being written may still land.
func (k *claimKeeper) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	if k.timer != nil {
		k.timer.Stop()
	}
}
