package lxmf

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	"github.com/heraldmq/herald/internal/redistest"
	"github.com/heraldmq/herald/reticulum"
	simr "github.com/heraldmq/herald/sim/reticulum"
	"github.com/heraldmq/herald/store/redis"
	"github.com/heraldmq/herald/store/sqlite"
)

// patience bounds, in real time, every wait for the network and the engine.
const patience = 15 * time.Second

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// stores are the stores every engine test runs on: SQLite, and a private
// Redis (skipped when redis-server is not installed).
var stores = []struct {
	name string
	open func(t *testing.T) herald.Store
}{
	{"sqlite", func(t *testing.T) herald.Store {
		st, err := sqlite.Open(filepath.Join(t.TempDir(), "herald.db"))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
	{"redis", func(t *testing.T) herald.Store {
		st, err := redis.Open(redistest.Start(t).URL() + "?prefix=lxmf&lane_clock=caller")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
}

// onStores runs f once per store.
func onStores(t *testing.T, f func(t *testing.T, open func(*testing.T) herald.Store)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { f(t, s.open) })
	}
}

// rig is a herald engine on a fake clock with lxmf routes on one endpoint
// connected to a simulated Reticulum network (sim/reticulum): the network
// runs in real time, the engine's retries and deadlines on the fake clock.
type rig struct {
	t     *testing.T
	sim   *simr.Sim
	ep    *Endpoint
	clock *clock.Fake
	eng   *herald.Engine
	sink  *sink
}

// route is an lxmf route of a rig.
type route struct {
	name     string
	method   Method
	pn       reticulum.Hash
	wait     time.Duration
	fallback string // another route of the rig
}

// newRig starts the network (setup adds its peers first and returns the
// routes), the endpoint and an engine with the routes on the store open
// makes.
func newRig(t *testing.T, open func(*testing.T) herald.Store, setup func(*simr.Sim) []route) *rig {
	t.Helper()
	s, err := simr.Start(simr.Config{Listen: "127.0.0.1:0", Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	routes := setup(s)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ep, err := NewEndpoint(EndpointConfig{TCP: s.Addr(), IdentityFile: filepath.Join(t.TempDir(), "identity"), DisplayName: "herald", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Start(); err != nil {
		t.Fatal(err)
	}
	fc := clock.NewFake(t0)
	r := &rig{t: t, sim: s, ep: ep, clock: fc, sink: &sink{}}
	var hr []herald.Route
	carriers := map[string]*Carrier{}
	for _, rt := range routes {
		c, err := New(Config{Endpoint: ep, Method: rt.method, PropagationNode: rt.pn, WaitForPath: rt.wait, Now: fc.Now})
		if err != nil {
			t.Fatal(err)
		}
		carriers[rt.name] = c
		p, err := herald.ProfilePolicy(herald.ProfileLXMF)
		if err != nil {
			t.Fatal(err)
		}
		hr = append(hr, herald.Route{Name: rt.name, Carrier: c, Policy: p})
		t.Cleanup(func() { c.Close() })
	}
	for _, rt := range routes {
		if rt.fallback != "" {
			carriers[rt.name].SetFallback(carriers[rt.fallback])
		}
	}
	st := open(t)
	t.Cleanup(func() { st.Close() })
	r.eng, err = herald.New(herald.Config{Store: st, Routes: hr, Clock: fc, Logger: quiet, Random: func() float64 { return 0 },
		PollInterval: time.Millisecond, ReapInterval: time.Millisecond,
		Subscribers: []herald.Subscriber{{Name: "app", Sink: r.sink}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		r.eng.Stop(ctx)
	})
	r.eventually("herald's announce at the transport node", func() bool { return s.HasPath(ep.Address()) })
	return r
}

// eventually polls cond, in real time, until it holds.
func (r *rig) eventually(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *rig) send(route, target, text string, params map[string]string) *herald.Message {
	r.t.Helper()
	m, _, err := r.eng.Send(context.Background(), "acme", herald.SendRequest{Route: route, Target: target, Text: text, Params: params})
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

func (r *rig) get(id string) *herald.Message {
	r.t.Helper()
	m, err := r.eng.Get(context.Background(), "acme", id)
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

// waitStatus waits until message id is in status want, and returns it.
// While it waits the fake clock moves a millisecond a look: an event that
// came back before its send's answer was recorded is looked at again a few
// milliseconds later, of the engine's clock.
func (r *rig) waitStatus(id string, want herald.Status) *herald.Message {
	r.t.Helper()
	var m *herald.Message
	deadline := time.Now().Add(patience)
	for {
		m = r.get(id)
		if m.Status == want {
			return m
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("message %s is %s at attempt %d (last error %q), want %s", id, m.Status, m.Attempt, m.LastError, want)
		}
		time.Sleep(2 * time.Millisecond)
		r.clock.Advance(time.Millisecond)
	}
}

// settle waits until the engine is idle.
func (r *rig) settle() {
	r.t.Helper()
	r.eventually("the engine idle", r.eng.Idle)
}

// advance moves the fake clock by d once the engine is idle, and waits
// until it is idle again.
func (r *rig) advance(d time.Duration) {
	r.t.Helper()
	r.settle()
	r.clock.Advance(d)
	r.settle()
}

func (r *rig) explain(id string) herald.Explanation {
	r.t.Helper()
	x, err := r.eng.Explain(context.Background(), "acme", id)
	if err != nil {
		r.t.Fatal(err)
	}
	return x
}

// reasons lists the reasons of a message's timeline entries.
func reasons(m *herald.Message) []string {
	var out []string
	for _, e := range m.Timeline {
		out = append(out, e.Reason)
	}
	return out
}

// sink records the outcome events it is sent.
type sink struct {
	mu     sync.Mutex
	events []herald.OutcomeEvent
}

func (s *sink) Deliver(_ context.Context, e herald.OutcomeEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	return nil
}

// ofType returns the events of type typ received so far.
func (s *sink) ofType(typ herald.Status) []herald.OutcomeEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(s.events), func(e herald.OutcomeEvent) bool { return e.Type != typ })
}
