package herald

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrNoIngress is returned by Ingest for a route that takes no events: it
// is unknown, or its carrier's network sends none back.
var ErrNoIngress = errors.New("route takes no carrier events")

// Ingest takes one event that route's network sent back (eventType as the
// network names it: ChirpStack's up, ack, txack, log, join, status) and
// makes it durable in the store's inbox before it returns nil: the caller
// may then acknowledge it. The inbox loop applies it to its message.
//
// It returns an *InvalidError for a malformed body or an unknown event
// type (refused: see RefuseEvent), and ErrNoIngress for a route that
// takes no events; both change nothing. An event that says nothing herald acts on (a join, a status)
// returns nil and is only counted (Observer.Inbound).
func (e *Engine) Ingest(ctx context.Context, route, eventType, contentType string, body []byte) error {
	reader, ok := e.eventReader(route)
	if !ok {
		return fmt.Errorf("route %q: %w", route, ErrNoIngress)
	}
	ev, act, err := reader.ReadEvent(eventType, contentType, body)
	if err != nil {
		e.RefuseEvent(route, RefusedInvalid, err.Error())
		return err
	}
	if !act {
		e.obs.Inbound(route, eventType, "ignored")
		return nil
	}
	now := e.clock.Now()
	ev.ID, ev.Route, ev.At, ev.DueAt = eventID(route, eventType, body), route, now, now
	if err := e.store.AddInbound(ctx, ev); err != nil {
		e.problem("store_error", "store carrier event", "route", route, "event", eventType, "err", err)
		return fmt.Errorf("store carrier event: %w", err)
	}
	e.obs.Inbound(route, string(ev.Kind), "stored")
	e.nudge(e.inboundPending)
	return nil
}

// eventID names an event by its route, type and body: the same event
// received twice (by two nodes subscribed to the same broker, or posted
// again) is stored once while it waits in the inbox.
func eventID(route, eventType string, body []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(route), {0}, []byte(eventType), {0}, body} {
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// IngressSecret returns the bearer token route's network sends with its
// events, and whether route takes events over HTTP at all: not when its
// carrier takes none, or only through its Listener (ListenOnly).
func (e *Engine) IngressSecret(route string) (secret string, ok bool) {
	reader, ok := e.eventReader(route)
	if !ok {
		return "", false
	}
	if _, listenOnly := reader.(ListenOnly); listenOnly {
		return "", false
	}
	return reader.IngressSecret(), true
}

// eventReader returns the carrier of route when its network sends events
// back.
func (e *Engine) eventReader(route string) (EventReader, bool) {
	r, ok := e.routes[route]
	if !ok {
		return nil, false
	}
	reader, ok := r.Carrier.(EventReader)
	return reader, ok
}

// listen runs the Listen of every route whose carrier receives its
// network's events itself, until ctx ends; a listener that stops with an
// error is logged.
func (e *Engine) listen(ctx context.Context) {
	for name, r := range e.routes {
		l, ok := r.Carrier.(Listener)
		if !ok {
			continue
		}
		e.loops.Add(1)
		go func() {
			defer e.loops.Done()
			ingest := func(ctx context.Context, eventType, contentType string, body []byte) error {
				return e.Ingest(ctx, name, eventType, contentType, body)
			}
			if err := l.Listen(ctx, ingest); err != nil && ctx.Err() == nil {
				e.problem("carrier_error", "carrier event listener stopped", "route", name, "err", err)
			}
		}()
	}
}
