package calin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	"github.com/heraldmq/herald/internal/httpsend"
	"github.com/heraldmq/herald/internal/redistest"
	calinsim "github.com/heraldmq/herald/sim/calin"
	"github.com/heraldmq/herald/store/redis"
	"github.com/heraldmq/herald/store/sqlite"
)

// TestMain fails the package's tests if any of them leaves a goroutine
// behind (a create call still running, a connection).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the fake clocks' start.
var t0 = time.Date(2026, 8, 5, 12, 0, 0, 0, time.UTC)

// patience bounds, in real time, every wait.
const patience = 10 * time.Second

// eventually polls cond every millisecond until it holds, and fails the
// test if it does not within patience.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, patience)
		}
		time.Sleep(time.Millisecond)
	}
}

// startSim serves a simulator over real HTTP, on clk unless cfg has a
// clock, and returns it with its URL. handler, when set, wraps it.
func startSim(t *testing.T, cfg calinsim.Config, clk *clock.Fake, wrap func(http.Handler) http.Handler) (*calinsim.Sim, string) {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = clk
	}
	s := calinsim.New(cfg)
	var h http.Handler = s
	if wrap != nil {
		h = wrap(s)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// client returns an HTTP client whose idle connections close when the
// test ends.
func client(t *testing.T) *http.Client {
	c := httpsend.NewClient()
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// newV1 returns a V1 carrier for the simulator at url with its default
// account, closed when the test ends.
func newV1(t *testing.T, url string, clk *clock.Fake, adjust ...func(*V1Config)) *V1 {
	t.Helper()
	cfg := V1Config{BaseURL: url, Company: calinsim.DefaultCompany, Username: calinsim.DefaultUser,
		Password: calinsim.DefaultPassword, Client: client(t), Now: clk.Now}
	for _, a := range adjust {
		a(&cfg)
	}
	c, err := NewV1(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newV2 returns a V2 carrier for the simulator at url with its default
// account and customer "c-1", closed when the test ends.
func newV2(t *testing.T, url string, clk *clock.Fake, adjust ...func(*V2Config)) *V2 {
	t.Helper()
	cfg := V2Config{BaseURL: url, Company: calinsim.DefaultCompany, UserID: calinsim.DefaultUser,
		Password: calinsim.DefaultPassword, CustomerID: "c-1", Client: client(t), Now: clk.Now}
	for _, a := range adjust {
		a(&cfg)
	}
	c, err := NewV2(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// msg returns a message for meter with params given as "key=value" pairs,
// at attempt 1.
func msg(meter string, kv ...string) *herald.Message {
	m := &herald.Message{ID: "m-" + meter, Target: meter, Text: "task", Params: map[string]string{}, Attempt: 1}
	for _, p := range kv {
		k, v, _ := strings.Cut(p, "=")
		m.Params[k] = v
	}
	return m
}

// calls returns the simulator's calls whose path ends with suffix (case
// ignored).
func calls(s *calinsim.Sim, suffix string) []calinsim.Call {
	var out []calinsim.Call
	for _, c := range s.Calls() {
		if strings.HasSuffix(strings.ToLower(c.Path), strings.ToLower(suffix)) {
			out = append(out, c)
		}
	}
	return out
}

// isPermanent reports whether err is a herald.PermanentError.
func isPermanent(err error) bool {
	var pe *herald.PermanentError
	return errors.As(err, &pe)
}

// rig is an engine on a fake clock with the given routes and store.
type rig struct {
	t     *testing.T
	clock *clock.Fake
	store herald.Store
	eng   *herald.Engine
}

// storeKind opens a store for a test.
type storeKind struct {
	name string
	open func(t *testing.T) herald.Store
}

// redisPrefixes numbers the key prefixes of the Redis stores.
var redisPrefixes atomic.Int64

// stores are the stores the end-to-end tests run on: SQLite, and Redis
// when redis-server is installed (a server per test).
func stores() []storeKind {
	return []storeKind{
		{"sqlite", func(t *testing.T) herald.Store {
			st, err := sqlite.Open(filepath.Join(t.TempDir(), "herald.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"redis", func(t *testing.T) herald.Store {
			srv := redistest.Start(t)
			// The tests run on a fake clock: the lanes keep time by it too.
			st, err := redis.Open(fmt.Sprintf("%s?prefix=calin%d&lane_clock=caller", srv.URL(), redisPrefixes.Add(1)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	}
}

// eachStore runs f as a subtest on each store.
func eachStore(t *testing.T, f func(t *testing.T, open func(t *testing.T) herald.Store)) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) { f(t, sk.open) })
	}
}

// newRig builds an engine on st and clk (not started), stopped when the
// test ends, before the store closes.
func newRig(t *testing.T, st herald.Store, clk *clock.Fake, routes ...herald.Route) *rig {
	t.Helper()
	eng, err := herald.New(herald.Config{
		Store: st, Routes: routes, Clock: clk,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		Random:       func() float64 { return 0 },
		PollInterval: time.Millisecond,
		ReapInterval: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clock: clk, store: st, eng: eng}
	t.Cleanup(r.stop)
	return r
}

// taskRoute is a route of the taskpoll profile, changed by adjust.
func taskRoute(t *testing.T, name string, c herald.Carrier, adjust ...func(*herald.Policy)) herald.Route {
	t.Helper()
	p, err := herald.ProfilePolicy(herald.ProfileTaskPoll)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range adjust {
		a(&p)
	}
	return herald.Route{Name: name, Carrier: c, Policy: p}
}

func (r *rig) start() {
	r.t.Helper()
	if err := r.eng.Start(context.Background()); err != nil {
		r.t.Fatal(err)
	}
}

// stop stops the engine, waiting for its sends at most briefly: a send
// cut short stays SENT_TO_NS, as after a crash.
func (r *rig) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	r.eng.Stop(ctx)
}

// kill stops the engine without waiting for its sends.
func (r *rig) kill() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.eng.Stop(ctx)
}

// settle waits until the engine is idle.
func (r *rig) settle() {
	r.t.Helper()
	eventually(r.t, "engine idle", r.eng.Idle)
}

// advance moves the clock by d once the engine is idle and waits until it
// is idle again.
func (r *rig) advance(d time.Duration) {
	r.t.Helper()
	r.settle()
	r.clock.Advance(d)
	r.settle()
}

func (r *rig) send(req herald.SendRequest) *herald.Message {
	r.t.Helper()
	if req.Text == "" && len(req.Payload) == 0 {
		req.Text = "task"
	}
	m, _, err := r.eng.Send(context.Background(), "acme", req)
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

// want fails the test unless message id is in status with attempt.
func (r *rig) want(id string, status herald.Status, attempt int) *herald.Message {
	r.t.Helper()
	m := r.get(id)
	if m.Status != status || m.Attempt != attempt {
		r.t.Fatalf("message %s: %s at attempt %d (last error %q), want %s at attempt %d", id, m.Status, m.Attempt, m.LastError, status, attempt)
	}
	return m
}
