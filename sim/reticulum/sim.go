package reticulum

import (
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	rns "github.com/heraldmq/herald/reticulum"
)

// Config configures a simulator.
type Config struct {
	// Listen is the TCP address of the transport node's server interface
	// ("127.0.0.1:0" picks a free port); empty serves none.
	Listen string
	// Seed draws the identities of the transport node, the peers and the
	// propagation nodes: the same seed gives the same addresses.
	Seed int64
	// Logger receives the simulator's debug lines; default none.
	Logger *slog.Logger
}

// Sim is a Reticulum network in one process: a transport node that
// clients reach over TCP, and LXMF peers and propagation nodes attached
// to it.
type Sim struct {
	cfg  Config
	log  *slog.Logger
	t    *transport
	ln   net.Listener
	wg   sync.WaitGroup
	done chan struct{} // closed by Close

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool
	peers  []*Peer
	pns    []*PropagationNode
	pipes  []*rns.PipeEnd
}

// Start starts a simulator.
func Start(cfg Config) (*Sim, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Sim{cfg: cfg, log: log, conns: map[net.Conn]bool{}, done: make(chan struct{})}
	id, err := s.identity("transport")
	if err != nil {
		return nil, err
	}
	s.t = newTransport(id.Hash(), log)
	if cfg.Listen != "" {
		if s.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, err
		}
		s.wg.Add(1)
		go s.serveTCP(s.ln)
	}
	return s, nil
}

// Addr is the address of the transport node's TCP server interface, the
// host:port of a route's reticulum.tcp.
func (s *Sim) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// TransportID is the transport node's identity hash: the next hop its
// clients' paths name.
func (s *Sim) TransportID() rns.Hash { return s.t.id }

// Stats returns what the transport node did so far.
func (s *Sim) Stats() Stats { return s.t.Stats() }

// HasPath reports whether the transport node knows a path to dest.
func (s *Sim) HasPath(dest rns.Hash) bool { return s.t.hasPath(dest) }

// ForgetPath makes the transport node forget its path to dest, as a path
// of a destination that stopped announcing expires: path requests for it
// go unanswered until it announces again.
func (s *Sim) ForgetPath(dest rns.Hash) { s.t.forget(dest) }

// AddPeer attaches an LXMF recipient.
func (s *Sim) AddPeer(cfg PeerConfig) (*Peer, error) {
	p, err := s.newPeer(cfg)
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", cfg.Name, err)
	}
	s.mu.Lock()
	s.peers = append(s.peers, p)
	s.mu.Unlock()
	return p, nil
}

// AddPropagationNode attaches an LXMF propagation node.
func (s *Sim) AddPropagationNode(cfg PropagationNodeConfig) (*PropagationNode, error) {
	n, err := s.newPropagationNode(cfg)
	if err != nil {
		return nil, fmt.Errorf("propagation node %s: %w", cfg.Name, err)
	}
	s.mu.Lock()
	s.pns = append(s.pns, n)
	s.mu.Unlock()
	return n, nil
}

// attachPipe makes the transport's end of an in-memory interface one of
// its ports, whose packets arrive latency after they are sent.
func (s *Sim) attachPipe(end *rns.PipeEnd, name string, latency time.Duration) {
	p := &port{name: name, send: end.Send}
	if latency > 0 {
		p.send = s.delayed(end.Send, latency)
	}
	s.t.attach(p)
	end.Start(func(raw []byte) { s.t.inbound(raw, p) })
	s.mu.Lock()
	s.pipes = append(s.pipes, end)
	s.mu.Unlock()
}

// delayed sends each packet latency after it is handed over, in order,
// from a goroutine that ends with the simulator.
func (s *Sim) delayed(send func([]byte) error, latency time.Duration) func([]byte) error {
	type packet struct {
		due time.Time
		raw []byte
	}
	q := make(chan packet, 1024)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.done:
				return
			case p := <-q:
				select {
				case <-s.done:
					return
				case <-time.After(time.Until(p.due)):
				}
				send(p.raw)
			}
		}
	}()
	return func(raw []byte) error {
		select {
		case q <- packet{due: time.Now().Add(latency), raw: append([]byte{}, raw...)}:
		default: // a full queue drops, as a congested link does
		}
		return nil
	}
}

// identity draws the identity called name from the seed: the X25519 key
// and the Ed25519 seed of the reference's private key file are the
// SHA-512 of both.
func (s *Sim) identity(name string) (*rns.Identity, error) {
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], uint64(s.cfg.Seed))
	prv := sha512.Sum512(append(append([]byte("herald sim reticulum\x00"), seed[:]...), name...))
	return rns.IdentityFromPrivateKey(prv[:])
}

// Close stops the server interface, disconnects its clients and stops the
// peers and propagation nodes.
func (s *Sim) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	for c := range s.conns {
		c.Close()
	}
	peers, pns, pipes := s.peers, s.pns, s.pipes
	s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
	}
	for _, p := range peers {
		p.close()
	}
	for _, n := range pns {
		n.close()
	}
	for _, e := range pipes {
		e.Close()
	}
	s.wg.Wait()
	return nil
}
