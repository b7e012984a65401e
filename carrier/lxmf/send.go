package lxmf

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/reticulum"
	lxm "github.com/heraldmq/herald/reticulum/lxmf"
)

// The reference's outbound loop (LXMRouter): the wait after a path
// request, and the attempts an opportunistic message makes without a
// path before it asks for one.
const (
	PathRequestWait  = lxm.PathRequestWait
	MaxPathlessTries = 1
)

// proofGrace is how long after a packet's receipt fails the message stays
// DELIVERED_TO_NS (its stage timeout): the reaper then retries it.
const proofGrace = time.Second

// resourceStageTimeout bounds the wait for a resource's proof once its
// parts went out: the reference's sender gives up on a quiet transfer
// after about 30 s.
const resourceStageTimeout = 45 * time.Second

// Send makes one attempt of the message, as the reference's outbound loop
// makes one: it returns once the packet, or every part of the resource,
// is on the wire (the message is then DELIVERED_TO_NS, awaiting the
// proof, which comes back as an event), or with the wait the attempt asks
// for (a path requested), or with its failure.
func (c *Carrier) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	dest, err := parseAddress(m.Target)
	if err != nil {
		return herald.SendResult{}, herald.Permanent(err)
	}
	if err := c.ep.Start(); err != nil {
		return herald.SendResult{}, fmt.Errorf("lxmf endpoint: %w", err)
	}
	msg := c.ep.router.NewMessage(dest, []byte(m.Params[ParamTitle]), content(m), nil)
	msg.Timestamp = float64(m.CreatedAt.UnixNano()) / 1e9 // the same id at every attempt, on every node
	if err := c.ep.router.Prepare(ctx, msg); err != nil {
		return herald.SendResult{}, fmt.Errorf("pack the message: %w", err)
	}
	method, pn := c.cfg.Method, c.cfg.PropagationNode
	if f := c.fallback; f != nil && m.Attempt >= m.MaxAttempts {
		method, pn = f.cfg.Method, f.cfg.PropagationNode
	}
	if method == Opportunistic && msg.ContentSize() > lxm.EncryptedPacketMaxContent {
		method = Direct // as the reference falls back for content that does not fit a packet
	}
	var d *lxm.Delivery
	switch method {
	case Opportunistic:
		d, err = c.opportunistic(ctx, m, msg)
	case Direct:
		d, err = c.direct(ctx, m, msg)
	default:
		d, err = c.propagated(ctx, m, msg, pn)
	}
	if err != nil {
		return herald.SendResult{}, err
	}
	return c.sent(ctx, m, msg, d, method)
}

// opportunistic sends the message as one packet: along its path, or on
// the first attempt without one (the reference's pathless try). Without a
// path later it asks for one; with one on the attempt after the pathless
// try and the next (the path did not deliver) it drops it and asks again.
func (c *Carrier) opportunistic(ctx context.Context, m *herald.Message, msg *lxm.Message) (*lxm.Delivery, error) {
	dest, node := msg.Destination, c.ep.node
	_, _, idErr := node.Recall(dest)
	switch {
	case !node.HasPath(dest) && (m.Attempt > MaxPathlessTries || idErr != nil):
		return nil, c.askPath(m, dest, !c.waits(m), "no path to the recipient")
	case node.HasPath(dest) && m.Attempt == MaxPathlessTries+2:
		node.Store().DropPath(dest)
		return nil, c.askPath(m, dest, true, "two attempts along the recipient's path were not proved: path dropped")
	}
	pathless := !node.HasPath(dest)
	if pathless {
		c.ep.requestPath(dest, c.cfg.Now()) // as the reference asks when it first has no path
	}
	d, res := c.ep.router.BeginOpportunistic(ctx, msg, pathless)
	if d == nil {
		return nil, c.failed(m, dest, res)
	}
	return d, nil
}

// direct sends the message over a link to the recipient: as a packet, or
// as a resource when it is larger than one.
func (c *Carrier) direct(ctx context.Context, m *herald.Message, msg *lxm.Message) (*lxm.Delivery, error) {
	if !c.ep.node.HasPath(msg.Destination) {
		return nil, c.askPath(m, msg.Destination, !c.waits(m), "no path to the recipient")
	}
	d, res := c.ep.router.BeginDirect(ctx, msg)
	if d == nil {
		return nil, c.failed(m, msg.Destination, res)
	}
	return d, nil
}

