package herald

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"
)

// dispatchLoop starts sends from the prefetched buffer as send slots free
// up, and claims in the background whenever the buffer runs low (see
// claimWant), up to maxClaims claims at once: sends go on while a claim
// waits for its commit. It sleeps when nothing is due until woken by a new
// message, a finished send or the poll interval (on the engine's clock).
// A claim that finds nothing lets it sleep only when nothing woke it since
// the claim began: what woke it may have become due after the claim looked.
func (e *Engine) dispatchLoop(ctx context.Context) {
	poll := e.newAlarm(e.cfg.PollInterval)
	defer func() { poll.stop() }()
	claims := make(chan claimed, maxClaims)
	claiming, idle := 0, false
	wakes := 0 // wake-ups taken so far
	failures := 0
	e.setDispatching(true)
	defer e.setDispatching(false)
	defer func() { // the claims running end first: the store may close once the loop returns
		for range claiming {
			<-claims
			e.busy.Add(-1)
		}
	}()
	for {
		e.dispatchMu.Lock()
		e.startPrefetched()
		limit, gated, kept := 0, 0, keptBound{}
		if claiming < maxClaims && !idle {
			limit = e.claimWant()
		}
		if limit > 0 {
			gated = e.gatedLimit(limit)
			kept = e.keptAhead()
			e.claimingN += limit
			if e.timed {
				e.claimingTimed += gated
			}
		}
		e.dispatchMu.Unlock()

		if limit > 0 {
			claiming++
			e.busy.Add(1) // handed back with the result
			since := wakes
			go func() {
				c := e.claimAhead(ctx, limit, gated, kept)
				c.since = since
				claims <- c
			}()
		}
		release := false
		e.park()
		select {
		case <-ctx.Done():
			e.unpark()
			return
		case c := <-claims:
			claiming--
			if c.err != nil {
				failures++
				e.problem("store_error", "dispatch: claim", "err", c.err)
				if !e.sleep(ctx, backoff(failures)) {
					return
				}
				continue
			}
			failures = 0
			idle = c.n == 0 && c.since == wakes
		case <-e.wake:
			idle = false
			wakes++
		case <-e.retryPending:
			release = true
		case <-poll.c:
			poll = e.newAlarm(e.cfg.PollInterval)
			release = true
		}
		if release {
			idle = false
			wakes++
			if _, err := e.store.Release(ctx, e.clock.Now(), 1000); err != nil && ctx.Err() == nil {
				e.problem("store_error", "dispatch: release retries", "err", err)
			}
		}
	}
}

// setDispatching tells finished sends whether to start the next prefetched
// message themselves: only while the dispatch loop runs.
func (e *Engine) setDispatching(on bool) {
	e.dispatchMu.Lock()
	e.dispatching = on
	e.dispatchMu.Unlock()
}

// backoff is how long a loop waits after its n-th store failure in a row.
func backoff(n int) time.Duration {
	d := 100 * time.Millisecond << min(n, 6)
	return min(d, 5*time.Second)
}

// claimed is what a background claim reports to the dispatcher.
type claimed struct {
	n     int // messages claimed
	err   error
	since int // the dispatcher's wake-ups taken when the claim began
}

// claimAhead claims up to limit messages, of gated routes at most gated,
// of the lanes this node keeps as far ahead as kept allows, into the
// prefetched buffer, and tells pace how long the claim took.
func (e *Engine) claimAhead(ctx context.Context, limit, gated int, kept keptBound) claimed {
	began := e.clock.Now()
	msgs, err := e.claimMessages(ctx, limit, gated, kept)
	e.dispatchMu.Lock()
	defer e.dispatchMu.Unlock()
	e.claimingN -= limit
	if e.timed {
		e.claimingTimed -= gated
	}
	if err != nil {
		return claimed{err: err}
	}
	e.pace.claimed(e.clock.Now().Sub(began))
	e.prefetch(msgs)
	return claimed{n: len(msgs)}
}

