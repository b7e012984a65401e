package lxmf

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldmq/herald/reticulum"
)

// Outcome is the result of one send attempt.
type Outcome int

// Outcomes.
const (
	// Delivered: the recipient proved the message (opportunistic: the
	// packet's proof; direct: the link packet's proof or the resource's).
	Delivered Outcome = iota
	// Accepted: a propagation node proved the upload; the recipient gets it
	// when it syncs.
	Accepted
	// Rejected: the recipient declined the resource, or the propagation
	// node refused the stamp.
	Rejected
	// NoPath: no path is known; request one and wait before retrying.
	NoPath
	// NoIdentity: no announce of the destination was received yet.
	NoIdentity
	// LinkFailed: the link could not be established or closed mid-send.
	LinkFailed
	// TimedOut: no proof arrived in time.
	TimedOut
	// Failed: another error, in Result.Err.
	Failed
)

var outcomeNames = [...]string{"delivered", "accepted", "rejected", "no path", "no identity", "link failed", "timed out", "failed"}

func (o Outcome) String() string { return outcomeNames[o] }

// Result is the outcome of one send attempt.
type Result struct {
	Outcome Outcome
	// Representation is "packet" or "resource".
	Representation string
	Err            error
}

func failed(err error) Result {
	switch {
	case errors.Is(err, reticulum.ErrNoPath):
		return Result{Outcome: NoPath, Err: err}
	case errors.Is(err, reticulum.ErrUnknownIdentity):
		return Result{Outcome: NoIdentity, Err: err}
	case errors.Is(err, reticulum.ErrLinkFailed):
		return Result{Outcome: LinkFailed, Err: err}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return Result{Outcome: TimedOut, Err: err}
	}
	return Result{Outcome: Failed, Err: err}
}

// Delivery is one send attempt handed to the network: its packet, or its
// resource's parts, go out (Sent), then its proof is awaited (Done). The
// Begin methods return it once the attempt is on the wire, so that the
// caller need not hold a goroutine per proof awaited.
type Delivery struct {
	// Representation is "packet" or "resource".
	Representation string
	// Deadline is when a packet's receipt fails without its proof; zero
	// for a resource, which its link's watchdog ends (the reference's
	// timeouts: tens of seconds after its last part).
	Deadline time.Time

	sent   <-chan struct{}
	proved <-chan struct{}
	done   chan struct{}
	result Result
}

// Sent is closed once the attempt is all on the wire: at once for a
// packet, once every part went out for a resource (or when it ends
// before).
func (d *Delivery) Sent() <-chan struct{} { return d.sent }

// Done is closed when the attempt concludes; Result then says how.
func (d *Delivery) Done() <-chan struct{} { return d.done }

// Result is how the attempt concluded; valid once Done is closed.
func (d *Delivery) Result() Result { return d.result }

// Proved is closed when the attempt's proof arrives: the recipient (or
// the propagation node) has the message. For a packet sent to a
// destination (opportunistic) it also closes when the proof comes after
// Done reported TimedOut, within reticulum.LateProofWindow.
func (d *Delivery) Proved() <-chan struct{} { return d.proved }

// Wait blocks until the attempt concludes or ctx ends (TimedOut).
func (d *Delivery) Wait(ctx context.Context) Result {
	select {
	case <-d.done:
		return d.result
	case <-ctx.Done():
		return Result{Outcome: TimedOut, Representation: d.Representation, Err: ctx.Err()}
	}
}

// packetDelivery follows a packet's receipt: ok when it is proved,
// TimedOut when it fails; then onFail(result) for a failed attempt.
func packetDelivery(rc *reticulum.Receipt, ok Outcome, rejected <-chan struct{}, onFail func(Result)) *Delivery {
	sent := make(chan struct{})
	close(sent)
	d := &Delivery{Representation: "packet", Deadline: rc.Deadline(), sent: sent, proved: rc.Proved(), done: make(chan struct{})}
	go func() {
		var res Result
		select {
		case <-rejected:
			res = Result{Outcome: Rejected, Representation: "packet", Err: errRejectedStamp}
		case <-rc.Done():
			select {
			case <-rejected: // the node's refusal came with (or before) its proof
				res = Result{Outcome: Rejected, Representation: "packet", Err: errRejectedStamp}
			default:
				res = Result{Outcome: ok, Representation: "packet"}
				if rc.Status() != reticulum.ReceiptDelivered {
					res = Result{Outcome: TimedOut, Representation: "packet", Err: errors.New("lxmf: no proof before the receipt timed out")}
				}
			}
		}
		d.finish(res, onFail)
	}()
	return d
}

