package herald

import (
	"context"
	"errors"
	"time"
)

// inboxLease is how long a claimed inbox event is hidden from other nodes;
// a node that dies applying it leaves it to be applied after that.
const inboxLease = 30 * time.Second

// inboxBatch bounds the inbox events claimed at once.
const inboxBatch = 100

// inboxRecheck is how soon an event whose message has not reached the step
// it answers (a txack before the queue item id is durable) is looked at
// again.
const inboxRecheck = 500 * time.Millisecond

// EventUplink is the type of the outcome event that carries a device's
// uplink answering no message.
const EventUplink Status = "uplink"

// ParseEventType parses a subscriber's event type: a status, or "uplink".
func ParseEventType(s string) (Status, error) {
	if s == string(EventUplink) {
		return EventUplink, nil
	}
	return ParseStatus(s)
}

// inboxLoop applies the inbox's events when woken by Ingest or the poll
// interval (on the engine's clock).
func (e *Engine) inboxLoop(ctx context.Context) {
	if !e.takesEvents() {
		return
	}
	poll := e.newAlarm(e.cfg.PollInterval)
	defer func() { poll.stop() }()
	failures := 0
	for {
		n, err := e.applyInbox(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			failures++
			e.problem("store_error", "inbox", "err", err)
			if !e.sleep(ctx, backoff(failures)) {
				return
			}
			continue
		case n == inboxBatch:
			continue
		}
		failures = 0
		e.park()
		select {
		case <-ctx.Done():
			e.unpark()
			return
		case <-e.inboundPending:
		case <-poll.c:
			poll = e.newAlarm(e.cfg.PollInterval)
		}
	}
}

// takesEvents reports whether any route's network sends events back.
func (e *Engine) takesEvents() bool {
	for _, r := range e.routes {
		if _, ok := r.Carrier.(EventReader); ok {
			return true
		}
	}
	return false
}

// applyInbox claims the due inbox events and applies them, one goroutine
// each. It returns how many it claimed.
func (e *Engine) applyInbox(ctx context.Context) (int, error) {
	now := e.clock.Now()
	events, err := e.store.ClaimInbound(ctx, now, inboxBatch, now.Add(inboxLease))
	if err != nil {
		return 0, err
	}
	done := make(chan struct{}, len(events))
	for _, ev := range events {
		go func() {
			e.applyInbound(ctx, ev)
			done <- struct{}{}
		}()
	}
	for range events {
		<-done
	}
	return len(events), nil
}

// applyInbound applies one inbox event to its message and settles it.
func (e *Engine) applyInbound(ctx context.Context, ev Inbound) {
	var s InboundSettle
	var err error
	switch ev.Kind {
	case InboundUplink:
		s, err = e.applyUplink(ctx, ev)
	case InboundAck:
		if ev.Acknowledged {
			s, err = e.applyAck(ctx, ev)
		} else {
			s, err = e.onMessage(ctx, ev, e.nack)
		}
	case InboundTransmitted:
		s, err = e.onMessage(ctx, ev, e.transmitted)
	case InboundFailed:
		s, err = e.onMessage(ctx, ev, e.dropped)
	default:
		e.obs.Inbound(ev.Route, string(ev.Kind), "ignored")
		s = InboundSettle{Done: []string{ev.ID}}
	}
	if err != nil {
		e.problem("store_error", "apply carrier event", "route", ev.Route, "event", ev.ID, "err", err)
		return // the event comes back after its lease
	}
	if err := e.store.SettleInbound(ctx, s); err != nil {
		e.problem("store_error", "settle carrier event", "route", ev.Route, "event", ev.ID, "err", err)
		return
	}
	if s.Uplink != nil && len(s.Notify) > 0 {
		e.nudge(e.eventPending)
	}
}

// onMessage applies ev to the message it is about with apply. An event
// whose message is not found (its carrier id is not durable yet) waits in
// the inbox for it until the route's accept timeout has passed since ev
// arrived, then is dropped and counted.
func (e *Engine) onMessage(ctx context.Context, ev Inbound, apply func(*route, *Message, Inbound) (Transition, bool)) (InboundSettle, error) {
	done := InboundSettle{Done: []string{ev.ID}}
	r, ok := e.routes[ev.Route]
	if !ok {
		return done, nil
	}
	m, err := e.store.FindByExternalID(ctx, ev.Route, ev.ExternalID)
	if errors.Is(err, ErrNotFound) || (err == nil && m.Status == StatusSentToNS) {
		now := e.clock.Now()
		if now.Sub(ev.At) < r.Policy.Timeouts.Accept {
			return InboundSettle{Later: ev.ID, DueAt: now.Add(inboxRecheck)}, nil
		}
		e.obs.Inbound(ev.Route, string(ev.Kind), "unmatched")
		e.log.Warn("carrier event answers no message: dropped", "route", ev.Route, "kind", ev.Kind, "external_id", ev.ExternalID)
		return done, nil
	}
	if err != nil {
		return InboundSettle{}, err
	}
	t, ok := apply(r, m, ev)
	if !ok {
		e.obs.Inbound(ev.Route, string(ev.Kind), "stale") // a repeat, or the message moved on
		return done, nil
	}
	err = e.apply(ctx, m, t)
	switch {
	case errors.Is(err, ErrConflict):
		e.obs.Inbound(ev.Route, string(ev.Kind), "stale")
	case err != nil:
		return InboundSettle{}, err
	default:
		e.obs.Inbound(ev.Route, string(ev.Kind), "applied")
	}
	return done, nil
}

