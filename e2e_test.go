package herald_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/webhook"
	"github.com/heraldmq/herald/clock"
	"github.com/heraldmq/herald/sim/webhooksink"
	"github.com/heraldmq/herald/store/sqlite"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// rig is an engine on a fresh SQLite store with a fake clock. A test
// starts its loops, moves the clock and waits for the engine to settle
// (Engine.Idle) before it checks what the loops did; the loops are stopped
// when the test ends.
//
// The loops poll and reap every millisecond of the fake clock, so that each
// move of the clock releases, claims, reaps and delivers what is due at the
// time it moves to, as the tests' timelines expect; a test that wants the
// engine's default intervals sets them back.
type rig struct {
	t     *testing.T
	clock *clock.Fake
	store *sqlite.Store
	eng   *herald.Engine
}

// patience bounds, in real time, every wait for the engine.
const patience = 10 * time.Second

// eventually polls cond every millisecond until it holds, and fails the
// test if it does not within the given real time.
func eventually(t testing.TB, cond func() bool, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", within)
		}
		time.Sleep(time.Millisecond)
	}
}

func newRig(t *testing.T, routes []herald.Route, subs ...herald.Subscriber) *rig {
	t.Helper()
	return newRigWith(t, func(*herald.Config) {}, routes, subs...)
}

func newRigWith(t *testing.T, adjust func(*herald.Config), routes []herald.Route, subs ...herald.Subscriber) *rig {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fc := clock.NewFake(t0)
	cfg := herald.Config{
		Store: st, Routes: routes, Subscribers: subs, Clock: fc,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		Random:       func() float64 { return 0 },
		PollInterval: time.Millisecond,
		ReapInterval: time.Millisecond,
	}
	adjust(&cfg)
	eng, err := herald.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clock: fc, store: st, eng: eng}
	t.Cleanup(r.stop) // before the store closes
	return r
}

// start starts the engine's loops on the fake clock.
func (r *rig) start() {
	r.t.Helper()
	if err := r.eng.Start(context.Background()); err != nil {
		r.t.Fatal(err)
	}
}

// stop stops the engine's loops, if they run.
func (r *rig) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := r.eng.Stop(ctx); err != nil {
		r.t.Errorf("stop: %v", err)
	}
}

// settle waits until the engine is idle: it has done all it would, and
// does nothing more until the clock moves or the test calls it.
func (r *rig) settle() {
	r.t.Helper()
	eventually(r.t, r.eng.Idle, patience)
}

// advance moves the clock by d once the engine is idle, so that every loop
// wakes at the time it asked for, and waits until the engine is idle again.
func (r *rig) advance(d time.Duration) {
	r.t.Helper()
	r.settle()
	r.clock.Advance(d)
	r.settle()
}

