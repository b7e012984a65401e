package lxmf

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldmq/herald"
	lxm "github.com/heraldmq/herald/reticulum/lxmf"
)

// The events the carrier hands the engine (Listen), by type.
const (
	// EventDelivered: the recipient proved the message, or the
	// propagation node took it.
	EventDelivered = "delivered"
	// EventRejected: the recipient declined it, or the propagation node
	// refused its stamp: permanent.
	EventRejected = "rejected"
	// EventMessage: an LXMF message addressed to herald.
	EventMessage = "message"
)

// eventQueue bounds the events waiting for the engine. A proof that does
// not fit is dropped (logged): its message is retried after its stage
// timeout, and the recipient, which has it, proves the copy.
const eventQueue = 4096

// lateWatch is how long after an opportunistic attempt's deadline its
// proof is still watched for (the node keeps the receipt longer,
// reticulum.LateProofWindow): the next attempt comes 10 s after the
// deadline, and each watch is a goroutine.
const lateWatch = 2 * time.Minute

// event is one event for the engine: its type and JSON body.
type event struct {
	typ  string
	body []byte
}

// proof is the body of a delivered or rejected event. Its fields make the
// event's id (the engine's hash of route, type and body): the proofs of
// two attempts of a message are one event, taken once.
type proof struct {
	Hash   string `json:"hash"`
	How    string `json:"how,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// push queues an event for Listen, or drops it when the queue is full.
func (c *Carrier) push(typ string, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		return
	}
	select {
	case c.events <- event{typ: typ, body: b}:
	default:
		c.log.Warn("lxmf: event queue full: event dropped", "type", typ)
	}
}

// watch waits for an attempt's proof, or its rejection, and queues the
// event: a proof that comes after the attempt timed out (the message is
// then waiting for its next attempt, or at it) is still queued, up to
// lateWatch after the attempt's deadline.
func (c *Carrier) watch(id, hash string, d *lxm.Delivery, method Method) {
	how := "proved by the recipient"
	if method == Propagated {
		how = "accepted by the propagation node"
	}
	bound := resourceStageTimeout
	if !d.Deadline.IsZero() {
		bound = time.Until(d.Deadline)
	}
	late := time.NewTimer(bound + lateWatch)
	defer late.Stop()
	for done := d.Done(); ; {
		select {
		case <-d.Proved():
			c.push(EventDelivered, proof{Hash: hash, How: how})
			return
		case <-done:
			switch res := d.Result(); {
			case res.Outcome == lxm.Delivered || res.Outcome == lxm.Accepted:
				c.push(EventDelivered, proof{Hash: hash, How: how})
				return
			case res.Outcome == lxm.Rejected:
				c.push(EventRejected, proof{Hash: hash, Reason: res.Err.Error()})
				return
			case method != Opportunistic:
				return // a link's packet or resource: no proof comes once it failed
			}
			c.log.Info("lxmf: no proof in time; a late one is still taken", "id", id, "hash", hash)
			done = nil
		case <-late.C:
			return
		case <-c.stop:
			return
		}
	}
}

// received queues a message addressed to herald for the subscribers.
func (c *Carrier) received(m *lxm.Received) {
	c.push(EventMessage, inboundView(m))
}

// Listen hands the carrier's events to the engine while it runs: each
// is durable in the inbox once ingest returns nil; one the store does not
// take is offered again, a little later. It starts the endpoint first,
// and asks for the paths of the propagation nodes the route may upload
// to, so that the first upload need not wait for one.
func (c *Carrier) Listen(ctx context.Context, ingest herald.IngestFunc) error {
	if err := c.ep.Start(); err != nil {
		return fmt.Errorf("lxmf endpoint: %w", err)
	}
	done := make(chan struct{})
	defer func() { <-done }()
	go func() {
		defer close(done)
		c.askNodePaths(ctx)
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-c.events:
			for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
				err := ingest(ctx, ev.typ, "application/json", ev.body)
				if err == nil {
					break
				}
				c.log.Warn("lxmf: event not stored; offered again", "type", ev.typ, "err", err, "in", wait)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(wait):
				}
			}
		}
	}
}

// askNodePaths asks for the paths of the propagation nodes the route
// uploads to (its own, its fallback's), once the endpoint is connected.
func (c *Carrier) askNodePaths(ctx context.Context) {
	for _, f := range []*Carrier{c, c.fallback} {
		if f == nil || f.cfg.Method != Propagated {
			continue
		}
		for pn := f.cfg.PropagationNode; !c.ep.node.HasPath(pn) && !c.ep.requestPath(pn, c.cfg.Now()); {
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
}

// ReadEvent turns an event the carrier handed the engine into an inbox
// event: a proof delivers its message (found by its LXMF hash, the
// external id), a rejection fails it, a message to herald goes to the
// subscribers.
func (c *Carrier) ReadEvent(eventType, _ string, body []byte) (herald.Inbound, bool, error) {
	switch eventType {
	case EventDelivered, EventRejected:
		var p proof
		if err := json.Unmarshal(body, &p); err != nil || p.Hash == "" {
			return herald.Inbound{}, false, herald.Invalid("body", "not an lxmf proof")
		}
		if eventType == EventRejected {
			return herald.Inbound{Kind: herald.InboundFailed, ExternalID: p.Hash, Reason: p.Reason, Permanent: true}, true, nil
		}
		return herald.Inbound{Kind: herald.InboundTransmitted, ExternalID: p.Hash, Reason: p.How}, true, nil
	case EventMessage:
		return herald.Inbound{Kind: herald.InboundMessage, Reason: string(herald.EventLXMFMessage), Uplink: body}, true, nil
	}
	return herald.Inbound{}, false, herald.Invalid("event", "unknown lxmf event type %q", clip(eventType))
}

// AwaitsAck is false: a proof is the end.
func (c *Carrier) AwaitsAck(*herald.Message) bool { return false }

// IngressSecret is empty: the carrier takes no HTTP events (ListenOnly).
func (c *Carrier) IngressSecret() string { return "" }

// ListenOnly marks the carrier's events as its own node's: the HTTP
// ingress takes none.
func (c *Carrier) ListenOnly() {}
