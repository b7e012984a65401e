package reticulum

import (
	"context"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"sync"
	"time"
)

// LinkStatus is a link's state.
type LinkStatus int

// Link states, as the reference names them.
const (
	LinkPending   LinkStatus = iota // request sent, no proof yet
	LinkHandshake                   // responder: proof sent, no RTT packet yet
	LinkActive
	LinkStale // no inbound traffic for the stale time: torn down soon
	LinkClosed
)

// CloseReason says why a link closed.
type CloseReason int

// Close reasons, as the reference names them.
const (
	CloseNone              CloseReason = iota
	CloseTimeout                       // not established in time, or went stale
	CloseInitiatorClosed               // the initiator tore it down
	CloseDestinationClosed             // the destination tore it down
)

// ErrLinkFailed is returned when a link could not be established in time.
var ErrLinkFailed = errors.New("reticulum: link establishment failed")

// Keep-alive constants of the reference.
const (
	keepaliveMax           = 360 * time.Second
	keepaliveMin           = 5 * time.Second
	keepaliveMaxRTT        = 1.75
	staleFactor            = 2
	keepaliveTimeoutFactor = 4
	staleGrace             = 5 * time.Second
	trafficTimeoutFactor   = 6
)

// LinkHandlers are the callbacks of a link; any may be nil.
type LinkHandlers struct {
	// Packet receives each packet sent over the link (decrypted). Call
	// Link.Prove to send its proof.
	Packet func(l *Link, data []byte, p *Packet)
	// ResourceFilter decides whether to accept an advertised resource of
	// the given size; nil accepts resources up to MaxResourceSize.
	ResourceFilter func(l *Link, size int) bool
	// Resource receives each completed incoming resource; its proof was
	// already sent.
	Resource func(l *Link, data []byte)
	// Identified is called when the initiator identifies itself.
	Identified func(l *Link, id *Identity)
	// Closed is called once when the link closes.
	Closed func(l *Link, reason CloseReason)
}

// MaxResourceSize is the largest resource a link accepts unless a
// ResourceFilter says otherwise (single-segment resources only).
const MaxResourceSize = 1024*1024 - 1

// Link is an encrypted channel between two destinations.
type Link struct {
	node      *Node
	id        Hash
	initiator bool
	dest      Hash
	// destIdentity is the remote destination's identity (initiator) or the
	// local destination's (responder).
	destIdentity *Identity
	iface        Interface
	prv          *ecdh.PrivateKey
	sigPriv      ed25519.PrivateKey
	peerSig      ed25519.PublicKey
	tok          *token
	mtu          int

	mu               sync.Mutex
	handlers         LinkHandlers
	status           LinkStatus
	reason           CloseReason
	requestTime      time.Time
	activatedAt      time.Time
	lastInbound      time.Time
	lastOutbound     time.Time
	lastData         time.Time
	lastKeepalive    time.Time
	staleAt          time.Time
	rtt              time.Duration
	keepalive        time.Duration
	establishTimeout time.Duration
	inactivity       time.Duration
	remote           *Identity
	receipts         map[[FullHashLen]byte]*Receipt
	outgoing         map[[FullHashLen]byte]*outgoingResource
	incoming         map[[FullHashLen]byte]*incomingResource
	established      chan struct{}
	closed           chan struct{}
}

func newLink(n *Node, id Hash, initiator bool) *Link {
	now := n.clock.Now()
	return &Link{
		node: n, id: id, initiator: initiator, mtu: MTU,
		requestTime: now, lastInbound: now, lastOutbound: now, lastData: now,
		keepalive:   keepaliveMax,
		receipts:    map[[FullHashLen]byte]*Receipt{},
		outgoing:    map[[FullHashLen]byte]*outgoingResource{},
		incoming:    map[[FullHashLen]byte]*incomingResource{},
		established: make(chan struct{}), closed: make(chan struct{}),
	}
}