func (r *rig) send(req herald.SendRequest) *herald.Message {
	r.t.Helper()
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

func webhookRoute(t *testing.T, name, url string, profile herald.Profile) herald.Route {
	t.Helper()
	c, err := webhook.New(webhook.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	p, err := herald.ProfilePolicy(profile)
	if err != nil {
		t.Fatal(err)
	}
	return herald.Route{Name: name, Carrier: c, Policy: p}
}

type step struct {
	from, to herald.Status
	attempt  int
}

func checkTimeline(t *testing.T, m *herald.Message, want []step) {
	t.Helper()
	if len(m.Timeline) != len(want) {
		for _, e := range m.Timeline {
			t.Logf("  %s -> %s attempt %d %q", e.From, e.To, e.Attempt, e.Reason)
		}
		t.Fatalf("timeline has %d entries, want %d", len(m.Timeline), len(want))
	}
	for i, w := range want {
		e := m.Timeline[i]
		if e.From != w.from || e.To != w.to || e.Attempt != w.attempt {
			t.Errorf("timeline[%d] = %s -> %s attempt %d, want %s -> %s attempt %d", i, e.From, e.To, e.Attempt, w.from, w.to, w.attempt)
		}
	}
}

func TestWebhookFailsThreeTimesThenSucceeds(t *testing.T) {
	sink := webhooksink.New(webhooksink.Config{FailFirst: 3})
	srv := httptest.NewServer(sink)
	defer srv.Close()
	r := newRig(t, []herald.Route{webhookRoute(t, "hooks", srv.URL, herald.ProfileChannel)})
	r.start()

	m := r.send(herald.SendRequest{Route: "hooks", Text: "hello"})
	r.settle()
	got := r.get(m.ID)
	if got.Status != herald.StatusToRetry || !got.DueAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after first failure: %s due %v, want TO_RETRY due +5s", got.Status, got.DueAt)
	}
	r.advance(4999 * time.Millisecond)
	if got := r.get(m.ID); got.Status != herald.StatusToRetry || got.Attempt != 1 {
		t.Fatalf("retried before its backoff: %s attempt %d", got.Status, got.Attempt)
	}
	for _, wait := range []time.Duration{time.Millisecond, 25 * time.Second, 2 * time.Minute} {
		r.advance(wait)
	}
	got = r.get(m.ID)
	if got.Status != herald.StatusDeliverySuccessful || got.Attempt != 4 {
		t.Fatalf("ended %s after %d attempts, want DELIVERY_SUCCESSFUL after 4", got.Status, got.Attempt)
	}
	want := []step{{"", herald.StatusQueued, 0}}
	for a := 1; a <= 3; a++ {
		want = append(want,
			step{herald.StatusQueued, herald.StatusSentToNS, a},
			step{herald.StatusSentToNS, herald.StatusToRetry, a},
			step{herald.StatusToRetry, herald.StatusQueued, a})
	}
	want = append(want,
		step{herald.StatusQueued, herald.StatusSentToNS, 4},
		step{herald.StatusSentToNS, herald.StatusDeliverySuccessful, 4})
	checkTimeline(t, got, want)
	if s := sink.Stats(); s.Requests != 4 || s.Delivered != 1 {
		t.Errorf("sink saw %d requests, %d delivered; want 4 and 1", s.Requests, s.Delivered)
	}
}

func TestWebhook400FailsAfterOneAttempt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad payload", http.StatusBadRequest)
	}))
	defer srv.Close()
	r := newRig(t, []herald.Route{webhookRoute(t, "hooks", srv.URL, herald.ProfileChannel)})
	r.start()
	m := r.send(herald.SendRequest{Route: "hooks", Text: "hello"})
	r.settle()
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveryFailed || got.Attempt != 1 {
		t.Fatalf("got %s after %d attempts, want DELIVERY_FAILED after 1", got.Status, got.Attempt)
	}
	if got.LastError == "" {
		t.Error("the dead letter has no last error")
	}
	checkTimeline(t, got, []step{{"", herald.StatusQueued, 0}, {herald.StatusQueued, herald.StatusSentToNS, 1}, {herald.StatusSentToNS, herald.StatusDeliveryFailed, 1}})
}

func TestExpiresWhileWaitingToRetry(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	r := newRig(t, []herald.Route{webhookRoute(t, "hooks", srv.URL, herald.ProfileChannel)})
	r.start()
	m := r.send(herald.SendRequest{Route: "hooks", Text: "hello", ExpiresAt: t0.Add(3 * time.Second)})
	r.settle()
	if got := r.get(m.ID); got.Status != herald.StatusToRetry {
		t.Fatalf("got %s, want TO_RETRY", got.Status)
	}
	r.advance(3 * time.Second)
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveryFailed {
		t.Fatalf("got %s, want DELIVERY_FAILED", got.Status)
	}
	last := got.Timeline[len(got.Timeline)-1]
	if last.From != herald.StatusToRetry || last.Reason != "expired" {
		t.Errorf("last entry %s -> %s %q, want TO_RETRY -> DELIVERY_FAILED \"expired\"", last.From, last.To, last.Reason)
	}
}