// claimWant returns how many messages the next claim should take, 0 for
// none yet: the free send slots plus pace's margin, less what is claimed
// or being claimed (but the claimed that wait for a call of their lane,
// which the slots cannot take now), once that is down to half the margin.
// A claim takes at most ClaimBatch; the pending tokens bound it.
func (e *Engine) claimWant() int {
	free := cap(e.slots) - len(e.slots)
	have := len(e.prefetched) - e.laneKept + e.claimingN
	ahead := e.pace.ahead(cap(e.slots), maxClaims*e.cfg.ClaimBatch)
	if have > ahead/2 {
		return 0
	}
	want := free + ahead - have
	return max(0, min(want, e.cfg.ClaimBatch, cap(e.pending)-len(e.pending)-e.claimingN))
}

// maxClaims bounds the claims running at once: while one waits for its
// commit, the next is applied.
const maxClaims = 2

// prefetch adds claimed messages to the prefetched buffer: those of routes
// whose lanes are limited over time (Admission.Timed) at its front, since
// their lane admitted them now and they were claimed only for free slots
// (so the carrier sees the lane's spacing and rate), the others at its
// end. The caller holds dispatchMu.
func (e *Engine) prefetch(msgs []*Message) {
	var timed []*Message
	for _, m := range msgs {
		if e.timedRoute(m.Route) {
			timed = append(timed, m)
		} else {
			e.prefetched = append(e.prefetched, m)
		}
	}
	if len(timed) > 0 {
		e.prefetched = append(timed, e.prefetched...)
	}
}

// timedRoute reports whether route's lanes are limited over time.
func (e *Engine) timedRoute(route string) bool {
	r := e.routes[route]
	return r != nil && r.Policy.Admission.Timed()
}

// startPrefetched starts sends from the prefetched buffer while send slots
// are free, first in first out but for the messages of lanes that this
// node keeps (Admission.ClaimAhead) and that have as many calls in flight
// as their concurrency: those wait, in order, for one to end, or are
// handed back (handedBack). It returns how many it started. The caller
// holds dispatchMu.
func (e *Engine) startPrefetched() int {
	now := e.clock.Now()
	// busy is the lane last found with as many calls as its concurrency:
	// the messages of a claim come a lane's after another, and its next
	// ones wait too, with no need to look its calls up again.
	var busy LaneRef
	started, kept, i := 0, 0, 0 // e.prefetched[:kept] wait for their lane; [kept:i] were taken
	for ; i < len(e.prefetched) && len(e.slots) < cap(e.slots); i++ {
		m := e.prefetched[i]
		if e.keptLane(m) {
			if e.handedBack(m, now) {
				continue
			}
			if key := (LaneRef{m.Route, m.Lane}); key == busy || e.laneCalls[key] >= e.admission[m.Route].Concurrency {
				busy = key
				e.prefetched[kept] = m
				kept++
				continue
			}
		}
		if e.stale(m, now) || e.heldByCircuit(m) {
			continue
		}
		e.startSend(m)
		started++
	}
	e.laneKept = kept
	// What is left: the kept, in order, then the ones not looked at.
	copy(e.prefetched[i-kept:i], e.prefetched[:kept])
	clear(e.prefetched[:i-kept])
	e.prefetched = e.prefetched[i-kept:]
	return started
}

// keptBound is how far ahead a claim may take the messages of the lanes
// this node keeps: Claim.KeptAhead and Claim.KeptSent.
type keptBound struct {
	ahead map[string]int
	sent  map[LaneRef]int
}

// keptAhead returns how far beyond their concurrency a claim may take the
// messages of the lanes this node keeps: by route, what pace expects their
// calls to free while the claim is written (none for a route whose calls
// are slower than a claim); and by lane, its answers on their way to the
// store (a copy of laneAnswered). The caller holds dispatchMu.
func (e *Engine) keptAhead() keptBound {
	k := keptBound{ahead: e.pace.keptAhead(e.admission)}
	if len(e.laneAnswered) > 0 {
		k.sent = maps.Clone(e.laneAnswered)
	}
	return k
}

// keptLane reports whether m's lane is kept by the node that claimed it
// (Admission.ClaimAhead).
func (e *Engine) keptLane(m *Message) bool {
	return e.admission[m.Route].ClaimAhead > 0
}

