package reticulum

import (
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Config configures a [Node].
type Config struct {
	// Interfaces the node sends and receives on (usually one TCPClient).
	Interfaces []Interface
	// StorePath is the file that keeps the path table and known identities
	// across restarts; empty keeps them in memory.
	StorePath string
	// Clock is the time source; default SystemClock.
	Clock Clock
	// Logger; default slog.Default().
	Logger *slog.Logger
	// HousekeepingInterval is how often timeouts and keep-alives are
	// checked; default 1s.
	HousekeepingInterval time.Duration
}

// ErrClosed is returned by operations on a closed node or link.
var ErrClosed = errors.New("reticulum: closed")

// Node is a Reticulum endpoint (not a transport node): it sends and receives
// on its interfaces, hosts local destinations, learns paths and identities
// from announces, tracks delivery receipts, and holds links.
type Node struct {
	cfg   Config
	clock Clock
	log   *slog.Logger
	store *Store

	mu         sync.Mutex
	closed     bool
	dests      map[Hash]*Destination
	receipts   map[Hash]*Receipt // by the sent packet's truncated hash
	late       map[Hash]*Receipt // failed receipts that still take a late proof, likewise
	links      map[Hash]*Link    // by link id
	seen       map[[FullHashLen]byte]time.Time
	waiters    map[Hash][]chan struct{}
	onAnnounce []func(*Announce)

	stop chan struct{}
	wg   sync.WaitGroup
}

// seenExpiry is how long a packet hash is remembered to drop duplicates.
const seenExpiry = 10 * time.Minute

// NewNode opens the store and returns a node; Start brings it up.
func NewNode(cfg Config) (*Node, error) {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HousekeepingInterval <= 0 {
		cfg.HousekeepingInterval = time.Second
	}
	st, err := OpenStore(cfg.StorePath)
	if err != nil {
		return nil, err
	}
	return &Node{
		cfg: cfg, clock: cfg.Clock, log: cfg.Logger, store: st,
		dests: map[Hash]*Destination{}, receipts: map[Hash]*Receipt{}, late: map[Hash]*Receipt{}, links: map[Hash]*Link{},
		seen: map[[FullHashLen]byte]time.Time{}, waiters: map[Hash][]chan struct{}{},
		stop: make(chan struct{}),
	}, nil
}

// Start starts the interfaces and the housekeeping loop.
func (n *Node) Start() {
	for _, ifc := range n.cfg.Interfaces {
		ifc := ifc
		if tc, ok := ifc.(*TCPClient); ok && tc.OnConnect == nil {
			tc.OnConnect = n.reannounce
		}
		ifc.Start(func(raw []byte) { n.inbound(raw, ifc) })
	}
	t := n.clock.NewTicker(n.cfg.HousekeepingInterval)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer t.Stop()
		for {
			select {
			case <-n.stop:
				return
			case <-t.C():
				n.housekeep()
			}
		}
	}()
}

// Close tears down links, stops the interfaces and saves the store.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	links := make([]*Link, 0, len(n.links))
	for _, l := range n.links {
		links = append(links, l)
	}
	n.mu.Unlock()
	for _, l := range links {
		l.Close()
	}
	close(n.stop)
	n.wg.Wait()
	for _, ifc := range n.cfg.Interfaces {
		ifc.Close()
	}
	n.mu.Lock()
	for _, r := range n.receipts {
		r.conclude(ReceiptFailed)
	}
	n.receipts, n.late = map[Hash]*Receipt{}, map[Hash]*Receipt{}
	n.mu.Unlock()
	return n.store.Save()
}

// Store returns the node's path table and known-identities store.
func (n *Node) Store() *Store { return n.store }

// Clock returns the node's clock.
func (n *Node) Clock() Clock { return n.clock }

// OnAnnounce registers f to be called for each valid announce received.
func (n *Node) OnAnnounce(f func(*Announce)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.onAnnounce = append(n.onAnnounce, f)
}

// housekeep runs timeouts, keep-alives and the periodic store save.
func (n *Node) housekeep() {
	now := n.clock.Now()
	n.mu.Lock()
	var expired []*Receipt
	for k, r := range n.receipts {
		if now.After(r.deadline) {
			expired = append(expired, r)
			delete(n.receipts, k)
			n.late[k] = r
		}
	}
	for k, r := range n.late {
		if now.Sub(r.deadline) > LateProofWindow {
			delete(n.late, k)
		}
	}
	for h, t := range n.seen {
		if now.Sub(t) > seenExpiry {
			delete(n.seen, h)
		}
	}
	links := make([]*Link, 0, len(n.links))
	for _, l := range n.links {
		links = append(links, l)
	}
	n.mu.Unlock()
	for _, r := range expired {
		r.conclude(ReceiptFailed)
	}
	for _, l := range links {
		l.watchdog(now)
	}
	if err := n.store.Save(); err != nil {
		n.log.Warn("reticulum: saving the store failed", "err", err)
	}
}

// interfaceByName returns the interface called name, or nil.
func (n *Node) interfaceByName(name string) Interface {
	for _, ifc := range n.cfg.Interfaces {
		if ifc.Name() == name {
			return ifc
		}
	}
	return nil
}