// scripted is a carrier whose answers a test sets.
type scripted struct {
	path  herald.Path
	mu    sync.Mutex
	err   error
	sends atomic.Int64
	poll  herald.PollResult
}

func (s *scripted) Path() herald.Path              { return s.path }
func (s *scripted) Validate(*herald.Message) error { return nil }
func (s *scripted) Send(context.Context, *herald.Message) (herald.SendResult, error) {
	s.sends.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return herald.SendResult{ExternalID: "task-1"}, s.err
}
func (s *scripted) Poll(context.Context, *herald.Message) (herald.PollResult, map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.poll, nil, nil
}

func TestLoRaWANGivesUpAfterTwelveAttempts(t *testing.T) {
	c := &scripted{path: herald.PathPush, err: errors.New("network server unavailable")}
	p, _ := herald.ProfilePolicy(herald.ProfileLoRaWAN)
	r := newRig(t, []herald.Route{{Name: "lora", Carrier: c, Policy: p}})
	r.start()
	m := r.send(herald.SendRequest{Route: "lora", Target: "0102030405060708", Payload: []byte{1}})
	r.settle()
	for a := 1; a < 12; a++ {
		got := r.get(m.ID)
		want := min(2*time.Second<<(a-1), time.Hour)
		if got.Status != herald.StatusToRetry || got.DueAt.Sub(r.clock.Now()) != want {
			t.Fatalf("after attempt %d: %s, next in %v; want TO_RETRY in %v", a, got.Status, got.DueAt.Sub(r.clock.Now()), want)
		}
		r.advance(want)
	}
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveryFailed || got.Attempt != 12 || c.sends.Load() != 12 {
		t.Fatalf("ended %s after %d attempts (%d sends), want DELIVERY_FAILED after 12", got.Status, got.Attempt, c.sends.Load())
	}
}

func TestAcceptTimeoutRetriesAndRefusesTheLateCompletion(t *testing.T) {
	c := &scripted{path: herald.PathDirect}
	p, _ := herald.ProfilePolicy(herald.ProfileLoRaWAN)
	r := newRig(t, []herald.Route{{Name: "lora", Carrier: c, Policy: p}})
	m := r.send(herald.SendRequest{Route: "lora", Target: "x", Payload: []byte{1}})
	// A node claims it and dies before the carrier answers.
	claimed, err := r.store.Claim(context.Background(), herald.Claim{Now: r.clock.Now(), Limit: 1, DefaultAccept: 20 * time.Second})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %d", err, len(claimed))
	}
	r.start()
	r.advance(19 * time.Second)
	if got := r.get(m.ID); got.Status != herald.StatusSentToNS {
		t.Fatalf("reaped before the accept timeout: %s", got.Status)
	}
	r.advance(time.Second) // reaped to TO_RETRY with a 2 s backoff
	if got := r.get(m.ID); got.Status != herald.StatusToRetry {
		t.Fatalf("after the accept timeout: %s, want TO_RETRY", got.Status)
	}
	r.advance(2 * time.Second)
	if got := r.get(m.ID); got.Status != herald.StatusDeliverySuccessful || got.Attempt != 2 {
		t.Fatalf("retry ended %s at attempt %d", got.Status, got.Attempt)
	}
	late := r.store.Transition(context.Background(), herald.Transition{ID: m.ID, From: herald.StatusSentToNS,
		To: herald.StatusDeliveryFailed, Lease: claimed[0].Lease, At: r.clock.Now()})
	if !errors.Is(late, herald.ErrConflict) {
		t.Fatalf("late completion under the old lease: %v, want ErrConflict", late)
	}
}

