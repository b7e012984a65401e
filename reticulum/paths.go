package reticulum

import (
	"context"
	"crypto/rand"
	"errors"
	"time"
)

// ErrNoPath is returned when no path to a destination is known: request one
// (RequestPath) and wait (WaitForPath) before trying again.
var ErrNoPath = errors.New("reticulum: no path known")

// ErrUnknownIdentity is returned when a destination's public key is not
// known because no announce of it was received.
var ErrUnknownIdentity = errors.New("reticulum: destination identity not known")

// HasPath reports whether a path to dest is known.
func (n *Node) HasPath(dest Hash) bool {
	_, ok := n.store.Path(dest, n.clock.Now())
	return ok
}

// HopsTo returns the number of hops to dest, and whether a path is known.
func (n *Node) HopsTo(dest Hash) (uint8, bool) {
	p, ok := n.store.Path(dest, n.clock.Now())
	return p.Hops, ok
}

// Recall returns the identity and last app data announced for dest.
func (n *Node) Recall(dest Hash) (*Identity, []byte, error) {
	k, ok := n.store.Known(dest)
	if !ok {
		return nil, nil, ErrUnknownIdentity
	}
	id, err := IdentityFromPublicKey(k.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return id, k.AppData, nil
}

// RequestPath sends a path request for dest on every interface. A node that
// knows the path answers with an announce, which WaitForPath sees.
func (n *Node) RequestPath(dest Hash) error {
	var tag Hash
	if _, err := rand.Read(tag[:]); err != nil {
		return err
	}
	return n.send(pathRequestPacket(dest, tag), nil)
}

// WaitForPath blocks until a path to dest is known (an announce or path
// response arrives) or ctx ends.
func (n *Node) WaitForPath(ctx context.Context, dest Hash) error {
	for {
		n.mu.Lock()
		if n.HasPath(dest) {
			n.mu.Unlock()
			return nil
		}
		ch := make(chan struct{})
		n.waiters[dest] = append(n.waiters[dest], ch)
		n.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// reannounce announces every local destination, as after a reconnection.
func (n *Node) reannounce() {
	n.mu.Lock()
	ds := make([]*Destination, 0, len(n.dests))
	for _, d := range n.dests {
		ds = append(ds, d)
	}
	n.mu.Unlock()
	for _, d := range ds {
		if err := d.Announce(); err != nil {
			n.log.Debug("reticulum: announce failed", "dest", d.hash, "err", err)
		}
	}
}

// answerPathRequest answers a path request for one of our destinations with
// a path-response announce on the interface it came from.
func (n *Node) answerPathRequest(dest, _ Hash, from Interface) {
	n.mu.Lock()
	d := n.dests[dest]
	n.mu.Unlock()
	if d != nil {
		if err := d.announce(true, from); err != nil {
			n.log.Debug("reticulum: path response failed", "dest", dest, "err", err)
		}
	}
}

// SendPacket encrypts data to dest (to its announced ratchet when it has a
// current one) and sends it as one packet: along its path, or, when none
// is known but its identity is (its path expired or was dropped), on every
// interface, as the reference sends a packet whose path it does not know.
// The receipt concludes when the destination's proof arrives or after
// timeout (0 means the reference's default: 6 s per hop plus a first-hop
// allowance, one hop when no path is known). It returns ErrNoPath when
// neither path nor identity is known.
func (n *Node) SendPacket(dest Hash, data []byte, timeout time.Duration) (*Receipt, error) {
	if len(data) > EncryptedMDU {
		return nil, errors.New("reticulum: data too large for one packet")
	}
	path, hasPath := n.store.Path(dest, n.clock.Now())
	k, ok := n.store.Known(dest)
	switch {
	case !ok && !hasPath:
		return nil, ErrNoPath
	case !ok:
		return nil, ErrUnknownIdentity
	}
	id, err := IdentityFromPublicKey(k.PublicKey)
	if err != nil {
		return nil, err
	}
	var ratchet []byte
	if k.Ratchet != nil && n.clock.Now().Sub(k.RatchetReceived) < ratchetExpiry {
		ratchet = k.Ratchet
	}
	ct, err := id.Encrypt(data, ratchet)
	if err != nil {
		return nil, err
	}
	p := &Packet{PacketType: PacketData, DestType: DestSingle, Destination: dest, Data: ct}
	if timeout <= 0 {
		timeout = perHopTimeout*time.Duration(max(1, int(path.Hops))) + perHopTimeout
	}
	r := newReceipt(p, id.Verify, n.clock.Now, timeout)
	n.mu.Lock()
	n.receipts[p.TruncatedHash()] = r
	n.mu.Unlock()
	if err := n.send(p, nil); err != nil {
		n.mu.Lock()
		delete(n.receipts, p.TruncatedHash())
		n.mu.Unlock()
		return nil, err
	}
	return r, nil
}

// perHopTimeout is the reference's DEFAULT_PER_HOP_TIMEOUT.
const perHopTimeout = 6 * time.Second