// claimMessages claims up to limit due messages, of gated routes at most
// gated, of the lanes this node keeps as far ahead as kept allows, taking a pending
// token for each.
func (e *Engine) claimMessages(ctx context.Context, limit, gated int, kept keptBound) ([]*Message, error) {
	msgs, err := e.store.Claim(ctx, Claim{
		Now:            e.clock.Now(),
		Limit:          limit,
		AcceptTimeouts: e.acceptTimeouts,
		DefaultAccept:  e.defaultAccept,
		GatedLimit:     gated,
		Hold:           e.holdList(),
		Node:           e.node,
		KeptAhead:      kept.ahead,
		KeptSent:       kept.sent,
	})
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		e.pending <- struct{}{}
		e.transitioned(m, StatusQueued, StatusSentToNS)
	}
	return msgs, nil
}

// gatedLimit returns how many messages of gated routes a claim of limit
// may take. When a route's lanes are limited over time (Admission.Timed),
// they are claimed for the send slots free now, less those claimed or
// being claimed for them, so that they are sent as soon as their lane
// admits them; but at least one, so that a stream of other messages, which
// fill every slot as it frees, cannot starve them: that one waits at the
// buffer's front for the next free slot, no longer than one send. Otherwise
// gated messages are claimed ahead like the others (a lane's concurrency
// counts from the claim). The caller holds dispatchMu.
func (e *Engine) gatedLimit(limit int) int {
	if !e.timed {
		return limit
	}
	free := cap(e.slots) - len(e.slots) - e.timedAhead() - e.claimingTimed
	if e.timedAhead()+e.claimingTimed == 0 {
		free = max(free, 1)
	}
	return min(limit, max(0, free))
}

// timedAhead counts the prefetched messages of routes limited over time,
// which wait at the buffer's front. The caller holds dispatchMu.
func (e *Engine) timedAhead() int {
	n := 0
	for _, m := range e.prefetched {
		if !e.timedRoute(m.Route) {
			break
		}
		n++
	}
	return n
}

// handedBack hands m, of a lane this node keeps, back to the lane when at
// now it has waited so long for a call of its lane that less than half its
// accept timeout is left (see stale): TO_RETRY, due at once, its attempt
// undone. The caller holds dispatchMu.
func (e *Engine) handedBack(m *Message, now time.Time) bool {
	if m.Deadline.Sub(now) > e.acceptTimeout(m.Route)/2 {
		return false
	}
	e.handBack(m, now, "lane busy", "waited too long for a call of its lane")
	return true
}

// handBack gives claimed message m, not sent, back at now: TO_RETRY, due
// at once, its attempt undone, its pending token returned once recorded.
func (e *Engine) handBack(m *Message, now time.Time, reason, why string) {
	e.spawn(func() {
		defer func() { <-e.pending }()
		e.recordResult(e.sendCtx, m, Transition{From: StatusSentToNS, To: StatusToRetry, Lease: m.Lease, At: now,
			DueAt: now, Reason: reason, LastError: why, UndoAttempt: true})
	})
}

// handBackPrefetched hands back the messages claimed but not sent once
// the dispatch loop has stopped, so that another node, or this one
// started again, sends them at once rather than after their deadline,
// and with no attempt spent.
func (e *Engine) handBackPrefetched() {
	e.dispatchMu.Lock()
	msgs := e.prefetched
	e.prefetched, e.laneKept = nil, 0
	e.dispatchMu.Unlock()
	now := e.clock.Now()
	for _, m := range msgs {
		e.handBack(m, now, "handed back", "the dispatcher stopped before sending it")
	}
}

// stale reports whether a prefetched message has waited so long for a slot
// that at now less than half its accept timeout is left: it is not sent,
// and the reaper retries it after its deadline, so that no send can
// overlap the retry's.
func (e *Engine) stale(m *Message, now time.Time) bool {
	left := m.Deadline.Sub(now)
	if left > e.acceptTimeout(m.Route)/2 {
		return false
	}
	<-e.pending
	e.problem("stale_claim", "claimed message waited too long for a send slot", "id", m.ID, "route", m.Route)
	return true
}