func TestPullTaskFailsAtMaxAgeWithoutRetry(t *testing.T) {
	c := &scripted{path: herald.PathPull, poll: herald.PollPending}
	p, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
	r := newRig(t, []herald.Route{{Name: "meters", Carrier: c, Policy: p}})
	r.start()
	m := r.send(herald.SendRequest{Route: "meters", Target: "m1", Text: "reading"})
	r.settle()
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveredToNS || got.ExternalID != "task-1" || !got.DueAt.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("after acceptance: %s ext %q poll at %v", got.Status, got.ExternalID, got.DueAt)
	}
	for elapsed := time.Duration(0); elapsed < 48*time.Hour; elapsed += time.Hour {
		r.advance(time.Hour)
	}
	got = r.get(m.ID)
	if got.Status != herald.StatusDeliveryFailed || c.sends.Load() != 1 {
		t.Fatalf("after 48 h: %s with %d sends, want DELIVERY_FAILED with 1", got.Status, c.sends.Load())
	}
}

func TestPullTaskSucceedsWhenPolledDone(t *testing.T) {
	c := &scripted{path: herald.PathPull, poll: herald.PollPending}
	p, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
	r := newRig(t, []herald.Route{{Name: "meters", Carrier: c, Policy: p}})
	r.start()
	m := r.send(herald.SendRequest{Route: "meters", Target: "m1", Text: "reading"})
	r.advance(10 * time.Second)
	if got := r.get(m.ID); got.Status != herald.StatusDeliveredToNS || !got.DueAt.Equal(r.clock.Now().Add(10*time.Second)) {
		t.Fatalf("pending poll: %s next poll %v", got.Status, got.DueAt)
	}
	c.mu.Lock()
	c.poll = herald.PollSucceeded
	c.mu.Unlock()
	r.advance(10 * time.Second)
	if got := r.get(m.ID); got.Status != herald.StatusDeliverySuccessful {
		t.Fatalf("done task: %s", got.Status)
	}
}

func TestCancelReplayCoalesceIdempotency(t *testing.T) {
	c := &scripted{path: herald.PathDirect, err: errors.New("down")}
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	r := newRig(t, []herald.Route{{Name: "chat", Carrier: c, Policy: p}})
	ctx := context.Background()

	a := r.send(herald.SendRequest{Route: "chat", Target: "1", Text: "a", IdempotencyKey: "k1"})
	again, created, err := r.eng.Send(ctx, "acme", herald.SendRequest{Route: "chat", Target: "1", Text: "other", IdempotencyKey: "k1"})
	if err != nil || created || again.ID != a.ID {
		t.Fatalf("idempotent repeat: created=%v id=%s err=%v, want the first message", created, again.ID, err)
	}

	old := r.send(herald.SendRequest{Route: "chat", Target: "2", Text: "v1", CoalesceKey: "display-2"})
	r.send(herald.SendRequest{Route: "chat", Target: "2", Text: "v2", CoalesceKey: "display-2"})
	if got := r.get(old.ID); got.Status != herald.StatusCancelled || got.Timeline[len(got.Timeline)-1].Reason != "coalesced" {
		t.Fatalf("coalesced message: %s", got.Status)
	}

	cancelled, err := r.eng.Cancel(ctx, "acme", a.ID)
	if err != nil || cancelled.Status != herald.StatusCancelled {
		t.Fatalf("cancel: %v %v", cancelled, err)
	}
	if _, err := r.eng.Cancel(ctx, "acme", a.ID); !errors.Is(err, herald.ErrNotCancellable) {
		t.Fatalf("second cancel: %v, want ErrNotCancellable", err)
	}
	if _, err := r.eng.Get(ctx, "other-tenant", a.ID); !errors.Is(err, herald.ErrNotFound) {
		t.Fatalf("another tenant read it: %v", err)
	}
	replayed, err := r.eng.Replay(ctx, "acme", a.ID)
	if err != nil || replayed.Status != herald.StatusQueued || replayed.Attempt != 0 {
		t.Fatalf("replay: %+v %v", replayed, err)
	}
	if _, err := r.eng.Replay(ctx, "acme", a.ID); !errors.Is(err, herald.ErrNotReplayable) {
		t.Fatalf("replay of a queued message: %v, want ErrNotReplayable", err)
	}
}

