package reticulum

import (
	"log/slog"
	"sync"
	"time"

	rns "github.com/heraldmq/herald/reticulum"
)

// port is one interface of the transport node: a TCP client's connection
// or a local peer's pipe.
type port struct {
	name string
	send func(raw []byte) error
}

// pathEntry is how the transport node reaches a destination: the port its
// announce came in on, its hops, the next hop (the destination itself, or
// the transport node that forwarded it) and the announce, to answer path
// requests with.
type pathEntry struct {
	port     *port
	hops     uint8
	nextHop  rns.Hash
	announce *rns.Packet
}

// linkEntry is a link the node forwards: the port towards its destination
// (nh) and towards its initiator (rcvd), and the hop counts its packets
// arrive with from each side.
type linkEntry struct {
	nh, rcvd      *port
	remHops, hops uint8
	at            time.Time
}

// reverseEntry is where the proof of a forwarded packet goes back to.
type reverseEntry struct {
	rcvd, out *port
	at        time.Time
}

// Table lifetimes: a forwarded packet's proof, a link's packets (kept
// alive by its keep-alives), a path request's tag.
const (
	reverseTimeout = 8 * time.Minute
	linkTimeout    = 15 * time.Minute
	tagTimeout     = time.Minute
)

// transport is a Reticulum transport node, as the reference's Transport
// forwards on a node with transport enabled: it records a path from each
// announce and rebroadcasts it (HEADER_2, its own transport id) on its
// other ports; forwards the packets addressed to it as a next hop along
// those paths, remembering where their proofs and their links' packets go
// back; and answers path requests from its path table.
type transport struct {
	id  rns.Hash // the transport identity's hash
	log *slog.Logger

	mu      sync.Mutex
	ports   map[*port]bool
	paths   map[rns.Hash]pathEntry
	links   map[rns.Hash]linkEntry
	reverse map[rns.Hash]reverseEntry
	tags    map[string]time.Time
	stats   Stats
}

// Stats counts what the transport node did.
type Stats struct {
	Announces    int // announces received and rebroadcast
	PathRequests int // path requests received
	PathAnswers  int // of them answered from the path table
	Forwarded    int // packets forwarded as a next hop, along links or back as proofs
	Dropped      int // packets addressed to it it could not forward
}

func newTransport(id rns.Hash, log *slog.Logger) *transport {
	return &transport{id: id, log: log, ports: map[*port]bool{}, paths: map[rns.Hash]pathEntry{},
		links: map[rns.Hash]linkEntry{}, reverse: map[rns.Hash]reverseEntry{}, tags: map[string]time.Time{}}
}

func (t *transport) attach(p *port) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ports[p] = true
}

// detach removes a port and every path learned on it, as a reference
// node's paths through a dropped interface go.
func (t *transport) detach(p *port) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.ports, p)
	for h, e := range t.paths {
		if e.port == p {
			delete(t.paths, h)
		}
	}
}

// Stats returns what the node did so far.
func (t *transport) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// hasPath reports whether the node knows a path to dest.
func (t *transport) hasPath(dest rns.Hash) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.paths[dest]
	return ok
}

// forget drops the path to dest, as a path expires.
func (t *transport) forget(dest rns.Hash) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.paths, dest)
}

// inbound handles one packet received on from.
func (t *transport) inbound(raw []byte, from *port) {
	raw = append([]byte{}, raw...)
	p, err := rns.ParsePacket(raw)
	if err != nil {
		return
	}
	p.Hops++
	raw[1] = p.Hops
	switch {
	case p.PacketType == rns.PacketAnnounce:
		t.announce(p, from)
	case p.DestType == rns.DestPlain && p.Destination == rns.PathRequestDestination:
		t.pathRequest(p, from)
	default:
		t.forward(p, raw, from)
	}
}

// announce records the path an announce shows and rebroadcasts it on the
// other ports; a path response is recorded, not rebroadcast.
func (t *transport) announce(p *rns.Packet, from *port) {
	if _, err := rns.ParseAnnounce(p); err != nil {
		return
	}
	next := p.Destination
	if p.HeaderType == rns.Header2 {
		next = p.TransportID
	}
	stored := *p
	stored.Data = append([]byte{}, p.Data...)
	t.mu.Lock()
	t.paths[p.Destination] = pathEntry{port: from, hops: p.Hops, nextHop: next, announce: &stored}
	t.stats.Announces++
	var others []*port
	for o := range t.ports {
		if o != from {
			others = append(others, o)
		}
	}
	t.mu.Unlock()
	if p.Context == rns.CtxPathResponse {
		return
	}
	out, err := t.rebroadcast(&stored, rns.CtxNone)
	if err != nil {
		return
	}
	for _, o := range others {
		o.send(out)
	}
}

