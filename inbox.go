package herald

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
)

// inboxLease is how long a claimed inbox event is hidden from other nodes;
// a node that dies applying it leaves it to be applied after that.
const inboxLease = 30 * time.Second

// inboxBatch bounds the inbox events claimed at once.
const inboxBatch = 100

// inboxRecheck bounds how soon an event whose message has not reached the
// step it answers (a txack before the queue item id is durable, a proof
// that came back before its send's answer was recorded) is looked at
// again: after its age, at least inboxFirstRecheck, at most inboxRecheck.
// The answer it waits for is usually a commit away, so the first looks
// come soon and the later ones back off.
const (
	inboxRecheck      = 500 * time.Millisecond
	inboxFirstRecheck = 5 * time.Millisecond
)

// recheckAfter is how long an event of the given age waits for its
// message's step before it is looked at again.
func recheckAfter(age time.Duration) time.Duration {
	return min(inboxRecheck, max(inboxFirstRecheck, age))
}

// EventUplink is the type of the outcome event that carries a device's
// uplink answering no message.
const EventUplink Status = "uplink"

// ParseEventType parses a subscriber's event type: a status, "uplink",
// a message event's (lxmf.message) or a lane event's (lane.circuit_open,
// lane.circuit_closed).
func ParseEventType(s string) (Status, error) {
	if s == string(EventUplink) || isLaneEvent(Status(s)) || slices.Contains(MessageEventTypes, Status(s)) {
		return Status(s), nil
	}
	return ParseStatus(s)
}

// inboxLoop applies the inbox's events when woken by Ingest or the poll
// interval (on the engine's clock).
func (e *Engine) inboxLoop(ctx context.Context) {
	if !e.takesEvents() {
		return
	}
	e.batchLoop(ctx, "inbox", e.applyInbox, inboxBatch, e.inboundPending)
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
	case InboundMessage:
		s = e.messageEvent(ev)
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
	if s.Later != "" {
		e.wakeInbox(s.DueAt)
	}
	if s.Event != nil && len(s.Notify) > 0 {
		e.nudge(e.eventPending)
	}
}

// wakeInbox makes the inbox loop look at the inbox again at due, when its
// poll would come later.
func (e *Engine) wakeInbox(due time.Time) {
	if d := due.Sub(e.clock.Now()); d < e.cfg.PollInterval {
		e.clock.AfterFunc(d, func() { e.nudge(e.inboundPending) })
	}
}

// onMessage applies ev to the message it is about with the transitions
// apply returns, in order. The message may move meanwhile (another of its
// events, applied at the same time): it is then read again and the
// transitions asked of apply again, a few times. An event whose message
// is not found (its carrier id is not durable yet, or it ended) waits in
// the inbox for it until the route's accept timeout has passed since ev
// arrived, then is dropped and counted.
func (e *Engine) onMessage(ctx context.Context, ev Inbound, apply func(*route, *Message, Inbound) []Transition) (InboundSettle, error) {
	done := InboundSettle{Done: []string{ev.ID}}
	r, ok := e.routes[ev.Route]
	if !ok {
		return done, nil
	}
	for try := 1; ; try++ {
		s, moved, err := e.onMessageOnce(ctx, r, ev, apply)
		if !moved || try == inboxTries {
			if moved {
				e.obs.Inbound(ev.Route, string(ev.Kind), "stale")
			}
			return s, err
		}
	}
}

// inboxTries bounds the tries of onMessage on a message that keeps moving.
const inboxTries = 3

// onMessageOnce is one try of onMessage; moved tells that the message
// moved under it.
func (e *Engine) onMessageOnce(ctx context.Context, r *route, ev Inbound, apply func(*route, *Message, Inbound) []Transition) (s InboundSettle, moved bool, err error) {
	done := InboundSettle{Done: []string{ev.ID}}
	m, err := e.store.FindByExternalID(ctx, ev.Route, ev.ExternalID)
	if errors.Is(err, ErrNotFound) || (err == nil && m.Status == StatusSentToNS) {
		now := e.clock.Now()
		if now.Sub(ev.At) < r.Policy.Timeouts.Accept {
			return InboundSettle{Later: ev.ID, DueAt: now.Add(recheckAfter(now.Sub(ev.At)))}, false, nil
		}
		e.obs.Inbound(ev.Route, string(ev.Kind), "unmatched")
		e.log.Info("carrier event answers no active message: dropped", "route", ev.Route, "kind", ev.Kind, "external_id", ev.ExternalID)
		return done, false, nil
	}
	if err != nil {
		return InboundSettle{}, false, err
	}
	ts := apply(r, m, ev)
	if len(ts) == 0 {
		e.obs.Inbound(ev.Route, string(ev.Kind), "stale") // a repeat, or the message moved on
		return done, false, nil
	}
	for _, t := range ts {
		err = e.apply(ctx, m, t)
		if errors.Is(err, ErrConflict) {
			return done, true, nil
		}
		if err != nil {
			return InboundSettle{}, false, err
		}
		e.slotFreed(m, t)
	}
	e.obs.Inbound(ev.Route, string(ev.Kind), "applied")
	return done, false, nil
}