// recordingSink is an EventSink that fails its first n deliveries.
type recordingSink struct {
	mu     sync.Mutex
	failN  int
	calls  int
	events []herald.OutcomeEvent
}

// tries returns how many deliveries the sink was asked for.
func (s *recordingSink) tries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// delivered returns the events the sink took, in order.
func (s *recordingSink) delivered() []herald.OutcomeEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

func (s *recordingSink) Deliver(_ context.Context, e herald.OutcomeEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls <= s.failN {
		return fmt.Errorf("subscriber down (%d)", s.calls)
	}
	s.events = append(s.events, e)
	return nil
}

func TestOutcomeEventsRetryThenDeliver(t *testing.T) {
	sink := &recordingSink{failN: 2}
	c := &scripted{path: herald.PathDirect}
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	sub := herald.Subscriber{Name: "ops", Sink: sink, MaxAttempts: 5,
		Retry: herald.RetryPolicy{Kind: herald.RetryConstant, Base: time.Second}}
	r := newRig(t, []herald.Route{{Name: "chat", Carrier: c, Policy: p}}, sub)
	r.start()
	m := r.send(herald.SendRequest{Route: "chat", Target: "1", Text: "x"})
	r.settle() // delivered; the event's first delivery fails, and the next is not due yet
	if n := sink.tries(); n != 1 {
		t.Fatalf("event tried %d times before its backoff, want 1", n)
	}
	r.advance(time.Second)
	r.advance(time.Second)
	if evs := sink.delivered(); len(evs) != 1 || evs[0].Type != herald.StatusDeliverySuccessful || evs[0].Message.ID != m.ID {
		t.Fatalf("events delivered: %+v", evs)
	}
	r.advance(time.Minute)
	if n := sink.tries(); n != 3 {
		t.Fatalf("delivered event sent again: %d calls", n)
	}
}

func TestOutcomeEventDeadAfterLastAttempt(t *testing.T) {
	sink := &recordingSink{failN: 1000}
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	sub := herald.Subscriber{Name: "ops", Sink: sink, MaxAttempts: 3,
		Retry: herald.RetryPolicy{Kind: herald.RetryConstant, Base: time.Second}}
	r := newRig(t, []herald.Route{{Name: "chat", Carrier: &scripted{}, Policy: p}}, sub)
	r.start()
	r.send(herald.SendRequest{Route: "chat", Target: "1", Text: "x"})
	for range 10 {
		r.advance(time.Second)
	}
	if n := sink.tries(); n != 3 {
		t.Fatalf("event tried %d times, want 3 then dead", n)
	}
}

// gated is a carrier whose first send waits for its gate.
type gated struct {
	gate  chan struct{}
	sends atomic.Int64
}

func (g *gated) Path() herald.Path              { return herald.PathDirect }
func (g *gated) Validate(*herald.Message) error { return nil }
func (g *gated) Send(context.Context, *herald.Message) (herald.SendResult, error) {
	if g.sends.Add(1) == 1 {
		<-g.gate
	}
	return herald.SendResult{}, nil
}