// startSend sends m in its own goroutine, holding a slot for the carrier
// call only; while the dispatch loop runs, the goroutine fills the slot it
// frees from the prefetched buffer. The caller holds dispatchMu.
func (e *Engine) startSend(m *Message) {
	e.slots <- struct{}{}
	key, kept := LaneRef{m.Route, m.Lane}, e.keptLane(m)
	if kept {
		e.laneCalls[key]++
	}
	e.spawn(func() {
		defer func() {
			<-e.pending
			e.nudge(e.wake) // the claim window may have been full
		}()
		began := e.clock.Now()
		t, ok, outcome := e.tracedSend(m)
		e.dispatchMu.Lock()
		<-e.slots
		e.pace.called(m.Route, kept, e.clock.Now().Sub(began))
		if kept {
			if e.laneCalls[key]--; e.laneCalls[key] == 0 {
				delete(e.laneCalls, key)
			}
			e.laneAnswered[key]++
		}
		if e.dispatching {
			e.startPrefetched() // the next send goes at once, not after a wake of the dispatcher
		}
		e.dispatchMu.Unlock()
		e.nudge(e.wake)
		if ok {
			e.recordResult(e.sendCtx, m, t)
		}
		if kept { // its answer is recorded (or there is none to record)
			e.dispatchMu.Lock()
			if e.laneAnswered[key]--; e.laneAnswered[key] == 0 {
				delete(e.laneAnswered, key)
			}
			e.dispatchMu.Unlock()
		}
		if ok {
			if outcome != outcomeOther {
				e.reportCircuit(e.sendCtx, m, outcome == outcomeTransient)
			}
		}
	})
}

// send hands a claimed message to its carrier, with ctx (the engine's send
// context, perhaps with the call's span), and returns the transition
// that records the answer; ok is false when there is nothing to record
// (shutting down: the message stays SENT_TO_NS and is retried after its
// deadline). outcome is what the answer tells the lane's circuit breaker.
func (e *Engine) send(ctx context.Context, m *Message) (t Transition, ok bool, outcome sendOutcome) {
	r, known := e.route(m.Route)
	if !known { // another node's message: held from now on, its attempt undone
		e.orphaned(m)
		return Transition{From: m.Status, To: StatusToRetry, Lease: m.Lease, DueAt: e.clock.Now(), Reason: "route missing",
			UndoAttempt: true}, true, outcomeOther
	}
	if !m.ExpiresAt.IsZero() && !e.clock.Now().Before(m.ExpiresAt) {
		return Transition{From: m.Status, To: StatusDeliveryFailed, Lease: m.Lease, Reason: "expired",
			LastError: "expired at " + m.ExpiresAt.UTC().Format(time.RFC3339)}, true, outcomeOther
	}
	if err := e.fillEventData(ctx, m); err != nil { // a room's delivery: its event's data
		return e.failure(r, m, fmt.Errorf("read the event's data: %w", err), "send failed"), true, outcomeOther
	}
	bound := r.Policy.Timeouts.Accept
	if sc, ok := r.Carrier.(SlowCaller); ok {
		bound = max(bound, sc.CallTimeout())
	}
	sendCtx, cancel := context.WithTimeout(ctx, bound)
	keeper := e.keepClaim(r, m, e.clock.Now().Add(bound))
	began := e.clock.Now()
	var (
		res   SendResult
		err   error
		parts bool // a part was delivered before the last: a send in parts
	)
	if rc, ok := r.Carrier.(Resumer); ok {
		res, err = rc.SendResumable(sendCtx, m, func(externalID string) error {
			parts = true
			return keeper.progress(func(deadline time.Time) error { return e.progress(sendCtx, m, deadline, externalID) })
		})
	} else {
		res, err = r.Carrier.Send(sendCtx, m)
	}
	keeper.stop()
	cancel()
	call := newCall(res.Answer, err, e.clock.Now().Sub(began))
	if parts {
		defer func() { e.spaceAfterParts(r, &t) }()
	}
	if err != nil {
		if e.sendCtx.Err() != nil {
			return Transition{}, false, outcomeOther
		}
		if t, ok := e.carrierWait(r, m, err); ok {
			t.Call = call
			return t, true, outcomeOther
		}
		e.log.Info("send failed", "id", m.ID, "route", m.Route, "attempt", m.Attempt, "err", err)
		e.obs.Problem("carrier_error")
		outcome = outcomeTransient
		if r.classifier.Permanent(err) {
			outcome = outcomeOther
		}
		t = e.failure(r, m, err, "send failed")
		t.Call = call
		return t, true, outcome
	}
	now := e.clock.Now()
	t = Transition{From: StatusSentToNS, Lease: m.Lease, At: now, ExternalID: res.ExternalID, Result: res.Result, Reason: "accepted by carrier", Call: call}
	switch r.Carrier.Path() {
	case PathDirect:
		t.To = StatusDeliverySuccessful
	case PathPush:
		t.To = StatusDeliveredToNS
		t.Deadline = now.Add(r.Policy.Timeouts.Carrier)
		if res.StageTimeout > 0 {
			t.Deadline = now.Add(res.StageTimeout)
		}
	case PathPull:
		t.To = StatusDeliveredToNS
		t.Deadline = now.Add(r.Policy.Timeouts.Carrier)
		t.DueAt = now.Add(r.Policy.NextPoll(true, now.Sub(m.CreatedAt), e.cfg.Random()))
	}
	return t, true, outcomeAccepted
}

