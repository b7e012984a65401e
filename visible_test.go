package herald_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// byTarget is a carrier whose answer depends on the target: "fail" is
// refused for good, "flaky" fails once (transiently) and is accepted
// after, "busy" is always asked to wait a minute (backpressure); anything
// else is accepted. Its path is direct unless path says otherwise (push:
// an accepted message stays in flight, DELIVERED_TO_NS).
type byTarget struct {
	path   herald.Path
	mu     sync.Mutex
	failed map[string]bool
}

func (c *byTarget) Path() herald.Path              { return c.path }
func (c *byTarget) Validate(*herald.Message) error { return nil }
func (c *byTarget) Send(_ context.Context, m *herald.Message) (herald.SendResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m.Target {
	case "fail":
		return herald.SendResult{}, herald.Permanent(errors.New("target refused"))
	case "busy":
		return herald.SendResult{}, herald.RetryAfter(time.Minute, errors.New("429 slow down"))
	case "flaky":
		if !c.failed[m.ID] {
			if c.failed == nil {
				c.failed = map[string]bool{}
			}
			c.failed[m.ID] = true
			return herald.SendResult{}, errors.New("503 try again")
		}
	}
	return herald.SendResult{}, nil
}

// throttles is an Observer that also records the engine's Throttled calls.
type throttles struct {
	mu    sync.Mutex
	calls []string
}

func (o *throttles) Transitioned(string, herald.Status, herald.Status) {}
func (o *throttles) Delivered(string, time.Duration)                   {}
func (o *throttles) Problem(string)                                    {}
func (o *throttles) Inbound(string, string, string)                    {}
func (o *throttles) Refused(string, string)                            {}

// seen returns the Throttled calls recorded, in order.
func (o *throttles) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls)
}

func (o *throttles) Throttled(route, reason string, lanePaused bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	paused := ""
	if lanePaused {
		paused = " paused"
	}
	o.calls = append(o.calls, route+" "+reason+paused)
}

