package lxmf

import (
	"context"
	"sync"
	"time"

	"github.com/heraldmq/herald/reticulum"
	"github.com/vmihailenco/msgpack/v5"
)

// Delivery methods, as the reference numbers them.
const (
	MethodOpportunistic = 0x01
	MethodDirect        = 0x02
	MethodPropagated    = 0x03
)

// Link inactivity timeouts of the reference (LINK_MAX_INACTIVITY and
// P_LINK_MAX_INACTIVITY), the defaults of RouterConfig.
const (
	LinkMaxInactivity            = 10 * time.Minute
	PropagationLinkMaxInactivity = 3 * time.Minute
	// PathRequestWait is how long the reference waits for a path after
	// requesting one.
	PathRequestWait = 7 * time.Second
)

// RouterConfig configures a Router.
type RouterConfig struct {
	// Identity of the local lxmf.delivery destination (with private key).
	Identity *reticulum.Identity
	// DisplayName and StampCost go into announces; StampCost > 0 asks
	// senders for a stamp (received messages report StampValid).
	DisplayName string
	StampCost   int
	// OnMessage receives each new message addressed to this destination.
	OnMessage func(*Received)
	// AcceptResource decides whether to take a message offered as a
	// resource of the given size over a delivery link; nil takes every
	// one. Declining it is the reference's rejection (REJECTED at the
	// sender).
	AcceptResource func(size int) bool
	// Inactivity timeouts of cached delivery and propagation links.
	LinkInactivity            time.Duration
	PropagationLinkInactivity time.Duration
}

// Received is an inbound message and how it came.
type Received struct {
	*Message
	Method int // MethodOpportunistic or MethodDirect
	// StampValid is set when the router requires a stamp.
	StampValid bool
}

// Router is an LXMF endpoint on a reticulum.Node: one lxmf.delivery
// destination that receives messages, and single-attempt sends.
type Router struct {
	node *reticulum.Node
	cfg  RouterConfig
	dest *reticulum.Destination

	mu      sync.Mutex
	links   map[reticulum.Hash]*reticulum.Link
	pnLinks map[reticulum.Hash]*pnLink
	seen    map[[reticulum.FullHashLen]byte]time.Time
}

type pnLink struct {
	link     *reticulum.Link
	rejected chan struct{}
	once     sync.Once
}

// NewRouter registers the lxmf.delivery destination of cfg.Identity on node.
func NewRouter(node *reticulum.Node, cfg RouterConfig) (*Router, error) {
	if cfg.LinkInactivity <= 0 {
		cfg.LinkInactivity = LinkMaxInactivity
	}
	if cfg.PropagationLinkInactivity <= 0 {
		cfg.PropagationLinkInactivity = PropagationLinkMaxInactivity
	}
	d, err := node.RegisterDestination(cfg.Identity, "lxmf", "delivery")
	if err != nil {
		return nil, err
	}
	r := &Router{node: node, cfg: cfg, dest: d, links: map[reticulum.Hash]*reticulum.Link{},
		pnLinks: map[reticulum.Hash]*pnLink{}, seen: map[[reticulum.FullHashLen]byte]time.Time{}}
	app, err := DeliveryAppData(cfg.DisplayName, cfg.StampCost)
	if err != nil {
		return nil, err
	}
	d.SetAppData(func() []byte { return app })
	d.SetProveAll(true)
	d.OnPacket(func(data []byte, _ *reticulum.Packet) {
		r.deliver(append(d.Hash().Bytes(), data...), MethodOpportunistic)
	})
	d.AcceptLinks(func(l *reticulum.Link) {
		l.SetInactivityTimeout(cfg.LinkInactivity)
		l.SetHandlers(reticulum.LinkHandlers{
			Packet: func(l *reticulum.Link, data []byte, p *reticulum.Packet) {
				l.Prove(p)
				r.deliver(data, MethodDirect)
			},
			Resource: func(_ *reticulum.Link, data []byte) { r.deliver(data, MethodDirect) },
			ResourceFilter: func(_ *reticulum.Link, size int) bool {
				return cfg.AcceptResource == nil || cfg.AcceptResource(size)
			},
		})
	})
	return r, nil
}

// Hash is the local lxmf.delivery destination hash.
func (r *Router) Hash() reticulum.Hash { return r.dest.Hash() }

// Destination is the local lxmf.delivery destination.
func (r *Router) Destination() *reticulum.Destination { return r.dest }

// Announce announces the delivery destination with its display name and
// stamp cost.
func (r *Router) Announce() error { return r.dest.Announce() }