// rebroadcast is an announce as the node sends it on: HEADER_2 with its
// own transport id, the hops it was heard at, and the given context.
func (t *transport) rebroadcast(a *rns.Packet, context uint8) ([]byte, error) {
	q := *a
	q.HeaderType, q.TransportType, q.TransportID, q.Context = rns.Header2, rns.TransportTransport, t.id, context
	return q.Marshal()
}

// pathRequest answers a path request for a destination in the path table
// with its announce as a path response, on the port it came from; a
// request whose tag it saw is dropped, one for an unknown destination
// ignored (a node on a full-mode interface does not search further).
func (t *transport) pathRequest(p *rns.Packet, from *port) {
	dest, tag, ok := rns.ParsePathRequest(p)
	if !ok {
		return
	}
	now := time.Now()
	key := string(dest[:]) + string(tag[:])
	t.mu.Lock()
	for k, at := range t.tags {
		if now.Sub(at) > tagTimeout {
			delete(t.tags, k)
		}
	}
	_, dup := t.tags[key]
	t.tags[key] = now
	e, known := t.paths[dest]
	if !dup {
		t.stats.PathRequests++
		if known {
			t.stats.PathAnswers++
		}
	}
	t.mu.Unlock()
	if dup || !known || e.port == from {
		return
	}
	if out, err := t.rebroadcast(e.announce, rns.CtxPathResponse); err == nil {
		from.send(out)
	}
}

// forward handles every other packet: one addressed to this node as next
// hop goes on along its destination's path (a link request opens a link
// entry, anything else leaves a reverse entry for its proof); a link's
// packets go to the link's other side; a proof goes back where its packet
// came from.
func (t *transport) forward(p *rns.Packet, raw []byte, from *port) {
	now := time.Now()
	t.mu.Lock()
	t.expire(now)
	var out *port
	var sendRaw []byte
	switch {
	case p.HeaderType == rns.Header2 && p.TransportID == t.id:
		e, ok := t.paths[p.Destination]
		if !ok {
			t.stats.Dropped++
			break
		}
		sendRaw = nextHopRaw(raw, e)
		out = e.port
		if p.PacketType == rns.PacketLinkRequest {
			t.links[rns.LinkID(p)] = linkEntry{nh: e.port, rcvd: from, remHops: e.hops, hops: p.Hops, at: now}
		} else {
			t.reverse[p.TruncatedHash()] = reverseEntry{rcvd: from, out: e.port, at: now}
		}
	case p.PacketType == rns.PacketProof && p.Context == rns.CtxLRProof:
		if le, ok := t.links[p.Destination]; ok && from == le.nh && p.Hops == le.remHops {
			out, sendRaw = le.rcvd, raw
		}
	case p.PacketType != rns.PacketLinkRequest:
		if le, ok := t.links[p.Destination]; ok {
			switch {
			case from == le.nh && p.Hops == le.remHops:
				out, sendRaw = le.rcvd, raw
			case from == le.rcvd && p.Hops == le.hops:
				out, sendRaw = le.nh, raw
			}
			if out != nil {
				le.at = now
				t.links[p.Destination] = le
			}
		} else if re, ok := t.reverse[p.Destination]; ok && p.PacketType == rns.PacketProof && from == re.out {
			delete(t.reverse, p.Destination)
			out, sendRaw = re.rcvd, raw
		}
	}
	if out != nil {
		t.stats.Forwarded++
	}
	t.mu.Unlock()
	if out != nil {
		if err := out.send(sendRaw); err != nil {
			t.log.Debug("reticulum sim: forward failed", "port", out.name, "err", err)
		}
	}
}

// nextHopRaw rewrites a packet addressed to this node for its next hop, as
// the reference does: for a destination one hop away the transport header
// is stripped (HEADER_1, broadcast), for one further away the next hop's
// transport id replaces this node's.
func nextHopRaw(raw []byte, e pathEntry) []byte {
	const idLen = rns.TruncatedHashLen
	if e.hops > 1 {
		out := append([]byte{}, raw...)
		copy(out[2:2+idLen], e.nextHop[:])
		return out
	}
	flags := rns.Header1<<6 | rns.TransportBroadcast<<4 | raw[0]&0x0F
	return append([]byte{flags, raw[1]}, raw[2+idLen:]...)
}

// expire drops link and reverse entries past their lifetimes. The caller
// holds t.mu.
func (t *transport) expire(now time.Time) {
	for k, e := range t.reverse {
		if now.Sub(e.at) > reverseTimeout {
			delete(t.reverse, k)
		}
	}
	for k, e := range t.links {
		if now.Sub(e.at) > linkTimeout {
			delete(t.links, k)
		}
	}
}