// send transmits a packet. Packets to a destination with a known path more
// than one hop away go as HEADER_2 through the path's next hop, on the
// interface the path was learned on; link packets go on the link's
// interface; everything else is broadcast on every interface.
func (n *Node) send(p *Packet, via Interface) error {
	if via == nil && p.PacketType != PacketAnnounce && (p.DestType == DestSingle) && p.HeaderType == Header1 {
		if path, ok := n.store.Path(p.Destination, n.clock.Now()); ok {
			via = n.interfaceByName(path.Interface)
			if path.Hops > 1 {
				q := *p
				q.HeaderType, q.TransportType, q.TransportID = Header2, TransportTransport, path.NextHop
				p = &q
			}
		}
	}
	raw, err := p.Marshal()
	if err != nil {
		return err
	}
	if via != nil {
		return via.Send(raw)
	}
	var sent bool
	var lastErr error = ErrInterfaceDown
	for _, ifc := range n.cfg.Interfaces {
		if err := ifc.Send(raw); err != nil {
			lastErr = err
			continue
		}
		sent = true
	}
	if !sent {
		return lastErr
	}
	return nil
}

// markSeen records a packet hash and reports whether it was new.
func (n *Node) markSeen(h [FullHashLen]byte) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, dup := n.seen[h]; dup {
		return false
	}
	n.seen[h] = n.clock.Now()
	return true
}

// accept is the reference's packet filter for a node that is not a
// transport node: packets addressed to a transport node are not ours;
// keep-alives and resource traffic repeat identical bytes and are never
// deduplicated; PLAIN and GROUP packets are taken from direct neighbours
// only; everything else is taken once.
func (n *Node) accept(p *Packet) bool {
	if p.HeaderType == Header2 {
		return false
	}
	switch p.Context {
	case CtxKeepalive, CtxResourceReq, CtxResourcePRF, CtxResource, CtxCacheRequest, CtxChannel:
		return true
	}
	if p.DestType == DestPlain || p.DestType == DestGroup {
		return p.Hops <= 1
	}
	if p.PacketType == PacketProof && p.Context == CtxLRProof {
		return true
	}
	return n.markSeen(p.Hash())
}

// inbound handles one received packet.
func (n *Node) inbound(raw []byte, from Interface) {
	p, err := ParsePacket(raw)
	if err != nil {
		n.log.Debug("reticulum: dropping malformed packet", "err", err)
		return
	}
	p.Hops++
	if p.PacketType == PacketAnnounce {
		n.handleAnnounce(p, from)
		return
	}
	if !n.accept(p) {
		return
	}
	switch p.PacketType {
	case PacketLinkRequest:
		n.handleLinkRequest(p, from)
	case PacketData:
		n.handleData(p, from)
	case PacketProof:
		n.handleProof(p)
	}
}

func (n *Node) handleData(p *Packet, from Interface) {
	switch p.DestType {
	case DestLink:
		if l := n.link(p.Destination); l != nil {
			l.receive(p)
		}
	case DestPlain:
		if dest, tag, ok := ParsePathRequest(p); ok {
			n.answerPathRequest(dest, tag, from)
		}
	case DestSingle:
		n.mu.Lock()
		d := n.dests[p.Destination]
		n.mu.Unlock()
		if d != nil {
			d.receive(p, from)
		}
	}
}

func (n *Node) handleProof(p *Packet) {
	if p.Context == CtxLRProof {
		if l := n.link(p.Destination); l != nil {
			l.validateLinkProof(p)
		}
		return
	}
	if p.DestType == DestLink {
		if l := n.link(p.Destination); l != nil {
			l.receiveProof(p)
		}
		return
	}
	n.mu.Lock()
	r, late := n.receipts[p.Destination], false
	if r == nil {
		r, late = n.late[p.Destination], true
	}
	n.mu.Unlock()
	if r == nil || !validProof(p.Data, r.hash, r.verify) {
		return
	}
	n.mu.Lock()
	delete(n.receipts, p.Destination)
	delete(n.late, p.Destination)
	n.mu.Unlock()
	if late {
		r.markProved()
		return
	}
	r.conclude(ReceiptDelivered)
}

func (n *Node) link(id Hash) *Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[id]
}

func (n *Node) handleAnnounce(p *Packet, from Interface) {
	a, err := ParseAnnounce(p)
	if err != nil {
		n.log.Debug("reticulum: dropping invalid announce", "dest", p.Destination, "err", err)
		return
	}
	n.mu.Lock()
	_, local := n.dests[a.Destination]
	n.mu.Unlock()
	if local {
		return
	}
	now := n.clock.Now()
	if k, ok := n.store.Known(a.Destination); ok && string(k.PublicKey) != string(a.Identity.PublicKey()) {
		n.log.Warn("reticulum: announce with another public key for a known destination; rejected", "dest", a.Destination)
		return
	}
	next := a.Destination
	if a.ViaTransport {
		next = a.TransportID
	}
	if old, ok := n.store.Path(a.Destination, now); !ok || a.Hops <= old.Hops || a.PathResponse || now.Sub(old.Updated) > time.Minute || old.NextHop == next {
		n.store.SetPath(a.Destination, PathEntry{NextHop: next, Hops: a.Hops, Interface: from.Name(), Updated: now, Expires: now.Add(pathExpiry)})
	}
	n.store.Remember(a.Destination, a.Identity.PublicKey(), a.AppData, a.Ratchet, now)
	n.mu.Lock()
	ws := n.waiters[a.Destination]
	delete(n.waiters, a.Destination)
	handlers := append([]func(*Announce){}, n.onAnnounce...)
	n.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
	for _, f := range handlers {
		f(a)
	}
}