// propagated uploads the message to the propagation node pn, which needs
// a path to the node and the recipient's identity (the upload is
// encrypted to it).
func (c *Carrier) propagated(ctx context.Context, m *herald.Message, msg *lxm.Message, pn reticulum.Hash) (*lxm.Delivery, error) {
	if !c.ep.node.HasPath(pn) {
		return nil, c.askPath(m, pn, !c.waits(m), "no path to the propagation node")
	}
	if _, _, err := c.ep.node.Recall(msg.Destination); err != nil {
		return nil, c.askPath(m, msg.Destination, !c.waits(m), "the recipient's identity is not known yet")
	}
	d, res := c.ep.router.BeginPropagated(ctx, pn, msg)
	if d == nil {
		return nil, c.failed(m, pn, res)
	}
	return d, nil
}

// waits reports whether m may wait for a path without spending its
// attempts: the route sets wait_for_path and m is younger than it.
func (c *Carrier) waits(m *herald.Message) bool {
	return c.cfg.WaitForPath > 0 && c.cfg.Now().Sub(m.CreatedAt) < c.cfg.WaitForPath
}

// askPath requests a path to dest and makes the message wait
// PathRequestWait for it (explain: path_requested). counted says whether
// the attempt counts: as the reference counts it, unless the message may
// wait for its path (wait_for_path).
func (c *Carrier) askPath(m *herald.Message, dest reticulum.Hash, counted bool, why string) error {
	sent := c.ep.requestPath(dest, c.cfg.Now())
	c.log.Info("lxmf: path requested", "id", m.ID, "dest", dest, "attempt", m.Attempt, "counted", counted, "sent", sent, "why", why)
	return herald.WaitFor(PathRequestWait, herald.ReasonPathRequested, counted, fmt.Errorf("%s (%s): path requested", why, dest))
}

// failed turns an attempt that did not reach the wire into the engine's
// answer: a path asked for when there was none after all, a permanent
// error for what no retry changes, a transient one otherwise (a link that
// could not be established: its path is asked for again, as the
// reference does). The error carries the outcome as its answer code
// ("no path", "rejected"), which the message's timeline keeps.
func (c *Carrier) failed(m *herald.Message, dest reticulum.Hash, res lxm.Result) error {
	return herald.WithAnswer(res.Outcome.String(), c.failure(m, dest, res))
}

// failure is failed's error, classified.
func (c *Carrier) failure(m *herald.Message, dest reticulum.Hash, res lxm.Result) error {
	switch res.Outcome {
	case lxm.NoPath, lxm.NoIdentity:
		return c.askPath(m, dest, !c.waits(m), res.Outcome.String())
	case lxm.LinkFailed:
		c.ep.requestPath(dest, c.cfg.Now())
		return fmt.Errorf("link to %s not established: %w", dest, res.Err)
	case lxm.Rejected:
		return herald.Permanent(fmt.Errorf("rejected: %w", res.Err))
	}
	return fmt.Errorf("lxmf: %s: %w", res.Outcome, res.Err)
}

// sent waits until the attempt is on the wire (a resource's parts go out
// as the receiver asks for them) and answers the engine: accepted
// (DELIVERED_TO_NS, for as long as its proof may come), or the attempt's
// end when it came first. It watches for the proof from then on.
func (c *Carrier) sent(ctx context.Context, m *herald.Message, msg *lxm.Message, d *lxm.Delivery, method Method) (herald.SendResult, error) {
	hash := hex.EncodeToString(msg.Hash[:])
	select {
	case <-d.Sent():
	case <-ctx.Done():
		return herald.SendResult{}, fmt.Errorf("the %s was still going out when the call ended: %w", d.Representation, ctx.Err())
	}
	select {
	case <-d.Done():
		switch res := d.Result(); res.Outcome {
		case lxm.Delivered, lxm.Accepted: // proved while the rest went out: its event follows
		case lxm.Rejected:
			return herald.SendResult{}, herald.WithAnswer(res.Outcome.String(), herald.Permanent(fmt.Errorf("rejected: %w", res.Err)))
		default:
			return herald.SendResult{}, herald.WithAnswer(res.Outcome.String(), fmt.Errorf("%s: %v", res.Outcome, res.Err))
		}
	default:
	}
	go c.watch(m.ID, hash, d, method)
	timeout := resourceStageTimeout
	if !d.Deadline.IsZero() {
		timeout = time.Until(d.Deadline) + proofGrace
	}
	return herald.SendResult{ExternalID: hash, StageTimeout: timeout,
		Result: map[string]string{"method": string(method), "representation": d.Representation}}, nil
}
