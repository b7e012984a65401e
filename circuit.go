package herald

import (
	"context"
	"encoding/json"
	"fmt"
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
	key := LaneRef{m.Route, m.Lane}
	switch {
	case ch.Opened:
		e.problem("circuit_open", "lane circuit opened: its messages wait", "route", m.Route, "lane", m.Lane,
			"failures", ch.Failures, "until", ch.Until)
		e.obs.Throttled(m.Route, "circuit_open", true)
		e.dispatchMu.Lock()
		e.openCircuits[key] = ch.Until
		e.dispatchMu.Unlock()
		e.laneEvent(ctx, EventCircuitOpen, m.Route, m.Lane, ch)
	case ch.Closed:
		e.dispatchMu.Lock()
		delete(e.openCircuits, key)
		e.dispatchMu.Unlock()
		e.obs.Problem("circuit_closed")
		e.log.Info("lane circuit closed: its messages go again", "route", m.Route, "lane", m.Lane)
		e.laneEvent(ctx, EventCircuitClosed, m.Route, m.Lane, ch)
	}
}

// heldByCircuit reports whether m, claimed before its lane's circuit opened
// on this node, must not be sent: it then goes back to wait TO_RETRY until
// the cool-down ends, its attempt undone, and the store's claim admits the
// probe. The caller holds dispatchMu.
func (e *Engine) heldByCircuit(m *Message) bool {
	key := LaneRef{m.Route, m.Lane}
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
	EventCircuitOpen   Status = "lane.circuit_open"
	EventCircuitClosed Status = "lane.circuit_closed"
)

// DefaultEventTypes are the events a subscriber that names no types
// receives: the end of each message, the uplinks that answer none, the
// messages addressed to herald itself, and the lane events.
func DefaultEventTypes() []Status {
	return []Status{StatusDeliverySuccessful, StatusDeliveryFailed, EventUplink, EventLXMFMessage, EventCircuitOpen, EventCircuitClosed}
}

// laneEvent enqueues a lane event for each subscriber of its type in the
// outbox, which delivers it as it does the others (retries, dead
// letters). While the store is unavailable it tries a few times, as a
// send's result does.
func (e *Engine) laneEvent(ctx context.Context, typ Status, route, lane string, ch CircuitChange) {
	notify := e.notifyFor(typ)
	if len(notify) == 0 {
		return
	}
	now := e.clock.Now()
	view := LaneEventView{Route: route, Lane: lane, Failures: ch.Failures}
	if ch.Opened {
		view.Until = utcPtr(ch.Until)
	}
	data, err := json.Marshal(view)
	if err != nil {
		e.problem("event_lost", "encode lane event", "type", typ, "err", err)
		return
	}
	ev := &Event{ID: fmt.Sprintf("%s.%s.%s.%d", typ, route, lane, now.UnixMilli()), Type: typ, At: now, Data: data}
	err = e.retryStore(ctx, func() error { return e.store.SettleInbound(ctx, InboundSettle{Event: ev, Notify: notify}) })
	if err != nil {
		e.problem("event_lost", "store lane event", "type", typ, "route", route, "lane", lane, "err", err)
		return
	}
	e.nudge(e.eventPending)
}

// isLaneEvent reports whether typ is the type of a lane event.
func isLaneEvent(typ Status) bool {
	return typ == EventCircuitOpen || typ == EventCircuitClosed
}