// spaceAfterParts pauses the lane of a message sent in parts for its
// route's spacing from now, in t, the transition that records the send:
// the carrier keeps the spacing between the parts, and the lane's spacing
// counts from the claim, so the lane's next message (which its
// concurrency kept back while the parts went) would otherwise go right
// after the last part. A longer pause (backpressure) stays.
func (e *Engine) spaceAfterParts(r *route, t *Transition) {
	spacing := r.Policy.Admission.Spacing
	if spacing <= 0 || t.To == "" {
		return
	}
	if until := e.clock.Now().Add(spacing); until.After(t.PauseUntil) {
		t.PauseUntil, t.PauseReason = until, "spacing after a message sent in parts"
	}
}

// sendOutcome is what a send's answer tells its lane's circuit breaker.
type sendOutcome int

const (
	// outcomeOther tells it nothing: a permanent error (the message, not the
	// endpoint, is wrong), a "not now", a removed route, a shutdown.
	outcomeOther sendOutcome = iota
	// outcomeAccepted: the carrier took the message.
	outcomeAccepted
	// outcomeTransient: the carrier failed in a way a retry may mend.
	outcomeTransient
)

// failure decides what a failed stage leads to: DELIVERY_FAILED when the
// error is permanent or the attempts are used up, TO_RETRY after the
// policy's backoff otherwise. Its timeline entry keeps the error (and the
// answer it carries), for a send the call's duration too (send).
func (e *Engine) failure(r *route, m *Message, cause error, reason string) Transition {
	now := e.clock.Now()
	t := Transition{From: m.Status, Lease: m.Lease, At: now, LastError: cause.Error(), Call: newCall("", cause, 0)}
	switch {
	case r.classifier.Permanent(cause):
		t.To, t.Reason = StatusDeliveryFailed, "permanent error: "+reason
	case m.Attempt >= m.MaxAttempts:
		t.To, t.Reason = StatusDeliveryFailed, fmt.Sprintf("%s; %d of %d attempts used", reason, m.Attempt, m.MaxAttempts)
	default:
		delay := max(e.retryDelay(r, m), retryAfter(cause))
		t.To, t.Reason, t.DueAt = StatusToRetry, reason, now.Add(delay)
	}
	return t
}

// retryDelay returns the wait before m's next attempt: its own Backoff's,
// when it has one, else its route's retry policy's.
func (e *Engine) retryDelay(r *route, m *Message) time.Duration {
	if !m.Backoff.IsZero() {
		return m.Backoff.After(m.Attempt)
	}
	return r.Policy.Retry.Delay(m.Attempt, e.cfg.Random())
}

// progress records how far a resumable send of m got, as its ExternalID,
// under the claim's lease, through a short store outage as a result is
// (retryStore): the status stays, and the deadline is the claim keeper's
// (see claimKeeper.progress).
func (e *Engine) progress(ctx context.Context, m *Message, deadline time.Time, externalID string) error {
	err := e.retryStore(ctx, func() error { // a part the carrier delivered: not to be sent again for a store's blip
		return e.transition(ctx, m, Transition{From: StatusSentToNS, To: StatusSentToNS, Lease: m.Lease,
			Deadline: deadline, ExternalID: externalID})
	})
	if err == nil {
		m.ExternalID = externalID
	}
	return err
}