func TestPruneDeletesTerminalMessagesAfterTheRetention(t *testing.T) {
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	r := newRig(t, []herald.Route{{Name: "chat", Carrier: &scripted{}, Policy: p}})
	r.start()
	done := r.send(herald.SendRequest{Route: "chat", Target: "1", Text: "x"})
	r.settle()
	r.stop() // from here Prune is called by the test alone, and the next message stays queued
	r.clock.Advance(7*24*time.Hour - time.Millisecond)
	waiting := r.send(herald.SendRequest{Route: "chat", Target: "1", Text: "y", ExpiresAt: r.clock.Now().Add(time.Hour)})
	if n, err := r.eng.Prune(context.Background()); err != nil || n != 0 {
		t.Fatalf("pruned %d (%v) before the retention", n, err)
	}
	r.clock.Advance(2 * time.Millisecond)
	if n, err := r.eng.Prune(context.Background()); err != nil || n != 1 {
		t.Fatalf("pruned %d (%v), want 1", n, err)
	}
	if _, err := r.eng.Get(context.Background(), "acme", done.ID); !errors.Is(err, herald.ErrNotFound) {
		t.Fatalf("pruned message still readable: %v", err)
	}
	if got := r.get(waiting.ID); got.Status != herald.StatusQueued {
		t.Fatalf("active message: %s", got.Status)
	}
}

func TestStopStartsNoFurtherSends(t *testing.T) {
	c := &gated{gate: make(chan struct{})}
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	r := newRigWith(t, func(cfg *herald.Config) { cfg.Concurrency = 1 },
		[]herald.Route{{Name: "chat", Carrier: c, Policy: p}})
	for _, text := range []string{"a", "b", "c"} {
		r.send(herald.SendRequest{Route: "chat", Target: "1", Text: text})
	}
	ctx := context.Background()
	r.start()
	eventually(t, func() bool { return c.sends.Load() == 1 }, patience)
	stopped := make(chan error)
	go func() { stopped <- r.eng.Stop(ctx) }()
	// The loops return while Stop waits for the send: once none of them
	// waits on the clock, the dispatcher is gone (it drops its poll alarm
	// last, and the clock does not move to fire it).
	eventually(t, func() bool { return r.clock.Waiters() == 0 }, patience)
	close(c.gate) // the send finishes: its slot must not start the next
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if n := c.sends.Load(); n != 1 {
		t.Fatalf("%d sends, want 1: a send started after Stop", n)
	}
}

// blocked is a carrier whose sends, once it is shut, wait for its gate.
type blocked struct {
	shut  atomic.Bool
	gate  chan struct{}
	sends atomic.Int64
}

func (b *blocked) Path() herald.Path              { return herald.PathDirect }
func (b *blocked) Validate(*herald.Message) error { return nil }
func (b *blocked) Send(ctx context.Context, _ *herald.Message) (herald.SendResult, error) {
	if !b.shut.Load() {
		return herald.SendResult{}, nil
	}
	b.sends.Add(1)
	select {
	case <-b.gate:
		return herald.SendResult{}, nil
	case <-ctx.Done():
		return herald.SendResult{}, ctx.Err()
	}
}

func TestBurstAfterIdleIsNotClaimedFarAheadOfBusySlots(t *testing.T) {
	c := &blocked{gate: make(chan struct{})}
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	r := newRigWith(t, func(cfg *herald.Config) { cfg.Concurrency, cfg.PollInterval = 2, time.Hour },
		[]herald.Route{{Name: "chat", Carrier: c, Policy: p}})
	ctx := context.Background()
	// A fast phase: the claims run far ahead of the 2 slots.
	for i := range 1000 {
		r.send(herald.SendRequest{Route: "chat", Target: "1", Text: fmt.Sprint(i)})
	}
	r.start()
	defer close(c.gate) // before the rig stops the engine
	sentToNS := func() int {
		counts, err := r.store.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range counts {
			if c.Status != herald.StatusDeliverySuccessful {
				n += c.N
			}
		}
		return n
	}
	eventually(t, func() bool { return sentToNS() == 0 }, patience)
	// Idle, then a burst for slots that now take their time.
	r.settle()
	c.shut.Store(true)
	for i := range 300 {
		r.send(herald.SendRequest{Route: "chat", Target: "1", Text: fmt.Sprint(i)})
	}
	eventually(t, func() bool { return c.sends.Load() >= 2 }, patience)
	time.Sleep(50 * time.Millisecond) // any claim still to come
	counts, err := r.store.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range counts {
		if n.Status == herald.StatusSentToNS && n.N > 8 {
			t.Fatalf("%d messages claimed for 2 busy slots; want a few", n.N)
		}
	}
}