// transmitted: the network sent m to its device. A message that waits
// for the device's acknowledgement moves to SENT_TO_DEVICE with the device
// timeout; any other is delivered.
//
// A late txack, of an attempt the message moved on from (it waits for its
// next one), delivers a message that awaits no acknowledgement (a late
// answer adopted: late.go); for one that does, only the device's ack says
// it was delivered.
func (e *Engine) transmitted(r *route, m *Message, ev Inbound) []Transition {
	if m.Status != StatusDeliveredToNS && !m.Status.Waiting() {
		return nil
	}
	t := Transition{From: m.Status, Lease: m.Lease, At: e.clock.Now(), Reason: cmp.Or(ev.Reason, "transmitted to the device")}
	awaitsAck := false
	if reader, ok := r.Carrier.(EventReader); ok {
		awaitsAck = reader.AwaitsAck(m)
	}
	switch {
	case m.Status.Waiting() && awaitsAck:
		return nil
	case m.Status.Waiting():
		t.To, t.Reason = StatusDeliverySuccessful, lateReason(m.Attempt, t.Reason)
	case awaitsAck:
		t.To, t.Deadline = StatusSentToDevice, t.At.Add(r.Policy.Timeouts.Device)
	default:
		t.To = StatusDeliverySuccessful
	}
	return []Transition{t}
}

// nack: the device did not acknowledge m; it is retried.
func (e *Engine) nack(r *route, m *Message, _ Inbound) []Transition {
	if !awaitingNetwork(m.Status) {
		return nil
	}
	return []Transition{e.failure(r, m, errors.New("the device did not acknowledge the downlink"), "not acknowledged")}
}

// dropped: the network dropped m (a log event); it is retried, or failed
// when the network's reason is permanent.
func (e *Engine) dropped(r *route, m *Message, ev Inbound) []Transition {
	if !awaitingNetwork(m.Status) {
		return nil
	}
	cause := errors.New(ev.Reason)
	if ev.Permanent {
		cause = Permanent(cause)
	}
	return []Transition{e.failure(r, m, cause, "dropped by the network")}
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
		s.Event = &Event{ID: "uplink." + up.ID, Type: EventUplink, At: now, Data: up.Uplink}
	}
	return s, nil
}

// acknowledged: the device acknowledged m (its uplink paired). An ack
// applied before its txack (the network's events may reach herald out of
// order) records the transmission first, so that the timeline shows every
// stage. A late ack, of an attempt the message moved on from (it waits for
// its next one: the device timeout passed), delivers it all the same: a
// late answer adopted (late.go).
func (e *Engine) acknowledged(r *route, m *Message, ev Inbound) []Transition {
	now := e.clock.Now()
	if m.Status.Waiting() {
		return []Transition{{From: m.Status, To: StatusDeliverySuccessful, Lease: m.Lease, At: now,
			Reason: lateReason(m.Attempt, "acknowledged by the device")}}
	}
	if !awaitingNetwork(m.Status) {
		return nil
	}
	done := Transition{From: m.Status, To: StatusDeliverySuccessful, Lease: m.Lease, At: now, Reason: "acknowledged by the device"}
	if m.Status == StatusSentToDevice {
		return []Transition{done}
	}
	sent := e.transmitted(r, m, ev)[0]
	sent.Reason = "transmitted to the device (its ack came first)"
	if sent.To != StatusSentToDevice {
		return []Transition{sent} // a message that awaits no ack: delivered at transmission
	}
	done.From = StatusSentToDevice
	return []Transition{sent, done}
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

// messageEvent sends a message the network delivered to herald (an LXMF
// message to its own address) to the subscribers of its type, in the
// write that deletes it. One of an unknown type is dropped and counted.
func (e *Engine) messageEvent(ev Inbound) InboundSettle {
	typ := Status(ev.Reason)
	if !slices.Contains(MessageEventTypes, typ) {
		e.obs.Inbound(ev.Route, string(ev.Kind), "ignored")
		e.log.Warn("carrier message event of an unknown type: dropped", "route", ev.Route, "type", ev.Reason)
		return InboundSettle{Done: []string{ev.ID}}
	}
	e.obs.Inbound(ev.Route, string(ev.Kind), "message")
	s := InboundSettle{Done: []string{ev.ID}, Notify: e.notifyFor(typ)}
	if len(s.Notify) > 0 {
		s.Event = &Event{ID: "message." + ev.ID, Type: typ, At: e.clock.Now(), Data: ev.Uplink}
	}
	return s
}