// OpenLink opens a link to dest, whose identity and path must be known, and
// waits until the destination proves it, the establishment timeout passes
// (ErrLinkFailed) or ctx ends. handlers are set before the request is sent.
func (n *Node) OpenLink(ctx context.Context, dest Hash, handlers LinkHandlers) (*Link, error) {
	now := n.clock.Now()
	path, ok := n.store.Path(dest, now)
	if !ok {
		return nil, ErrNoPath
	}
	id, _, err := n.Recall(dest)
	if err != nil {
		return nil, err
	}
	prv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	sigPub, sigPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	req := linkRequestPacket(dest, prv.PublicKey(), sigPub, MTU)
	l := newLink(n, LinkID(req), true)
	l.dest, l.destIdentity, l.prv, l.sigPriv, l.peerSig = dest, id, prv, sigPriv, id.sigPub
	l.handlers = handlers
	l.iface = n.interfaceByName(path.Interface)
	l.establishTimeout = perHopTimeout + perHopTimeout*time.Duration(max(1, int(path.Hops)))
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, ErrClosed
	}
	n.links[l.id] = l
	n.mu.Unlock()
	if err := n.send(req, nil); err != nil {
		l.closeWith(CloseTimeout, false)
		return nil, err
	}
	select {
	case <-l.established:
		return l, nil
	case <-l.closed:
		return nil, ErrLinkFailed
	case <-ctx.Done():
		l.Close()
		return nil, ctx.Err()
	}
}

// handleLinkRequest answers a link request to a local destination that
// accepts links.
func (n *Node) handleLinkRequest(p *Packet, from Interface) {
	n.mu.Lock()
	d := n.dests[p.Destination]
	n.mu.Unlock()
	if d == nil || (len(p.Data) != linkRequestLen && len(p.Data) != linkRequestLen+signallingLen) {
		return
	}
	d.mu.Lock()
	accept, setup := d.acceptLinks, d.linkSetup
	d.mu.Unlock()
	if !accept {
		return
	}
	peer, err := ecdh.X25519().NewPublicKey(p.Data[:32])
	if err != nil {
		return
	}
	mtu := MTU
	if len(p.Data) == linkRequestLen+signallingLen {
		if m, mode := parseSignalling(p.Data[linkRequestLen:]); mode != linkModeAES256CBC {
			return
		} else if m > 0 && m < mtu {
			mtu = m
		}
	}
	prv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return
	}
	l := newLink(n, LinkID(p), false)
	l.dest, l.destIdentity, l.prv, l.sigPriv = d.hash, d.identity, prv, d.identity.sigPriv
	l.peerSig = ed25519.PublicKey(append([]byte{}, p.Data[32:64]...))
	l.iface, l.mtu, l.status = from, mtu, LinkHandshake
	l.establishTimeout = perHopTimeout*time.Duration(max(1, int(p.Hops))) + keepaliveMax
	key, err := linkKey(prv, peer, l.id)
	if err != nil {
		return
	}
	l.tok, _ = newToken(key)
	if setup != nil {
		setup(l)
	}
	proof, err := lrProofPacket(l.id, d.identity, prv.PublicKey(), mtu)
	if err != nil {
		return
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.links[l.id] = l
	n.mu.Unlock()
	l.sendPacket(proof)
}

// ID returns the link id.
func (l *Link) ID() Hash { return l.id }

// Destination returns the hash of the destination the link was opened to.
func (l *Link) Destination() Hash { return l.dest }

// Initiator reports whether this side opened the link.
func (l *Link) Initiator() bool { return l.initiator }

// Status returns the link's state.
func (l *Link) Status() LinkStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

// RTT returns the round-trip time measured at establishment.
func (l *Link) RTT() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rtt
}

// RemoteIdentity returns the identity the initiator identified as, or nil.
func (l *Link) RemoteIdentity() *Identity {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.remote
}

// Closed is closed when the link closes.
func (l *Link) Closed() <-chan struct{} { return l.closed }

// CloseReason says why the link closed (CloseNone while open).
func (l *Link) CloseReason() CloseReason {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reason
}

// SetHandlers replaces the link's handlers.
func (l *Link) SetHandlers(h LinkHandlers) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handlers = h
}

// SetInactivityTimeout makes the link tear itself down after d without data
// in either direction (keep-alives do not count); 0 disables it. LXMF uses
// 10 minutes for delivery links and 3 for propagation links.
func (l *Link) SetInactivityTimeout(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inactivity = d
}

// sendPacket transmits a link packet on the link's interface.
func (l *Link) sendPacket(p *Packet) error {
	err := l.node.send(p, l.iface)
	l.mu.Lock()
	now := l.node.clock.Now()
	l.lastOutbound = now
	if p.Context == CtxKeepalive {
		l.lastKeepalive = now
	} else {
		l.lastData = now
	}
	l.mu.Unlock()
	return err
}