// TestIdleMeansTheLoopsWaitOnTheClock: the engine is idle only while it
// runs with nothing under way, each loop parked on the engine's clock; a
// new message, a send in flight or a move of the clock past the loops'
// alarms ends it at once, and it comes back only once their work is done.
func TestIdleMeansTheLoopsWaitOnTheClock(t *testing.T) {
	c := &gated{gate: make(chan struct{})}
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	sink := &recordingSink{}
	r := newRig(t, []herald.Route{{Name: "chat", Carrier: c, Policy: p}}, herald.Subscriber{Name: "ops", Sink: sink})
	if r.eng.Idle() {
		t.Fatal("idle before Start")
	}
	r.start()
	r.settle()
	if n := r.clock.Waiters(); n != 4 {
		t.Fatalf("%d alarms on the fake clock, want 4: the dispatcher's, the reaper's, the outbox's and the pruner's", n)
	}
	m := r.send(herald.SendRequest{Route: "chat", Target: "1", Text: "x"})
	if r.eng.Idle() {
		t.Fatal("idle right after a send, before the dispatcher took it")
	}
	eventually(t, func() bool { return c.sends.Load() == 1 }, patience)
	if r.eng.Idle() {
		t.Fatal("idle with a send in flight")
	}
	close(c.gate)
	r.settle()
	if got := r.get(m.ID); got.Status != herald.StatusDeliverySuccessful {
		t.Fatalf("idle with the message %s, want its send recorded", got.Status)
	}
	if evs := sink.delivered(); len(evs) != 1 {
		t.Fatalf("idle with %d outcome events delivered, want 1", len(evs))
	}
	r.clock.Advance(time.Millisecond)
	if r.eng.Idle() {
		t.Fatal("idle right after the clock moved past the loops' alarms")
	}
	r.settle()
	r.stop()
	if r.eng.Idle() {
		t.Fatal("idle after Stop")
	}
	if n := r.clock.Waiters(); n != 0 {
		t.Fatalf("%d alarms left on the fake clock after Stop, want 0", n)
	}
}

// TestReaperRunsEveryReapIntervalOfTheClock: the reaper wakes every
// ReapInterval of the engine's clock, not at every move of it: a stage
// deadline that falls between two of its turns is reaped at the next.
func TestReaperRunsEveryReapIntervalOfTheClock(t *testing.T) {
	c := &scripted{path: herald.PathDirect}
	p, _ := herald.ProfilePolicy(herald.ProfileLoRaWAN) // accept timeout 20 s
	r := newRigWith(t, func(cfg *herald.Config) { cfg.ReapInterval = 3 * time.Second },
		[]herald.Route{{Name: "lora", Carrier: c, Policy: p}})
	m := r.send(herald.SendRequest{Route: "lora", Target: "x", Payload: []byte{1}})
	// A node claims it and dies before the carrier answers: its deadline is +20s.
	if claimed, err := r.store.Claim(context.Background(), herald.Claim{Now: r.clock.Now(), Limit: 1, DefaultAccept: 20 * time.Second}); err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %d", err, len(claimed))
	}
	r.start() // reaps at +0s, then at +3s, +6s, ..., +18s, +21s
	for range 20 {
		r.advance(time.Second)
	}
	if got := r.get(m.ID); got.Status != herald.StatusSentToNS {
		t.Fatalf("at +20s, between two turns of the reaper: %s, want SENT_TO_NS", got.Status)
	}
	r.advance(time.Second)
	if got := r.get(m.ID); got.Status != herald.StatusToRetry || !got.UpdatedAt.Equal(t0.Add(21*time.Second)) {
		t.Fatalf("at +21s: %s updated at %v, want TO_RETRY, reaped at +21s", got.Status, got.UpdatedAt)
	}
}