// resourceDelivery follows a resource: ok when the receiver proves it,
// Rejected when it declines it (or rejected closes), LinkFailed when the
// transfer fails; then onFail(result) for a failed attempt.
func resourceDelivery(rs *reticulum.Resource, ok Outcome, rejected <-chan struct{}, onFail func(Result)) *Delivery {
	proved := make(chan struct{})
	d := &Delivery{Representation: "resource", sent: rs.Sent(), proved: proved, done: make(chan struct{})}
	go func() {
		var res Result
		select {
		case <-rejected:
			res = Result{Outcome: Rejected, Representation: "resource", Err: errRejectedStamp}
		case <-rs.Done():
			switch rs.Status() {
			case reticulum.ResourceComplete:
				res = Result{Outcome: ok, Representation: "resource"}
				close(proved)
			case reticulum.ResourceRejected:
				res = Result{Outcome: Rejected, Representation: "resource", Err: errors.New("lxmf: the receiver declined the resource")}
			default:
				res = Result{Outcome: LinkFailed, Representation: "resource", Err: errors.New("lxmf: resource transfer failed")}
			}
		}
		d.finish(res, onFail)
	}()
	return d
}

var errRejectedStamp = errors.New("lxmf: propagation node rejected the stamp")

func (d *Delivery) finish(res Result, onFail func(Result)) {
	d.result = res
	if res.Outcome != Delivered && res.Outcome != Accepted && onFail != nil {
		onFail(res)
	}
	close(d.done)
}

// dropLinkOnFailure tears down a link whose send went unproved, as the
// reference does, so the next attempt opens a fresh link: the path may have
// changed or a transport node may have forgotten the link.
func dropLinkOnFailure(l *reticulum.Link) func(Result) {
	return func(res Result) {
		if res.Outcome == TimedOut || res.Outcome == LinkFailed {
			l.Close()
		}
	}
}

func (r *Router) ensurePacked(ctx context.Context, m *Message) error {
	if m.Packed != nil {
		return nil
	}
	return r.Prepare(ctx, m)
}

// BeginOpportunistic sends m as one packet encrypted to the recipient and
// returns its Delivery, which concludes with the packet's proof or its
// receipt's timeout. Without a known path it returns NoPath, unless
// pathless is set and the recipient's identity is known: the packet then
// goes on every interface, as the reference's first, pathless try does.
func (r *Router) BeginOpportunistic(ctx context.Context, m *Message, pathless bool) (*Delivery, Result) {
	if !pathless && !r.node.HasPath(m.Destination) {
		return nil, failed(reticulum.ErrNoPath)
	}
	if err := r.ensurePacked(ctx, m); err != nil {
		return nil, failed(err)
	}
	if m.ContentSize() > EncryptedPacketMaxContent {
		return nil, Result{Outcome: Failed, Err: fmt.Errorf("lxmf: content of %d bytes is too large for opportunistic delivery", m.ContentSize())}
	}
	rc, err := r.node.SendPacket(m.Destination, m.Packed[DestinationLength:], 0)
	if err != nil {
		return nil, failed(err)
	}
	return packetDelivery(rc, Delivered, nil, nil), Result{}
}

// BeginDirect sends m over a link to the recipient's lxmf.delivery (opened
// or reused, which may take a round trip): as one packet when it fits,
// else as a resource. It returns once the packet, or the resource's
// advertisement, is sent; the Delivery concludes with the proof. A link
// whose send goes unproved is torn down.
func (r *Router) BeginDirect(ctx context.Context, m *Message) (*Delivery, Result) {
	if !r.node.HasPath(m.Destination) {
		return nil, failed(reticulum.ErrNoPath)
	}
	if err := r.ensurePacked(ctx, m); err != nil {
		return nil, failed(err)
	}
	l, err := r.deliveryLink(ctx, m.Destination)
	if err != nil {
		return nil, failed(err)
	}
	if m.ContentSize() <= LinkPacketMaxContent {
		rc, err := l.Send(m.Packed, 0)
		if err != nil {
			return nil, failed(err)
		}
		return packetDelivery(rc, Delivered, nil, dropLinkOnFailure(l)), Result{}
	}
	rs, err := l.SendResource(m.Packed)
	if err != nil {
		return nil, failed(err)
	}
	return resourceDelivery(rs, Delivered, nil, dropLinkOnFailure(l)), Result{}
}

