package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	"github.com/heraldmq/herald/internal/openapitest"
	"github.com/heraldmq/herald/store/sqlite"
)

// The keys and tenants of the tests.
const (
	keyA    = "key-a"
	keyB    = "key-b"
	tenantA = "tenant-a"
	tenantB = "tenant-b"
	// keyAdmin (withAdmin) is an admin key of tenant A; keyRead
	// (withReader) a read-only key of tenant A.
	keyAdmin = "key-admin"
	keyRead  = "key-read"
)

// withAdmin adds keyAdmin, an admin key of tenant A.
func withAdmin(c *Config) {
	c.Keys[keyAdmin] = tenantA
	if c.Roles == nil {
		c.Roles = map[string]Role{}
	}
	c.Roles[keyAdmin] = RoleAdmin
}

// withReader adds keyRead, a read-only key of tenant A.
func withReader(c *Config) {
	c.Keys[keyRead] = tenantA
	if c.Roles == nil {
		c.Roles = map[string]Role{}
	}
	c.Roles[keyRead] = RoleRead
}

// start is the fake clock's first reading.
var start = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// testCarrier delivers at once, except to target "fail", which it refuses
// for good. With requireTarget it wants a target, as a device carrier does.
type testCarrier struct{ requireTarget bool }

func (testCarrier) Path() herald.Path { return herald.PathDirect }

func (c testCarrier) Validate(m *herald.Message) error {
	if c.requireTarget && m.Target == "" {
		return herald.Invalid("target", "is required")
	}
	return nil
}

func (testCarrier) Send(_ context.Context, m *herald.Message) (herald.SendResult, error) {
	if m.Target == "fail" {
		return herald.SendResult{}, herald.Permanent(errors.New("target refused the message"))
	}
	return herald.SendResult{ExternalID: "ext-" + m.ID}, nil
}

// pushCarrier accepts every message and never confirms it, so that an
// accepted message stays in flight (DELIVERED_TO_NS), except to target
// "busy", which it asks to wait a minute (backpressure).
type pushCarrier struct{}

func (pushCarrier) Path() herald.Path              { return herald.PathPush }
func (pushCarrier) Validate(*herald.Message) error { return nil }

func (pushCarrier) Send(_ context.Context, m *herald.Message) (herald.SendResult, error) {
	if m.Target == "busy" {
		return herald.SendResult{}, herald.RetryAfter(time.Minute, errors.New("429 slow down"))
	}
	return herald.SendResult{}, nil
}

// eventCarrier is a push carrier whose network sends events back to the
// ingress with the secret ingressSecret: "txack" with a JSON body
// {"item": queue item id}, and "join", which herald ignores.
type eventCarrier struct{ pushCarrier }

const ingressSecret = "s3cret"

func (eventCarrier) ReadEvent(eventType, _ string, body []byte) (herald.Inbound, bool, error) {
	var ev struct {
		Item string `json:"item"`
	}
	switch {
	case eventType == "join":
		return herald.Inbound{}, false, nil
	case eventType != "txack":
		return herald.Inbound{}, false, herald.Invalid("event", "unknown event type %q", eventType)
	case json.Unmarshal(body, &ev) != nil:
		return herald.Inbound{}, false, herald.Invalid("body", "not a JSON event")
	}
	return herald.Inbound{Kind: herald.InboundTransmitted, ExternalID: ev.Item}, true, nil
}

func (eventCarrier) AwaitsAck(*herald.Message) bool { return false }
func (eventCarrier) IngressSecret() string          { return ingressSecret }

// faultyStore wraps a real store; when err is set, Get, Ping and
// AddInbound fail with it, and when createErr is, Create.
type faultyStore struct {
	herald.Store
	err       error
	createErr error
}

func (s *faultyStore) Create(ctx context.Context, m *herald.Message, opt herald.CreateOptions) (*herald.Message, bool, error) {
	if s.createErr != nil {
		return nil, false, s.createErr
	}
	return s.Store.Create(ctx, m, opt)
}

func (s *faultyStore) Get(ctx context.Context, id string) (*herald.Message, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.Store.Get(ctx, id)
}

func (s *faultyStore) AddInbound(ctx context.Context, ev herald.Inbound) error {
	if s.err != nil {
		return s.err
	}
	return s.Store.AddInbound(ctx, ev)
}

func (s *faultyStore) Ping(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	return s.Store.Ping(ctx)
}

// fixture is an API over a real engine on a SQLite store, with a fake
// clock. The engine's loops run once a test calls run, and stop when the
// test ends.
type fixture struct {
	t       testing.TB
	engine  *herald.Engine
	store   *faultyStore
	clock   *clock.Fake
	h       http.Handler
	logs    *strings.Builder
	running bool // the engine's loops run

	mu sync.Mutex
	// answered holds "METHOD /pattern status" of every answer checked
	// against the OpenAPI document (see checkedByTheDocument).
	answered map[string]bool
}

// patience bounds, in real time, every wait for the engine.
const patience = 10 * time.Second