// seenExpiry bounds the duplicate filter of received message hashes.
const seenExpiry = 24 * time.Hour

func (r *Router) deliver(packed []byte, method int) {
	m, err := Unpack(packed, func(h reticulum.Hash) *reticulum.Identity {
		id, _, err := r.node.Recall(h)
		if err != nil {
			return nil
		}
		return id
	})
	if err != nil || m.Destination != r.dest.Hash() {
		return
	}
	now := r.node.Clock().Now()
	r.mu.Lock()
	_, dup := r.seen[m.Hash]
	r.seen[m.Hash] = now
	for h, t := range r.seen {
		if now.Sub(t) > seenExpiry {
			delete(r.seen, h)
		}
	}
	r.mu.Unlock()
	if dup || r.cfg.OnMessage == nil {
		return
	}
	rcv := &Received{Message: m, Method: method}
	if r.cfg.StampCost > 0 {
		rcv.StampValid = m.ValidateStamp(r.cfg.StampCost)
	}
	r.cfg.OnMessage(rcv)
}

// NewMessage returns a message from this router to dest.
func (r *Router) NewMessage(dest reticulum.Hash, title, content []byte, fields map[int]any) *Message {
	return &Message{Destination: dest, Source: r.dest.Hash(), Title: title, Content: content, Fields: fields}
}

// Prepare timestamps (if unset), stamps (when the recipient's announce asks
// for a stamp and none is set) and packs m. Send* call it when m is not
// packed yet; call it first to keep the hash stable across attempts.
func (r *Router) Prepare(ctx context.Context, m *Message) error {
	if m.Timestamp == 0 {
		m.Timestamp = float64(r.node.Clock().Now().UnixNano()) / 1e9
	}
	if m.Stamp == nil {
		if _, app, err := r.node.Recall(m.Destination); err == nil {
			if cost := StampCost(app); cost > 0 {
				if err := m.ComputeHash(); err != nil {
					return err
				}
				s, err := GenerateStamp(ctx, m.Hash[:], cost, WorkblockRounds)
				if err != nil {
					return err
				}
				m.Stamp = s
			}
		}
	}
	return m.Pack(r.cfg.Identity)
}

// deliveryLink returns the cached link to dest's lxmf.delivery or opens one.
func (r *Router) deliveryLink(ctx context.Context, dest reticulum.Hash) (*reticulum.Link, error) {
	r.mu.Lock()
	l := r.links[dest]
	r.mu.Unlock()
	if l != nil && l.Status() == reticulum.LinkActive {
		return l, nil
	}
	l, err := r.node.OpenLink(ctx, dest, reticulum.LinkHandlers{
		Closed: func(l *reticulum.Link, _ reticulum.CloseReason) {
			r.mu.Lock()
			if r.links[dest] == l {
				delete(r.links, dest)
			}
			r.mu.Unlock()
		},
	})
	if err != nil {
		return nil, err
	}
	l.SetInactivityTimeout(r.cfg.LinkInactivity)
	r.mu.Lock()
	r.links[dest] = l
	r.mu.Unlock()
	return l, nil
}

// propagationLink returns the cached link to a propagation node or opens
// one, listening for the node's rejection signal.
func (r *Router) propagationLink(ctx context.Context, pn reticulum.Hash) (*pnLink, error) {
	r.mu.Lock()
	pl := r.pnLinks[pn]
	r.mu.Unlock()
	if pl != nil && pl.link.Status() == reticulum.LinkActive {
		return pl, nil
	}
	pl = &pnLink{rejected: make(chan struct{})}
	l, err := r.node.OpenLink(ctx, pn, reticulum.LinkHandlers{
		Packet: func(_ *reticulum.Link, data []byte, _ *reticulum.Packet) {
			var sig []any
			if msgpack.Unmarshal(data, &sig) == nil && len(sig) >= 1 {
				if c, ok := asInt(sig[0]); ok && c == PeerErrorInvalidStamp {
					pl.once.Do(func() { close(pl.rejected) })
				}
			}
		},
		Closed: func(l *reticulum.Link, _ reticulum.CloseReason) {
			r.mu.Lock()
			if r.pnLinks[pn] == pl {
				delete(r.pnLinks, pn)
			}
			r.mu.Unlock()
		},
	})
	if err != nil {
		return nil, err
	}
	l.SetInactivityTimeout(r.cfg.PropagationLinkInactivity)
	pl.link = l
	r.mu.Lock()
	r.pnLinks[pn] = pl
	r.mu.Unlock()
	return pl, nil
}
