package herald

import (
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
// retried once its last deadline passes.
type claimKeeper struct {
	e      *Engine
	id     string
	lease  int64
	accept time.Duration
	until  time.Time // the call's bound: no deadline is moved past it

	mu       sync.Mutex
	deadline time.Time // the message's deadline, as last written
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
	wait := max(k.deadline.Sub(k.e.clock.Now())-k.accept/4, time.Millisecond)
	k.timer = k.e.clock.AfterFunc(wait, k.extend)
}

// extend moves the deadline on, and arms the next move.
func (k *claimKeeper) extend() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	now := k.e.clock.Now()
	next := now.Add(k.accept)
	if next.After(k.until) {
		next = k.until
	}
	k.deadline = next // before the write: a progress made meanwhile writes it too
	k.mu.Unlock()
	err := k.e.store.Transition(k.e.sendCtx, Transition{ID: k.id, From: StatusSentToNS, To: StatusSentToNS, Lease: k.lease, At: now, Deadline: next})
	if err != nil { // the message moved on (the call's answer came first), or the store failed: the deadline stands
		if k.e.sendCtx.Err() == nil {
			k.e.log.Debug("claim kept alive no longer", "id", k.id, "err", err)
		}
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.stopped {
		k.arm()
	}
}

// current returns the message's deadline as the keeper last wrote it.
func (k *claimKeeper) current() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.deadline
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
