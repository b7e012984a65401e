package lxmf

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldmq/herald/reticulum"
	lxm "github.com/heraldmq/herald/reticulum/lxmf"
)

// EndpointConfig configures an Endpoint.
type EndpointConfig struct {
	// TCP is the host:port of a Reticulum transport node's TCP server
	// interface (rnsd's TCPServerInterface). Required.
	TCP string
	// IdentityFile holds herald's Reticulum identity (the reference's
	// 64-byte private key file), created on first use, mode 0600. The
	// paths and identities the node learns are kept beside it, in
	// IdentityFile + ".store". Required.
	IdentityFile string
	// DisplayName is announced with herald's LXMF address.
	DisplayName string
	// Logger receives the endpoint's lines; default slog.Default().
	Logger *slog.Logger
}

// announceEvery is how often the endpoint announces its address again, so
// that recipients that came up since can answer it; it also announces on
// every (re)connection.
const announceEvery = 30 * time.Minute

// pathRequestGap is the least time between two path requests for one
// destination: the messages of one recipient that find no path together
// share a request.
const pathRequestGap = 5 * time.Second

// Endpoint is herald's LXMF presence on a Reticulum network: one node on a
// TCP connection to a transport node, with herald's identity and its
// lxmf.delivery destination. The routes that name the same identity file
// share it (each with its own method); messages addressed to it go to
// the first route's subscribers. It touches neither the identity file nor
// the network before Start, so that building the routes of a config to
// check it does neither.
type Endpoint struct {
	cfg  EndpointConfig
	log  *slog.Logger
	stop chan struct{}
	wg   sync.WaitGroup

	once     sync.Once
	startErr error
	node     *reticulum.Node // set by Start
	router   *lxm.Router     // set by Start

	mu        sync.Mutex
	inbound   func(*lxm.Received) // the first route's, for messages to herald
	requested map[reticulum.Hash]time.Time
	users     int
	started   bool
	closed    bool
}

// NewEndpoint returns the endpoint cfg describes, not started.
func NewEndpoint(cfg EndpointConfig) (*Endpoint, error) {
	if cfg.TCP == "" || cfg.IdentityFile == "" {
		return nil, errors.New("lxmf: an endpoint needs a transport node's tcp address and an identity file")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Endpoint{cfg: cfg, log: log, stop: make(chan struct{}), requested: map[reticulum.Hash]time.Time{}}, nil
}

// Start loads (or creates) the identity, opens the node's store and
// connects to the transport node in the background, once; later calls
// return the first one's error. The carriers start it when the engine
// starts them (Listen) or sends.
func (e *Endpoint) Start() error {
	e.once.Do(func() { e.startErr = e.open() })
	return e.startErr
}

func (e *Endpoint) open() error {
	id, err := reticulum.LoadOrCreateIdentity(e.cfg.IdentityFile)
	if err != nil {
		return err
	}
	tc := reticulum.NewTCPClient(e.cfg.TCP)
	tc.MinBackoff, tc.Logger = 250*time.Millisecond, e.log
	node, err := reticulum.NewNode(reticulum.Config{Interfaces: []reticulum.Interface{tc}, StorePath: e.cfg.IdentityFile + ".store", Logger: e.log})
	if err != nil {
		return err
	}
	router, err := lxm.NewRouter(node, lxm.RouterConfig{Identity: id, DisplayName: e.cfg.DisplayName, OnMessage: e.received})
	if err != nil {
		node.Close()
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		node.Close()
		return errors.New("lxmf: endpoint closed")
	}
	e.node, e.router, e.started = node, router, true
	node.Start() // announces on connection
	e.wg.Add(1)
	go e.announceLoop()
	return nil
}

// Address is herald's LXMF address on this endpoint, once started.
func (e *Endpoint) Address() reticulum.Hash { return e.router.Hash() }

func (e *Endpoint) announceLoop() {
	defer e.wg.Done()
	t := time.NewTicker(announceEvery)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			if err := e.router.Announce(); err != nil {
				e.log.Debug("lxmf: announce failed", "err", err)
			}
		}
	}
}

// use registers a route's carrier on the endpoint; the first one's
// inbound receives the messages addressed to herald.
func (e *Endpoint) use(inbound func(*lxm.Received)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.users++
	if e.inbound == nil {
		e.inbound = inbound
	}
}

func (e *Endpoint) received(m *lxm.Received) {
	e.mu.Lock()
	f := e.inbound
	e.mu.Unlock()
	if f != nil {
		f(m)
	}
}

// requestPath asks the network for a path to dest, unless it asked less
// than pathRequestGap before now; it reports whether it sent a request.
func (e *Endpoint) requestPath(dest reticulum.Hash, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if last, ok := e.requested[dest]; ok && now.Sub(last) < pathRequestGap {
		return false
	}
	for h, t := range e.requested {
		if now.Sub(t) > pathRequestGap {
			delete(e.requested, h)
		}
	}
	if err := e.node.RequestPath(dest); err != nil { // not connected: the next attempt asks again
		e.log.Debug("lxmf: path request not sent", "dest", dest, "err", err)
		return false
	}
	e.requested[dest] = now
	return true
}

// release unregisters a route's carrier; the last one closes the node.
func (e *Endpoint) release() error {
	e.mu.Lock()
	e.users--
	last := e.users <= 0 && !e.closed
	if last {
		e.closed = true
	}
	started := e.started
	e.mu.Unlock()
	if !last || !started {
		return nil
	}
	close(e.stop)
	e.wg.Wait()
	return e.node.Close()
}

// AwaitPath starts the endpoint, asks the network for a path to dest,
// unless one is known, and waits for it or for ctx, asking again every
// PathRequestWait.
func (e *Endpoint) AwaitPath(ctx context.Context, dest reticulum.Hash) error {
	if err := e.Start(); err != nil {
		return err
	}
	for !e.node.HasPath(dest) {
		e.requestPath(dest, time.Now())
		wait, cancel := context.WithTimeout(ctx, PathRequestWait)
		err := e.node.WaitForPath(wait, dest)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			return nil
		}
	}
	return nil
}