// encryptedPacket builds a DATA packet over the link with encrypted data.
func (l *Link) encryptedPacket(ctx uint8, plaintext []byte) (*Packet, error) {
	ct, err := l.tok.encrypt(plaintext)
	if err != nil {
		return nil, err
	}
	return &Packet{PacketType: PacketData, DestType: DestLink, Destination: l.id, Context: ctx, Data: ct}, nil
}

// Send sends data (at most LinkMDU bytes) as one packet over the link. The
// receipt concludes when the peer proves the packet, or fails after timeout
// (0: six times the link's RTT, at least 5 s).
func (l *Link) Send(data []byte, timeout time.Duration) (*Receipt, error) {
	if len(data) > LinkMDU {
		return nil, errors.New("reticulum: data too large for one link packet")
	}
	if st := l.Status(); st != LinkActive && st != LinkStale {
		return nil, ErrClosed
	}
	p, err := l.encryptedPacket(CtxNone, data)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = max(l.RTT()*trafficTimeoutFactor, 5*time.Second)
	}
	r := newReceipt(p, func(sig, msg []byte) bool { return ed25519.Verify(l.peerSig, msg, sig) }, l.node.clock.Now, timeout)
	l.mu.Lock()
	l.receipts[r.hash] = r
	l.mu.Unlock()
	if err := l.sendPacket(p); err != nil {
		l.mu.Lock()
		delete(l.receipts, r.hash)
		l.mu.Unlock()
		return nil, err
	}
	return r, nil
}

// Prove sends the explicit proof of a packet received over the link, as the
// reference proves link packets.
func (l *Link) Prove(p *Packet) error {
	proof, err := linkProofPacket(l.sigPriv, p, l.id)
	if err != nil {
		return err
	}
	return l.sendPacket(proof)
}

// linkProofPacket builds the explicit proof of a link packet, addressed to
// the link.
func linkProofPacket(key ed25519.PrivateKey, p *Packet, id Hash) (*Packet, error) {
	proof, err := proofPacket(func(m []byte) ([]byte, error) { return ed25519.Sign(key, m), nil }, p, true)
	if err != nil {
		return nil, err
	}
	proof.DestType, proof.Destination = DestLink, id
	return proof, nil
}

// Identify reveals identity to the remote peer over the link (initiator
// only), as the reference's Link.identify does.
func (l *Link) Identify(identity *Identity) error {
	if !l.initiator || l.Status() != LinkActive {
		return errors.New("reticulum: only an active initiator can identify")
	}
	sig, err := identity.Sign(append(l.id.Bytes(), identity.PublicKey()...))
	if err != nil {
		return err
	}
	p, err := l.encryptedPacket(CtxLinkIdentify, append(identity.PublicKey(), sig...))
	if err != nil {
		return err
	}
	return l.sendPacket(p)
}

// Close tears the link down, telling the peer when it was established.
func (l *Link) Close() {
	reason := CloseDestinationClosed
	if l.initiator {
		reason = CloseInitiatorClosed
	}
	l.closeWith(reason, true)
}

// closeWith closes the link once; with notify and an established link it
// sends the reference's teardown packet (the link id, encrypted).
func (l *Link) closeWith(reason CloseReason, notify bool) {
	l.mu.Lock()
	if l.status == LinkClosed {
		l.mu.Unlock()
		return
	}
	wasUp := l.status != LinkPending && l.tok != nil
	l.mu.Unlock()
	if notify && wasUp {
		if p, err := l.encryptedPacket(CtxLinkClose, l.id.Bytes()); err == nil {
			l.sendPacket(p)
		}
	}
	l.mu.Lock()
	if l.status == LinkClosed {
		l.mu.Unlock()
		return
	}
	l.status, l.reason = LinkClosed, reason
	receipts := l.receipts
	l.receipts = map[[FullHashLen]byte]*Receipt{}
	outs := l.outgoing
	l.outgoing = map[[FullHashLen]byte]*outgoingResource{}
	l.incoming = map[[FullHashLen]byte]*incomingResource{}
	onClosed := l.handlers.Closed
	l.mu.Unlock()
	for _, r := range receipts {
		r.conclude(ReceiptFailed)
	}
	for _, o := range outs {
		o.conclude(ResourceFailed)
	}
	l.node.mu.Lock()
	delete(l.node.links, l.id)
	l.node.mu.Unlock()
	close(l.closed)
	if onClosed != nil {
		onClosed(l, reason)
	}
}