// backpressure is the answer to a carrier that said "not now, try again
// after wait" (HTTP 429 or 503 with Retry-After, a platform's
// retry_after): the send does not count as an attempt, the message waits
// TO_RETRY until then, and a gated route's lane pauses until then too, so
// that none of its messages is sent before.
func (e *Engine) backpressure(r *route, m *Message, cause error, wait time.Duration) Transition {
	now := e.clock.Now()
	e.problem("backpressure", "carrier asked to wait: lane paused", "id", m.ID, "route", m.Route, "lane", m.Lane, "wait", wait, "err", cause)
	t := Transition{From: m.Status, To: StatusToRetry, Lease: m.Lease, At: now, DueAt: now.Add(wait),
		Reason: "backpressure", LastError: cause.Error(), UndoAttempt: true}
	if r.Policy.Admission.Gated() {
		t.PauseUntil, t.PauseReason = t.DueAt, "backpressure"
	}
	e.obs.Throttled(m.Route, "backpressure", !t.PauseUntil.IsZero())
	return t
}

// record applies t to m for a loop that found m overdue. A conflict means
// another actor (another node's reaper, a send that just finished, a
// cancel) moved the message first: nothing to do.
func (e *Engine) record(ctx context.Context, m *Message, t Transition) {
	err := e.apply(ctx, m, t)
	if errors.Is(err, ErrConflict) {
		e.obs.Problem("reap_conflict")
		e.log.Debug("message moved on before the reaper", "id", m.ID, "from", t.From, "to", t.To)
	}
	if err == nil {
		e.slotFreed(m, t)
	}
}

// slotFreed wakes the dispatcher when t, applied by a loop other than the
// dispatcher (a poll, a deadline, a carrier's event), gave back the
// concurrency slot its message held on a gated route's lane: the lane's
// next message can go at once, not at the dispatcher's next poll.
func (e *Engine) slotFreed(m *Message, t Transition) {
	if _, gated := e.admission[m.Route]; gated && t.From.InFlight() && !t.To.InFlight() {
		e.nudge(e.wake)
	}
}

// recordResult applies the transition that records a carrier's answer. A
// conflict means the claim's lease ran out and the message moved on (retried
// by the reaper, perhaps sent again by another node): a late success is
// adopted, a late failure dropped and counted (late.go). It returns the
// error of the last write.
//
// While the store is unavailable the result is retried a few times, so that
// a short outage does not turn into a second send after the accept timeout.
func (e *Engine) recordResult(ctx context.Context, m *Message, t Transition) error {
	return e.retryStore(ctx, func() error {
		err := e.apply(ctx, m, t)
		if errors.Is(err, ErrConflict) {
			return e.adoptLate(ctx, m, t)
		}
		return err
	})
}

// resultRetries bounds the tries to record a carrier's answer in a store outage.
const resultRetries = 5

// retryStore runs write until it does not fail with ErrStoreUnavailable,
// at most resultRetries times, backing off between tries, and returns its
// last error (or ctx's end).
func (e *Engine) retryStore(ctx context.Context, write func() error) error {
	for try := 1; ; try++ {
		err := write()
		if !errors.Is(err, ErrStoreUnavailable) || try == resultRetries || !e.sleep(ctx, backoff(try)) {
			return err
		}
	}
}

// apply transitions m, reports store errors and schedules the release of a
// retry that is due at once. It returns the transition's error.
func (e *Engine) apply(ctx context.Context, m *Message, t Transition) error {
	err := e.transition(ctx, m, t)
	switch {
	case err == nil && t.To == StatusToRetry:
		e.scheduleRelease(t.DueAt)
	case err != nil && !errors.Is(err, ErrConflict):
		e.problem("store_error", "record transition", "id", m.ID, "to", t.To, slog.Any("err", err))
	}
	return err
}

// scheduleRelease makes the dispatcher release a retry that is due before
// its next poll.
func (e *Engine) scheduleRelease(due time.Time) {
	if due.Sub(e.clock.Now()) <= 0 {
		e.nudge(e.retryPending)
	}
}