// BeginPropagated uploads m to the propagation node pn (its
// lxmf.propagation hash): encrypted to the recipient, with a propagation
// stamp at the cost the node announces, as one link packet or a resource.
// The Delivery concludes Accepted when the node proves the upload, or
// Rejected when it refuses the stamp (it sends msgpack [0xf5] and tears
// the link down).
func (r *Router) BeginPropagated(ctx context.Context, pn reticulum.Hash, m *Message) (*Delivery, Result) {
	if !r.node.HasPath(pn) {
		return nil, failed(reticulum.ErrNoPath)
	}
	_, pnApp, err := r.node.Recall(pn)
	if err != nil {
		return nil, failed(err)
	}
	cfg, ok := ParsePropagationAppData(pnApp)
	if !ok {
		return nil, Result{Outcome: Failed, Err: errors.New("lxmf: the propagation node's announce is not valid propagation node data")}
	}
	recipient, _, err := r.node.Recall(m.Destination)
	if err != nil {
		return nil, failed(err)
	}
	if err := r.ensurePacked(ctx, m); err != nil {
		return nil, failed(err)
	}
	var ratchet []byte
	if k, ok := r.node.Store().Known(m.Destination); ok {
		ratchet = k.Ratchet
	}
	pd, err := EncryptForPropagation(m, recipient, ratchet)
	if err != nil {
		return nil, failed(err)
	}
	stamp, err := GenerateStamp(ctx, pd.TransientID[:], cfg.StampCost, WorkblockRoundsPN)
	if err != nil {
		return nil, failed(err)
	}
	container, err := pd.Container(float64(r.node.Clock().Now().UnixNano())/1e9, stamp)
	if err != nil {
		return nil, failed(err)
	}
	pl, err := r.propagationLink(ctx, pn)
	if err != nil {
		return nil, failed(err)
	}
	if len(container) <= LinkPacketMaxContent {
		rc, err := pl.link.Send(container, 0)
		if err != nil {
			return nil, failed(err)
		}
		return packetDelivery(rc, Accepted, pl.rejected, dropLinkOnFailure(pl.link)), Result{}
	}
	rs, err := pl.link.SendResource(container)
	if err != nil {
		return nil, failed(err)
	}
	return resourceDelivery(rs, Accepted, pl.rejected, dropLinkOnFailure(pl.link)), Result{}
}

// wait makes a Begin method a blocking send: it waits for the Delivery's
// end, or for ctx.
func wait(ctx context.Context, d *Delivery, res Result) Result {
	if d == nil {
		return res
	}
	return d.Wait(ctx)
}

// SendOpportunistic sends m as one packet encrypted to the recipient and
// waits for its proof (or the receipt's timeout, or ctx).
func (r *Router) SendOpportunistic(ctx context.Context, m *Message) Result {
	d, res := r.BeginOpportunistic(ctx, m, false)
	return wait(ctx, d, res)
}

// SendDirect sends m over a link to the recipient's lxmf.delivery (opened
// or reused): as one packet when it fits, else as a resource; it waits for
// the packet's or resource's proof.
func (r *Router) SendDirect(ctx context.Context, m *Message) Result {
	d, res := r.BeginDirect(ctx, m)
	return wait(ctx, d, res)
}

// SendPropagated uploads m to the propagation node pn and waits for the
// node's proof (Accepted) or refusal (Rejected); see BeginPropagated.
func (r *Router) SendPropagated(ctx context.Context, pn reticulum.Hash, m *Message) Result {
	d, res := r.BeginPropagated(ctx, pn, m)
	return wait(ctx, d, res)
}
