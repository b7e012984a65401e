package reticulum

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	rns "github.com/heraldmq/herald/reticulum"
	"github.com/heraldmq/herald/reticulum/lxmf"
)

// PeerConfig configures an LXMF recipient of the simulator.
type PeerConfig struct {
	// Name names the peer; its identity is drawn from it and the
	// simulator's seed, so that its address is the same in every run.
	Name string
	// DisplayName is announced; default Name.
	DisplayName string
	// StampCost, when positive, asks senders for a stamp of that cost.
	StampCost int
	// Reject declines every message offered as a resource (over a link,
	// larger than one packet): the sender sees the reference's REJECTED.
	Reject bool
	// Offline starts the peer offline: it has not announced and nothing
	// reaches it until Online.
	Offline bool
	// Latency delays every packet the transport node sends the peer: its
	// proofs come back that much later.
	Latency time.Duration
}

// Received is a message a peer received.
type Received struct {
	Hash    string    `json:"hash"`   // the message id, hex
	Source  string    `json:"source"` // the sender's LXMF address, hex
	Title   string    `json:"title"`
	Content string    `json:"content"`
	Method  string    `json:"method"` // opportunistic or direct
	Size    int       `json:"size"`   // content bytes
	At      time.Time `json:"at"`
}

// Peer is an LXMF recipient attached to the simulator's transport node: a
// Reticulum node of its own behind an in-memory interface, with an
// lxmf.delivery destination that proves what it receives, as the
// reference's router does.
type Peer struct {
	cfg    PeerConfig
	sim    *Sim
	ends   [2]*rns.PipeEnd // the peer's end, the transport's end
	node   *rns.Node
	router *lxmf.Router

	mu       sync.Mutex
	online   bool
	received []Received
	seen     map[string]bool
	repeats  int
}

// Address is the peer's LXMF address: its lxmf.delivery hash.
func (p *Peer) Address() rns.Hash { return p.router.Hash() }

// Name returns the peer's name.
func (p *Peer) Name() string { return p.cfg.Name }

func (s *Sim) newPeer(cfg PeerConfig) (*Peer, error) {
	if cfg.DisplayName == "" {
		cfg.DisplayName = cfg.Name
	}
	id, err := s.identity("peer:" + cfg.Name)
	if err != nil {
		return nil, err
	}
	p := &Peer{cfg: cfg, sim: s, seen: map[string]bool{}}
	mine, theirs := rns.NewPipe("sim:"+cfg.Name, "peer:"+cfg.Name)
	p.ends = [2]*rns.PipeEnd{mine, theirs}
	p.node, err = rns.NewNode(rns.Config{Interfaces: []rns.Interface{mine}, Logger: s.log})
	if err != nil {
		return nil, err
	}
	rc := lxmf.RouterConfig{Identity: id, DisplayName: cfg.DisplayName, StampCost: cfg.StampCost, OnMessage: p.record}
	if cfg.Reject {
		rc.AcceptResource = func(int) bool { return false }
	}
	if p.router, err = lxmf.NewRouter(p.node, rc); err != nil {
		return nil, err
	}
	s.attachPipe(theirs, "peer:"+cfg.Name, cfg.Latency)
	p.setOnline(!cfg.Offline)
	p.node.Start()
	if !cfg.Offline {
		if err := p.router.Announce(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// record keeps a received message once; a repeat of one it has (the
// sender retried after its proof was lost) is only counted, as the
// reference's router drops it.
func (p *Peer) record(m *lxmf.Received) {
	h := hex.EncodeToString(m.Hash[:])
	method := "direct"
	if m.Method == lxmf.MethodOpportunistic {
		method = "opportunistic"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[h] {
		p.repeats++
		return
	}
	p.seen[h] = true
	p.received = append(p.received, Received{Hash: h, Source: m.Source.String(), Title: string(m.Title),
		Content: string(m.Content), Method: method, Size: len(m.Content), At: time.Now()})
}

// Received returns the messages the peer received, in order, each once.
func (p *Peer) Received() []Received {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Received(nil), p.received...)
}

// Repeats counts the copies of messages it already had.
func (p *Peer) Repeats() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.repeats
}

// setOnline connects or cuts the peer's interface, both ways.
func (p *Peer) setOnline(on bool) {
	p.mu.Lock()
	p.online = on
	p.mu.Unlock()
	for _, e := range p.ends {
		e.SetDown(!on)
	}
}

// Online brings the peer online and announces it, as a recipient that
// comes up does.
func (p *Peer) Online() error {
	p.setOnline(true)
	return p.router.Announce()
}

// Offline cuts the peer off: nothing reaches it, nothing it sends goes
// out. The transport node keeps its path, which is now stale.
func (p *Peer) Offline() { p.setOnline(false) }

// Announce announces the peer again.
func (p *Peer) Announce() error { return p.router.Announce() }

// Send sends an LXMF message from the peer to to (an address the peer
// learned from an announce): direct over a link, or opportunistic.
func (p *Peer) Send(ctx context.Context, to rns.Hash, title, content string, method int) error {
	m := p.router.NewMessage(to, []byte(title), []byte(content), nil)
	var res lxmf.Result
	switch method {
	case lxmf.MethodOpportunistic:
		res = p.router.SendOpportunistic(ctx, m)
	case lxmf.MethodDirect:
		res = p.router.SendDirect(ctx, m)
	default:
		return fmt.Errorf("method %d: want opportunistic or direct", method)
	}
	if res.Outcome != lxmf.Delivered {
		return fmt.Errorf("%s: %v", res.Outcome, res.Err)
	}
	return nil
}

func (p *Peer) close() { p.node.Close() }