// TestStatsCountWhatTheEngineDid: /v1/stats's counters count, for each
// tenant, the tenant's messages created, delivered, retried,
// dead-lettered, deduplicated and coalesced since the engine started, and
// for the empty tenant (an operator) everyone's; an idempotent repeat
// counts as nothing.
func TestStatsCountWhatTheEngineDid(t *testing.T) {
	c := &byTarget{}
	p, err := herald.ProfilePolicy(herald.ProfileChannel)
	if err != nil {
		t.Fatal(err)
	}
	dedup := p
	dedup.DedupTTL = time.Hour
	r := newRig(t, []herald.Route{{Name: "hooks", Carrier: c, Policy: p}, {Name: "displays", Carrier: c, Policy: dedup}})
	ctx := context.Background()

	s, err := r.eng.Stats(ctx, "acme")
	if err != nil || s.Counters != (herald.Counters{}) {
		t.Fatalf("counters of a new engine = %+v, %v; want zeros", s.Counters, err)
	}
	r.send(herald.SendRequest{Route: "hooks", Target: "ok", Text: "1"})
	r.send(herald.SendRequest{Route: "hooks", Target: "fail", Text: "2"})
	r.send(herald.SendRequest{Route: "hooks", Target: "flaky", Text: "3", IdempotencyKey: "k"})
	r.send(herald.SendRequest{Route: "hooks", Target: "flaky", Text: "3", IdempotencyKey: "k"}) // the same message again
	r.send(herald.SendRequest{Route: "hooks", Target: "ok", Text: "4", CoalesceKey: "c"})
	r.send(herald.SendRequest{Route: "hooks", Target: "ok", Text: "5", CoalesceKey: "c"}) // cancels 4
	if _, _, err := r.eng.Send(ctx, "other", herald.SendRequest{Route: "displays", Target: "dev", Text: "42"}); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.settle() // ok, 5 and dev delivered, fail dead, flaky to retry
	if _, _, err := r.eng.Send(ctx, "other", herald.SendRequest{Route: "displays", Target: "dev", Text: "42"}); err != nil {
		t.Fatal(err)
	}
	r.advance(5 * time.Second) // flaky delivered

	want := map[string]herald.Counters{
		"acme":   {Enqueued: 5, Succeeded: 3, Retried: 1, DeadLettered: 1, Coalesced: 1},
		"other":  {Enqueued: 1, Succeeded: 1, Deduplicated: 1},
		"":       {Enqueued: 6, Succeeded: 4, Retried: 1, DeadLettered: 1, Deduplicated: 1, Coalesced: 1},
		"nobody": {},
	}
	for tenant, want := range want {
		s, err := r.eng.Stats(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		if s.Counters != want {
			t.Errorf("counters seen by %q = %+v, want %+v", tenant, s.Counters, want)
		}
	}
	h, err := r.eng.Health(ctx, "acme")
	if err != nil || h.Counters != want["acme"] {
		t.Errorf("health's counters = %+v, %v; want %+v", h.Counters, err, want["acme"])
	}
}

// TestBackpressureTellsTheObserver: a carrier's "not now" is a throttle of
// reason backpressure, with a lane pause on a gated route only; an
// Observer without Throttled is left alone.
func TestBackpressureTellsTheObserver(t *testing.T) {
	c := &byTarget{}
	p, err := herald.ProfilePolicy(herald.ProfileChannel)
	if err != nil {
		t.Fatal(err)
	}
	gated := p
	gated.Admission = herald.Admission{Concurrency: 2}
	routes := []herald.Route{{Name: "hooks", Carrier: c, Policy: p}, {Name: "gw", Carrier: c, Policy: gated}}
	obs := &throttles{}
	r := newRigWith(t, func(cfg *herald.Config) { cfg.Observer = obs }, routes)
	r.send(herald.SendRequest{Route: "hooks", Target: "busy", Text: "1"})
	r.send(herald.SendRequest{Route: "gw", Target: "busy", Text: "2"})
	r.send(herald.SendRequest{Route: "gw", Target: "ok", Text: "3"})
	r.start()
	r.settle()
	if calls := obs.seen(); !sameSet(calls, []string{"hooks backpressure", "gw backpressure paused"}) {
		t.Errorf("throttles = %q, want hooks backpressure and gw backpressure paused", calls)
	}

	plain := newRig(t, routes) // no Observer, so the engine's own, without Throttled
	plain.send(herald.SendRequest{Route: "gw", Target: "busy", Text: "1"})
	plain.start()
	plain.settle()
}

// TestEngineLanes: Lanes lists the busiest lanes of the gated routes, of
// one route when asked, with a pause shown only while it lasts; an
// unknown route and a limit above the maximum are refused.
func TestEngineLanes(t *testing.T) {
	c := &byTarget{path: herald.PathPush}
	p, err := herald.ProfilePolicy(herald.ProfileChannel)
	if err != nil {
		t.Fatal(err)
	}
	gated := p
	gated.Admission = herald.Admission{Concurrency: 1}
	r := newRig(t, []herald.Route{{Name: "hooks", Carrier: c, Policy: p}, {Name: "gw", Carrier: c, Policy: gated}})
	ctx := context.Background()
	// The store learns the admission, as at Start, while the loops do not
	// run yet: the messages stay queued.
	if err := r.store.SetAdmission(ctx, map[string]herald.Admission{"gw": gated.Admission}); err != nil {
		t.Fatal(err)
	}
	r.send(herald.SendRequest{Route: "hooks", Target: "ok", Text: "ungated"})
	r.send(herald.SendRequest{Route: "gw", Lane: "a", Target: "busy", Text: "a1"})
	for range 3 {
		r.send(herald.SendRequest{Route: "gw", Lane: "b", Target: "ok", Text: "b"})
	}
	r.send(herald.SendRequest{Route: "gw", Lane: "a", Target: "ok", Text: "a2"})
	lanes, err := r.eng.Lanes(ctx, herald.LaneQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) != 2 || lanes[0].Lane != "b" || lanes[0].Queued != 3 || lanes[1].Lane != "a" || lanes[1].Queued != 2 {
		t.Fatalf("lanes = %+v, want b (3 queued) then a (2 queued)", lanes)
	}
	r.start()
	r.settle() // a1 is throttled: lane a pauses a minute; one of b goes (and stays in flight)
	lanes, err = r.eng.Lanes(ctx, herald.LaneQuery{Route: "gw", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) != 1 || lanes[0].Lane != "b" || lanes[0].Queued != 2 || len(lanes[0].InFlight) != 1 {
		t.Fatalf("top lane of gw = %+v, want b alone, 2 queued and 1 in flight", lanes)
	}
	lanes, err = r.eng.Lanes(ctx, herald.LaneQuery{Route: "gw", Limit: 10})
	if err != nil || len(lanes) != 2 {
		t.Fatalf("lanes of gw = %+v, %v", lanes, err)
	}
	a := lanes[1]
	if a.Lane != "a" || a.PauseReason != "backpressure" || !a.PausedUntil.Equal(t0.Add(time.Minute)) {
		t.Errorf("lane a = %+v, want paused until +1m for backpressure", a)
	}
	r.stop() // the loops would retry a1 at once, and the lane would pause again
	r.clock.Advance(time.Minute)
	lanes, err = r.eng.Lanes(ctx, herald.LaneQuery{Route: "gw", Limit: 10})
	if err != nil || len(lanes) != 2 || !lanes[1].PausedUntil.IsZero() || lanes[1].PauseReason != "" {
		t.Errorf("lane a after its pause = %+v, %v; want no pause shown", lanes, err)
	}

	if _, err := r.eng.Lanes(ctx, herald.LaneQuery{Route: "nope", Limit: 10}); !errors.Is(err, herald.ErrUnknownRoute) {
		t.Errorf("lanes of an unknown route: %v, want ErrUnknownRoute", err)
	}
	var invalid *herald.InvalidError
	if _, err := r.eng.Lanes(ctx, herald.LaneQuery{Limit: herald.MaxLaneLimit + 1}); !errors.As(err, &invalid) || invalid.Field != "limit" {
		t.Errorf("limit above the maximum: %v, want an invalid limit", err)
	}
}
