package herald_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	"github.com/heraldmq/herald/store/sqlite"
)

// rigAt is a rig on the SQLite store at path, which a test reopens to
// restart herald over the same messages, with routes as configured.
func rigAt(t *testing.T, path string, fc *clock.Fake, routes ...herald.Route) *rig {
	t.Helper()
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := herald.New(herald.Config{Store: st, Routes: routes, Clock: fc,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Random: func() float64 { return 0 },
		PollInterval: time.Millisecond, ReapInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clock: fc, store: st, eng: eng}
	t.Cleanup(func() { st.Close() })
	t.Cleanup(r.stop) // before the store closes
	return r
}

// channelRoutes returns the path of a SQLite store, a fake clock at t0
// and a channel route of each of names, each with a scripted carrier of
// its own: for a test that restarts herald over the same messages with
// some of the routes.
func channelRoutes(t *testing.T, names ...string) (string, *clock.Fake, []herald.Route) {
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	var routes []herald.Route
	for _, name := range names {
		routes = append(routes, herald.Route{Name: name, Carrier: &scripted{}, Policy: p})
	}
	return filepath.Join(t.TempDir(), "herald.db"), clock.NewFake(t0), routes
}

// shutDown stops r's engine and closes its store.
func (r *rig) shutDown() {
	r.t.Helper()
	r.stop()
	if err := r.store.Close(); err != nil {
		r.t.Fatal(err)
	}
}

// TestOrphansHeldUntilTheirRouteIsBack: herald restarted with a route
// removed from its configuration keeps that route's 5 pending messages
// where they are, lists them as orphaned and explains them; restarted with
// the route back, it delivers them.
func TestOrphansHeldUntilTheirRouteIsBack(t *testing.T) {
	ctx := context.Background()
	path, fc, both := channelRoutes(t, "old", "kept")
	old := both[0].Carrier.(*scripted)

	r := rigAt(t, path, fc, both...) // not started: the messages wait
	var ids []string
	for range 5 {
		ids = append(ids, r.send(herald.SendRequest{Route: "old", Target: "1", Text: "x"}).ID)
	}
	k := r.send(herald.SendRequest{Route: "kept", Target: "1", Text: "x"})
	r.shutDown()

	r = rigAt(t, path, fc, both[1]) // "old" removed
	r.start()
	r.advance(time.Minute)
	if got := r.get(k.ID).Status; got != herald.StatusDeliverySuccessful {
		t.Errorf("the kept route's message is %s, want DELIVERY_SUCCESSFUL", got)
	}
	for _, id := range ids {
		if got := r.get(id).Status; got != herald.StatusQueued {
			t.Errorf("orphan %s is %s, want QUEUED", id, got)
		}
	}
	v, err := r.eng.Routes(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if want := []herald.OrphanedRoute{{Route: "old", Messages: 5}}; !slices.Equal(v.Orphaned, want) {
		t.Errorf("orphaned = %+v, want %+v", v.Orphaned, want)
	}
	if len(v.Routes) != 1 || v.Routes[0].Route != "kept" || v.Routes[0].Counts[herald.StatusDeliverySuccessful] != 1 {
		t.Errorf("routes = %+v, want kept with 1 DELIVERY_SUCCESSFUL", v.Routes)
	}
	if v, _ := r.eng.Routes(ctx, "other"); len(v.Orphaned) != 0 {
		t.Errorf("another tenant sees orphans %+v", v.Orphaned)
	}
	if x, err := r.eng.Explain(ctx, "acme", ids[0]); err != nil || x.Reason != "route_missing" {
		t.Errorf("explain = %+v, %v; want route_missing", x, err)
	}
	if _, err := r.eng.FailOrphans(ctx, "acme", "kept"); !errors.Is(err, herald.ErrRouteConfigured) {
		t.Errorf("FailOrphans of a configured route: %v, want ErrRouteConfigured", err)
	}
	r.shutDown()

	r = rigAt(t, path, fc, both...) // "old" back
	r.start()
	r.advance(time.Minute)
	for _, id := range ids {
		if got := r.get(id).Status; got != herald.StatusDeliverySuccessful {
			t.Errorf("message %s of the route put back is %s, want DELIVERY_SUCCESSFUL", id, got)
		}
	}
	if n := old.sends.Load(); n != 5 {
		t.Errorf("%d sends on the route put back, want 5", n)
	}
}

// TestFailOrphans: failing the orphans of a route is an explicit act that
// moves the caller's pending messages of it to DELIVERY_FAILED, with the
// route named in the error; another tenant's stay.
func TestFailOrphans(t *testing.T) {
	ctx := context.Background()
	path, fc, routes := channelRoutes(t, "lora", "chat")
	r := rigAt(t, path, fc, routes...)
	a := r.send(herald.SendRequest{Route: "lora", Target: "1", Text: "x"})
	b, _, err := r.eng.Send(ctx, "other", herald.SendRequest{Route: "lora", Target: "1", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	r.shutDown()

	r = rigAt(t, path, fc, routes[1])
	r.start()
	r.settle()
	n, err := r.eng.FailOrphans(ctx, "acme", "lora")
	if err != nil || n != 1 {
		t.Fatalf("FailOrphans = %d, %v; want 1", n, err)
	}
	got := r.get(a.ID)
	if got.Status != herald.StatusDeliveryFailed || got.LastError != "route lora removed from the configuration" ||
		got.Timeline[len(got.Timeline)-1].Reason != "route removed" {
		t.Errorf("failed orphan: %s %q %q", got.Status, got.LastError, got.Timeline[len(got.Timeline)-1].Reason)
	}
	if m, _ := r.eng.Get(ctx, "other", b.ID); m.Status != herald.StatusQueued {
		t.Errorf("another tenant's orphan is %s, want QUEUED", m.Status)
	}
	if v, _ := r.eng.Routes(ctx, "acme"); len(v.Orphaned) != 0 {
		t.Errorf("orphaned after failing them: %+v", v.Orphaned)
	}
}

// TestOperatorPause: a paused lane sends nothing while another lane of the
// same route flows; the pause survives a restart (a new engine over the
// reopened store); explain says lane_paused, "paused by an operator";
// resumed, the lane drains. A gated route's lane and a whole route too.
func TestOperatorPause(t *testing.T) {
	for _, gated := range []bool{false, true} {
		t.Run(map[bool]string{false: "Ungated", true: "Gated"}[gated], func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "herald.db")
			fc := clock.NewFake(t0)
			p, _ := herald.ProfilePolicy(herald.ProfileChannel)
			if gated {
				p.Admission = herald.Admission{Concurrency: 4}
			}
			c := &scripted{}
			route := herald.Route{Name: "chat", Carrier: c, Policy: p}
			r := rigAt(t, path, fc, route)
			r.start()
			r.settle()
			if err := r.eng.PauseLane(ctx, herald.LanePause{Route: "chat", Lane: "a", Reason: "maintenance", Tenant: "acme"}); err != nil {
				t.Fatal(err)
			}
			var held []string
			for range 3 {
				held = append(held, r.send(herald.SendRequest{Route: "chat", Lane: "a", Target: "1", Text: "x"}).ID)
			}
			other := r.send(herald.SendRequest{Route: "chat", Lane: "b", Target: "1", Text: "x"})
			r.advance(time.Minute)
			if got := r.get(other.ID).Status; got != herald.StatusDeliverySuccessful {
				t.Errorf("lane b's message is %s, want DELIVERY_SUCCESSFUL", got)
			}
			for _, id := range held {
				if got := r.get(id).Status; got != herald.StatusQueued {
					t.Errorf("paused lane's message %s is %s, want QUEUED", id, got)
				}
			}
			x, err := r.eng.Explain(ctx, "acme", held[0])
			if err != nil || x.Reason != "lane_paused" || x.Detail != `lane "a" of route chat is paused by an operator: maintenance (until resumed)` {
				t.Errorf("explain = %+v, %v; want lane_paused by an operator", x, err)
			}
			r.shutDown()

			r = rigAt(t, path, fc, route) // restarted: the pause holds
			r.start()
			r.advance(time.Minute)
			for _, id := range held {
				if got := r.get(id).Status; got != herald.StatusQueued {
					t.Errorf("after a restart, the paused lane's message %s is %s, want QUEUED", id, got)
				}
			}
			if n := c.sends.Load(); n != 1 {
				t.Errorf("%d sends, want 1 (lane b's)", n)
			}
			if ok, err := r.eng.ResumeLane(ctx, "acme", "chat", "a"); err != nil || !ok {
				t.Fatalf("ResumeLane = %v, %v", ok, err)
			}
			r.advance(time.Minute)
			for _, id := range held {
				if got := r.get(id).Status; got != herald.StatusDeliverySuccessful {
					t.Errorf("resumed lane's message %s is %s, want DELIVERY_SUCCESSFUL", id, got)
				}
			}

			// The whole route, until a time: it resumes by itself.
			until := fc.Now().Add(time.Hour)
			if err := r.eng.PauseLane(ctx, herald.LanePause{Route: "chat", Until: until}); err != nil {
				t.Fatal(err)
			}
			m := r.send(herald.SendRequest{Route: "chat", Lane: "b", Target: "1", Text: "x"})
			r.advance(time.Minute)
			if got := r.get(m.ID).Status; got != herald.StatusQueued {
				t.Errorf("paused route's message is %s, want QUEUED", got)
			}
			if x, _ := r.eng.Explain(ctx, "acme", m.ID); x.Reason != "lane_paused" || x.Until == nil || !x.Until.Equal(until) {
				t.Errorf("explain = %+v, want lane_paused until %v", x, until)
			}
			r.advance(time.Hour)
			r.advance(time.Second)
			if got := r.get(m.ID).Status; got != herald.StatusDeliverySuccessful {
				t.Errorf("after the route's pause ended, its message is %s, want DELIVERY_SUCCESSFUL", got)
			}
			if got := r.eng.LanePauses(); len(got) != 0 {
				t.Errorf("pauses after the last ended: %+v", got)
			}
		})
	}
}

// TestPauseLaneRefusesBadInput: an unknown route, an until in the past or
// a reason too long change nothing.
func TestPauseLaneRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	fc := clock.NewFake(t0)
	r := rigAt(t, filepath.Join(t.TempDir(), "herald.db"), fc, herald.Route{Name: "chat", Carrier: &scripted{}, Policy: p})
	var invalid *herald.InvalidError
	for _, c := range []struct {
		p    herald.LanePause
		want func(error) bool
	}{
		{herald.LanePause{Route: "nope"}, func(err error) bool { return errors.Is(err, herald.ErrUnknownRoute) }},
		{herald.LanePause{Route: "chat", Until: t0}, func(err error) bool { return errors.As(err, &invalid) && invalid.Field == "until" }},
		{herald.LanePause{Route: "chat", Reason: string(make([]byte, herald.MaxPauseReason+1))}, func(err error) bool { return errors.As(err, &invalid) && invalid.Field == "reason" }},
	} {
		if err := r.eng.PauseLane(ctx, c.p); !c.want(err) {
			t.Errorf("PauseLane %+v: %v", c.p, err)
		}
	}
	if got := r.eng.LanePauses(); len(got) != 0 {
		t.Errorf("pauses after refusals: %+v", got)
	}
}

// TestOrphansDoNotStarveTheReaper: 600 orphans in flight past their
// stage deadline (more than a reaper's batch of 500) neither fill the
// reaper's batches for good nor move on: their deadlines are pushed on,
// in flight still, and another route's expired message is reaped. An
// orphan whose own expires_at passed fails "expired", as any message.
func TestOrphansDoNotStarveTheReaper(t *testing.T) {
	ctx := context.Background()
	path, fc, both := channelRoutes(t, "old", "kept")

	r := rigAt(t, path, fc, both...) // not started: the test claims
	for range 600 {
		r.send(herald.SendRequest{Route: "old", Target: "1", Text: "x"})
	}
	claimed, err := r.store.Claim(ctx, herald.Claim{Now: t0, Limit: 1000, DefaultAccept: 20 * time.Second})
	if err != nil || len(claimed) != 600 {
		t.Fatalf("claimed %d, %v; want the 600 in flight", len(claimed), err)
	}
	expiring := r.send(herald.SendRequest{Route: "old", Target: "1", Text: "x", ExpiresAt: t0.Add(time.Minute)})
	kept := r.send(herald.SendRequest{Route: "kept", Target: "1", Text: "x", ExpiresAt: t0.Add(2 * time.Minute)})
	r.shutDown()

	r = rigAt(t, path, fc, both[1]) // "old" removed
	if err := r.eng.PauseLane(ctx, herald.LanePause{Route: "kept", Reason: "so that its message expires"}); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.advance(3 * time.Minute)
	if m := r.get(kept.ID); m.Status != herald.StatusDeliveryFailed || !strings.HasPrefix(m.LastError, "expired") {
		t.Errorf("the kept route's expired message is %s (%q), want DELIVERY_FAILED, expired: the reaper was starved", m.Status, m.LastError)
	}
	if m := r.get(expiring.ID); m.Status != herald.StatusDeliveryFailed {
		t.Errorf("the expired orphan is %s, want DELIVERY_FAILED", m.Status)
	}
	now := fc.Now()
	for _, c := range claimed[:5] {
		if m := r.get(c.ID); m.Status != herald.StatusSentToNS || m.Attempt != 1 || !m.Deadline.After(now) {
			t.Errorf("orphan in flight: %s attempt %d deadline %v; want SENT_TO_NS, attempt 1, a deadline after %v", m.Status, m.Attempt, m.Deadline, now)
		}
	}
}