// transmitted: the network sent m to its device. A message that waits
// for the device's acknowledgement moves to SENT_TO_DEVICE with the device
// timeout; any other is delivered.
func (e *Engine) transmitted(r *route, m *Message, ev Inbound) (Transition, bool) {
	if m.Status != StatusDeliveredToNS {
		return Transition{}, false
	}
	t := Transition{From: m.Status, Lease: m.Lease, At: e.clock.Now(), Reason: "transmitted to the device"}
	if reader, ok := r.Carrier.(EventReader); ok && reader.AwaitsAck(m) {
		t.To, t.Deadline = StatusSentToDevice, t.At.Add(r.Policy.Timeouts.Device)
		return t, true
	}
	t.To = StatusDeliverySuccessful
	return t, true
}

// nack: the device did not acknowledge m; it is retried.
func (e *Engine) nack(r *route, m *Message, ev Inbound) (Transition, bool) {
	if !awaitingNetwork(m.Status) {
		return Transition{}, false
	}
	return e.failure(r, m, errors.New("the device did not acknowledge the downlink"), "not acknowledged"), true
}

// dropped: the network dropped m (a log event); it is retried, or failed
// when the network's reason is permanent.
func (e *Engine) dropped(r *route, m *Message, ev Inbound) (Transition, bool) {
	if !awaitingNetwork(m.Status) {
		return Transition{}, false
	}
	cause := errors.New(ev.Reason)
	if ev.Permanent {
		cause = Permanent(cause)
	}
	return e.failure(r, m, cause, "dropped by the network"), true
}

// awaitingNetwork reports whether a message in status s waits for its
// network's events: handed over, not yet answered.
func awaitingNetwork(s Status) bool {
	return s == StatusDeliveredToNS || s == StatusSentToDevice
}

// applyAck applies a device's acknowledgement: it delivers its message
// once the device's uplink of the same correlation is in the inbox within
// AckWindow of it; alone, it waits for that uplink until AckWindow has
// passed, then is dropped.
func (e *Engine) applyAck(ctx context.Context, ack Inbound) (InboundSettle, error) {
	up, err := e.partner(ctx, ack, InboundUplink)
	if err != nil || up == nil {
		return e.lone(ack), err
	}
	s, err := e.onMessage(ctx, ack, e.acknowledged)
	if s.Later == "" {
		s.Done = append(s.Done, up.ID)
	}
	return s, err
}

// applyUplink pairs an uplink with its ack; an uplink that answers no
// message goes to the subscribers as an uplink event once AckWindow has
// passed without an ack.
func (e *Engine) applyUplink(ctx context.Context, up Inbound) (InboundSettle, error) {
	ack, err := e.partner(ctx, up, InboundAck)
	if err != nil {
		return InboundSettle{}, err
	}
	if ack != nil {
		return e.applyAck(ctx, *ack)
	}
	now := e.clock.Now()
	if now.Sub(up.At) < AckWindow {
		return InboundSettle{Later: up.ID, DueAt: up.At.Add(AckWindow)}, nil
	}
	e.obs.Inbound(up.Route, string(up.Kind), "uplink")
	s := InboundSettle{Done: []string{up.ID}, Notify: e.notifyFor(EventUplink)}
	if len(s.Notify) > 0 {
		s.Uplink = &Event{ID: "uplink." + up.ID, Type: EventUplink, At: now, Data: up.Uplink}
	}
	return s, nil
}

// acknowledged: the device acknowledged m (its uplink paired).
func (e *Engine) acknowledged(r *route, m *Message, ev Inbound) (Transition, bool) {
	if !awaitingNetwork(m.Status) {
		return Transition{}, false
	}
	return Transition{From: m.Status, To: StatusDeliverySuccessful, Lease: m.Lease, At: e.clock.Now(), Reason: "acknowledged by the device"}, true
}

// partner returns the inbox event of kind that pairs with ev: the same
// route and correlation, received within AckWindow of it; or nil.
func (e *Engine) partner(ctx context.Context, ev Inbound, kind InboundKind) (*Inbound, error) {
	if ev.Correlation == "" {
		return nil, nil
	}
	evs, err := e.store.InboundByCorrelation(ctx, ev.Route, ev.Correlation)
	if err != nil {
		return nil, err
	}
	for _, p := range evs {
		gap := p.At.Sub(ev.At)
		if p.Kind == kind && p.ID != ev.ID && gap <= AckWindow && gap >= -AckWindow && (kind != InboundAck || p.Acknowledged) {
			return &p, nil
		}
	}
	return nil, nil
}

// lone settles an ack whose uplink has not come: it waits until AckWindow
// has passed since it arrived, then is dropped and counted.
func (e *Engine) lone(ack Inbound) InboundSettle {
	now := e.clock.Now()
	if now.Sub(ack.At) < AckWindow {
		return InboundSettle{Later: ack.ID, DueAt: ack.At.Add(AckWindow)}
	}
	e.obs.Inbound(ack.Route, string(ack.Kind), "unpaired")
	e.log.Warn("device ack without its uplink within the window: dropped", "route", ack.Route, "external_id", ack.ExternalID)
	return InboundSettle{Done: []string{ack.ID}}
}