func newFixture(t testing.TB, mutate ...func(*Config)) *fixture {
	t.Helper()
	return newObservedFixture(t, nil, mutate...)
}

// newObservedFixture is newFixture with obs as the engine's Observer.
func newObservedFixture(t testing.TB, obs herald.Observer, mutate ...func(*Config)) *fixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fs := &faultyStore{Store: st}
	policy, err := herald.ProfilePolicy(herald.ProfileChannel)
	if err != nil {
		t.Fatal(err)
	}
	policy.MaxAttempts = 1
	gated := policy
	gated.Admission = herald.Admission{Concurrency: 1}
	clk := clock.NewFake(start)
	logs := &strings.Builder{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	e, err := herald.New(herald.Config{
		Store: fs,
		Routes: []herald.Route{
			{Name: "hooks", Carrier: testCarrier{}, Policy: policy},
			{Name: "devices", Carrier: testCarrier{requireTarget: true}, Policy: policy},
			{Name: "gw", Carrier: pushCarrier{}, Policy: gated}, // one message in flight per lane
			{Name: "lora", Carrier: eventCarrier{}, Policy: policy},
			{Name: herald.RoomRoutePrefix, Prefix: true, Carrier: testCarrier{}, Policy: policy}, // rooms' deliveries
		},
		Clock:    clk,
		Logger:   logger,
		Observer: obs,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Engine: e, Keys: map[string]string{keyA: tenantA, keyB: tenantB}, Logger: logger}
	for _, m := range mutate {
		m(&cfg)
	}
	f := &fixture{t: t, engine: e, store: fs, clock: clk, h: New(cfg), logs: logs, answered: map[string]bool{}}
	if _, fuzzing := t.(*testing.F); !fuzzing { // a fuzz target checks its answers itself
		f.h = f.checkedByTheDocument(f.h)
	}
	t.Cleanup(f.stop) // before the store closes
	return f
}

// checkedByTheDocument serves h, checking every request and answer against
// the OpenAPI document (api/openapi.json): every test of the package that
// uses a fixture checks that the API answers as documented.
func (f *fixture) checkedByTheDocument(h http.Handler) http.Handler {
	doc := specDoc(f.t)
	return doc.Handler(h, func(op *openapitest.Operation, status int, err error) {
		if err != nil {
			f.t.Errorf("the answer is not as api/openapi.json says: %v", err)
		}
		if op != nil {
			f.mu.Lock()
			f.answered[op.Pattern()+" "+strconv.Itoa(status)] = true
			f.mu.Unlock()
		}
	})
}

// run starts the engine's loops on the fake clock, unless they run, and
// waits until the engine is idle: it has done all that is due, and does
// nothing more until the clock moves or a request comes.
func (f *fixture) run() {
	f.t.Helper()
	if !f.running {
		if err := f.engine.Start(context.Background()); err != nil {
			f.t.Fatal(err)
		}
		f.running = true
	}
	deadline := time.Now().Add(patience)
	for !f.engine.Idle() {
		if time.Now().After(deadline) {
			f.t.Fatalf("the engine is not idle after %v", patience)
		}
		time.Sleep(time.Millisecond)
	}
}

// stop stops the engine's loops, if they run.
func (f *fixture) stop() {
	if !f.running {
		return
	}
	f.running = false
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := f.engine.Stop(ctx); err != nil {
		f.t.Errorf("stop: %v", err)
	}
}

// do sends a request with key as the bearer key ("" for none) and returns
// the answer. Every answer with a body must be JSON.
func (f *fixture) do(method, path, key, body string) *httptest.ResponseRecorder {
	f.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Body.Len() > 0 && path != "/metrics" {
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			f.t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
		}
	}
	return rec
}

// decode reads rec's JSON body into v.
func decode[T any](t testing.TB, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("answer %d is not JSON: %v\n%s", rec.Code, err, rec.Body)
	}
	return v
}

// wantStatus fails the test unless rec answered status.
func wantStatus(t testing.TB, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
}

// wantError fails the test unless rec is the error shape with status and code.
func wantError(t testing.TB, rec *httptest.ResponseRecorder, status int, code string) errorDetail {
	t.Helper()
	wantStatus(t, rec, status)
	e := decode[errorBody](t, rec).Error
	if e.Code != code || e.Message == "" {
		t.Fatalf("error %+v, want code %q and a message", e, code)
	}
	return e
}

// sendOK sends body as tenant A and returns the new message's view.
func (f *fixture) sendOK(body string) herald.MessageView {
	f.t.Helper()
	rec := f.do("POST", "/v1/messages", keyA, body)
	wantStatus(f.t, rec, http.StatusAccepted)
	return decode[herald.MessageView](f.t, rec)
}

// list returns a list answer.
func (f *fixture) list(path, key string) listBody {
	f.t.Helper()
	rec := f.do("GET", path, key, "")
	wantStatus(f.t, rec, http.StatusOK)
	return decode[listBody](f.t, rec)
}
