package herald

import (
	"context"
	"fmt"
	"time"
)

// reportCircuit feeds the circuit breaker of m's lane, when its route has
// one, with the outcome of m's send: a transient failure (failed) or a
// success. An open or a close is logged, counted and sent to the
// subscribers.
func (e *Engine) reportCircuit(ctx context.Context, m *Message, failed bool) {
	r := e.routes[m.Route]
	if r == nil || r.Policy.Admission.Circuit.Failures == 0 {
		return
	}
	ch, err := e.store.ReportCircuit(ctx, CircuitReport{Route: m.Route, Lane: m.Lane, At: e.clock.Now(), Failed: failed})
	if err != nil {
		e.problem("store_error", "record the lane's circuit", "route", m.Route, "lane", m.Lane, "err", err)
		return
	}
	key := laneKey{m.Route, m.Lane}
	switch {
	case ch.Opened:
		e.problem("circuit_open", "lane circuit opened: its messages wait", "route", m.Route, "lane", m.Lane,
			"failures", ch.Failures, "until", ch.Until)
		e.obs.Throttled(m.Route, "circuit_open", true)
		e.dispatchMu.Lock()
		e.openCircuits[key] = ch.Until
		e.dispatchMu.Unlock()
		e.laneEvent(EventCircuitOpen, m.Route, m.Lane, ch)
	case ch.Closed:
		e.dispatchMu.Lock()
		delete(e.openCircuits, key)
		e.dispatchMu.Unlock()
		e.obs.Problem("circuit_closed")
		e.log.Info("lane circuit closed: its messages go again", "route", m.Route, "lane", m.Lane)
		e.laneEvent(EventCircuitClosed, m.Route, m.Lane, ch)
	}
}

// laneKey names a lane: its route and lane.
type laneKey struct{ route, lane string }

// heldByCircuit reports whether m, claimed before its lane's circuit opened
// on this node, must not be sent: it then goes back to wait TO_RETRY until
// the cool-down ends, its attempt undone, and the store's claim admits the
// probe. The caller holds dispatchMu.
func (e *Engine) heldByCircuit(m *Message) bool {
	key := laneKey{m.Route, m.Lane}
	until, open := e.openCircuits[key]
	if !open {
		return false
	}
	now := e.clock.Now()
	if !now.Before(until) {
		delete(e.openCircuits, key)
		return false
	}
	e.spawn(func() {
		defer func() { <-e.pending }()
		e.recordResult(e.sendCtx, m, Transition{From: StatusSentToNS, To: StatusToRetry, Lease: m.Lease, At: now,
			DueAt: until, Reason: "circuit_open", LastError: "the lane's circuit is open", UndoAttempt: true})
	})
	return true
}

// The types of lane events sent to subscribers.
const (
	EventCircuitOpen   = "lane.circuit_open"
	EventCircuitClosed = "lane.circuit_closed"
)

// laneEventTries bounds the deliveries of one lane event to a subscriber.
const laneEventTries = 3

// laneEvent sends a lane event to every subscriber, in the background,
// with a few tries. Unlike outcome events, lane events are not kept in the
// store: one in flight when the process stops is lost.
func (e *Engine) laneEvent(typ, route, lane string, ch CircuitChange) {
	now := e.clock.Now()
	ev := OutcomeEvent{
		ID: fmt.Sprintf("%s.%s.%s.%d", typ, route, lane, now.UnixMilli()), Type: Status(typ), At: now.UTC(),
		Lane: &LaneEventView{Route: route, Lane: lane, Failures: ch.Failures},
	}
	if ch.Opened {
		ev.Lane.Until = utcPtr(ch.Until)
	}
	for _, sub := range e.subscribers {
		e.spawn(func() {
			for try := 1; try <= laneEventTries; try++ {
				ctx, cancel := context.WithTimeout(e.sendCtx, 10*time.Second)
				err := sub.Sink.Deliver(ctx, ev)
				cancel()
				if err == nil || e.sendCtx.Err() != nil {
					return
				}
				e.problem("event_retry", "deliver lane event", "subscriber", sub.Name, "type", typ, "err", err)
				if !e.sleep(e.sendCtx, backoff(try)) {
					return
				}
			}
		})
	}
}
