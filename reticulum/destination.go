package reticulum

import (
	"errors"
	"fmt"
	"sync"
)

// Destination is a local SINGLE destination: it can be announced, receives
// packets encrypted to its identity, and accepts links.
type Destination struct {
	node     *Node
	identity *Identity
	hash     Hash
	nameHash [NameHashLen]byte
	name     string

	mu          sync.Mutex
	appData     func() []byte
	onPacket    func(data []byte, p *Packet)
	proveAll    bool
	acceptLinks bool
	linkSetup   func(*Link)
}

// RegisterDestination creates a local destination for identity (which must
// hold its private key) named app.aspects..., e.g. ("lxmf", "delivery").
func (n *Node) RegisterDestination(identity *Identity, app string, aspects ...string) (*Destination, error) {
	if !identity.HasPrivateKey() {
		return nil, errors.New("reticulum: a local destination needs a private key")
	}
	d := &Destination{
		node: n, identity: identity, name: FullName(app, aspects...),
		hash: DestinationHash(identity, app, aspects...), nameHash: NameHash(app, aspects...),
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, dup := n.dests[d.hash]; dup {
		return nil, fmt.Errorf("reticulum: destination %s is already registered", d.hash)
	}
	n.dests[d.hash] = d
	return d, nil
}

// Deregister removes the destination from its node.
func (d *Destination) Deregister() {
	d.node.mu.Lock()
	defer d.node.mu.Unlock()
	delete(d.node.dests, d.hash)
}

// Hash returns the destination hash.
func (d *Destination) Hash() Hash { return d.hash }

// Name returns the full name, e.g. "lxmf.delivery".
func (d *Destination) Name() string { return d.name }

// Identity returns the destination's identity.
func (d *Destination) Identity() *Identity { return d.identity }

// SetAppData sets the function giving the app data of each announce (also
// of announces sent on reconnect and as path responses).
func (d *Destination) SetAppData(f func() []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.appData = f
}

// OnPacket sets the handler of packets to this destination, called with the
// decrypted data.
func (d *Destination) OnPacket(f func(data []byte, p *Packet)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.onPacket = f
}

// SetProveAll makes the destination prove every packet it receives (with an
// implicit proof, as the reference does), before the handler runs.
func (d *Destination) SetProveAll(prove bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.proveAll = prove
}

// AcceptLinks makes the destination accept link requests; setup is called
// with each new link before it is proved, to set its handlers.
func (d *Destination) AcceptLinks(setup func(*Link)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.acceptLinks, d.linkSetup = true, setup
}

// Announce sends an announce of the destination on every interface, with the
// app data SetAppData gives.
func (d *Destination) Announce() error { return d.announce(false, nil) }

func (d *Destination) announce(pathResponse bool, via Interface) error {
	d.mu.Lock()
	f := d.appData
	d.mu.Unlock()
	var app []byte
	if f != nil {
		app = f()
	}
	rnd, err := announceRandomHash(d.node.clock.Now())
	if err != nil {
		return err
	}
	p, err := buildAnnounce(d.identity, d.hash, d.nameHash, rnd, nil, app, pathResponse)
	if err != nil {
		return err
	}
	return d.node.send(p, via)
}

func (d *Destination) receive(p *Packet, from Interface) {
	if p.PacketType != PacketData || p.Context != CtxNone {
		return
	}
	pt, err := d.identity.Decrypt(p.Data)
	if err != nil {
		d.node.log.Debug("reticulum: undecryptable packet", "dest", d.hash, "err", err)
		return
	}
	d.mu.Lock()
	prove, h := d.proveAll, d.onPacket
	d.mu.Unlock()
	if prove {
		if proof, err := proofPacket(d.identity.Sign, p, false); err == nil {
			if err := d.node.send(proof, from); err != nil {
				d.node.log.Debug("reticulum: sending proof failed", "err", err)
			}
		}
	}
	if h != nil {
		h(pt, p)
	}
}
