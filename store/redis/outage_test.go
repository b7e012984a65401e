package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/redistest"
)

// storeCall is one call of a Store method.
type storeCall struct {
	name string
	call func(ctx context.Context, s *Store) error
}

// setAdmission gates route r1 with every limit.
func setAdmission(ctx context.Context, s *Store) error {
	return s.SetAdmission(ctx, map[string]herald.Admission{"r1": {Spacing: time.Second, Concurrency: 2,
		Rate: herald.Rate{N: 5, Per: time.Second}, TenantRate: herald.Rate{N: 5, Per: time.Second}, Ordered: true,
		Circuit: herald.Circuit{Failures: 1, CoolDown: time.Second}}})
}

// everyMethod calls every method of the Store but Close once, on the
// messages of seed.
var everyMethod = []storeCall{
	{"Ping", func(ctx context.Context, s *Store) error { return s.Ping(ctx) }},
	{"Create", func(ctx context.Context, s *Store) error {
		m := message("m-" + time.Now().Format("150405.000000000"))
		m.IdempotencyKey, m.CoalesceKey, m.CorrelationID, m.ExpiresAt = "idem", "coal", "corr", t0.Add(time.Hour)
		m.DedupKey = "hash"
		_, _, err := s.Create(ctx, m, herald.CreateOptions{CoalesceNotify: []string{"hook"}, DedupSince: t0})
		return err
	}},
	{"Get", func(ctx context.Context, s *Store) error { _, err := s.Get(ctx, "m1"); return err }},
	{"List", func(ctx context.Context, s *Store) error { _, _, err := s.List(ctx, herald.Query{}); return err }},
	{"ListStatus", func(ctx context.Context, s *Store) error {
		_, _, err := s.List(ctx, herald.Query{Status: herald.StatusQueued})
		return err
	}},
	{"Claim", func(ctx context.Context, s *Store) error {
		_, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 1, DefaultAccept: time.Second})
		return err
	}},
	{"SetAdmission", setAdmission},
	{"ClaimGated", func(ctx context.Context, s *Store) error {
		_, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 2, GatedLimit: 2, DefaultAccept: time.Second})
		return err
	}},
	{"SetAdmissionUnchanged", setAdmission}, // recounts in steps of its own
	{"Lane", func(ctx context.Context, s *Store) error { _, err := s.Lane(ctx, "r1", "", "acme"); return err }},
	{"Lanes", func(ctx context.Context, s *Store) error {
		_, err := s.Lanes(ctx, herald.LaneQuery{Limit: 10})
		return err
	}},
	{"FirstActive", func(ctx context.Context, s *Store) error { _, err := s.FirstActive(ctx, "r1", "device-1"); return err }},
	{"ReportCircuit", func(ctx context.Context, s *Store) error {
		_, err := s.ReportCircuit(ctx, herald.CircuitReport{Route: "r1", At: t0, Failed: true})
		return err
	}},
	{"Transition", func(ctx context.Context, s *Store) error {
		return s.Transition(ctx, herald.Transition{ID: "m2", From: herald.StatusSentToNS, To: herald.StatusDeliveredToNS,
			At: t0, ExternalID: "ext-2", DueAt: t0.Add(time.Second), Deadline: t0.Add(time.Minute), Notify: []string{"hook"}})
	}},
	{"Release", func(ctx context.Context, s *Store) error { _, err := s.Release(ctx, t0, 10); return err }},
	{"Overdue", func(ctx context.Context, s *Store) error { _, err := s.Overdue(ctx, t0.Add(time.Hour), 10); return err }},
	{"FindByExternalID", func(ctx context.Context, s *Store) error {
		_, err := s.FindByExternalID(ctx, "r1", "ext-2")
		return err
	}},
	{"ActiveRoutes", func(ctx context.Context, s *Store) error { _, err := s.ActiveRoutes(ctx); return err }},
	{"Counts", func(ctx context.Context, s *Store) error { _, err := s.Counts(ctx); return err }},
	{"ClaimEvents", func(ctx context.Context, s *Store) error {
		_, err := s.ClaimEvents(ctx, t0.Add(time.Hour), 10, t0.Add(2*time.Hour))
		return err
	}},
	{"SettleEvent", func(ctx context.Context, s *Store) error {
		return s.SettleEvent(ctx, herald.EventResult{ID: "no-such-event", Delivered: true})
	}},
	{"AddInbound", func(ctx context.Context, s *Store) error {
		return s.AddInbound(ctx, herald.Inbound{ID: "in-" + time.Now().Format("150405.000000000"), Route: "r1",
			Kind: herald.InboundAck, ExternalID: "ext-2", Correlation: "dedup", Acknowledged: true, At: t0, DueAt: t0})
	}},
	{"ClaimInbound", func(ctx context.Context, s *Store) error {
		_, err := s.ClaimInbound(ctx, t0, 10, t0.Add(time.Minute))
		return err
	}},
	{"InboundByCorrelation", func(ctx context.Context, s *Store) error {
		_, err := s.InboundByCorrelation(ctx, "r1", "dedup")
		return err
	}},
	{"SettleInbound", func(ctx context.Context, s *Store) error {
		return s.SettleInbound(ctx, herald.InboundSettle{Done: []string{"no-such-event"}, Later: "other", DueAt: t0,
			Event: &herald.Event{ID: "uplink.x", Type: "uplink", At: t0, Data: []byte("{}")}, Notify: []string{"hook"}})
	}},
	{"Purge", func(ctx context.Context, s *Store) error { _, err := s.Purge(ctx, herald.PurgeQuery{}); return err }},
	{"Prune", func(ctx context.Context, s *Store) error { _, err := s.Prune(ctx, t0.Add(time.Hour), 10); return err }},
}

// seed stores m1 (QUEUED) and m2 (SENT_TO_NS).
func seed(t *testing.T, s *Store) {
	t.Helper()
	for _, id := range []string{"m1", "m2"} {
		if _, _, err := s.Create(t.Context(), message(id), herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Transition(t.Context(), herald.Transition{ID: "m2", From: herald.StatusQueued, To: herald.StatusSentToNS, At: t0}); err != nil {
		t.Fatal(err)
	}
}

// TestOutage stops the server under a store: every method must fail fast
// with ErrStoreUnavailable, and work again, on the same Store, once the
// server is back.
func TestOutage(t *testing.T) {
	srv := redistest.Start(t, redistest.AOF())
	s := open(t, srv, "")
	seed(t, s)

	srv.Stop(t)
	for _, c := range everyMethod {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		start := time.Now()
		err := c.call(ctx, s)
		cancel()
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s with the server down took %v, want at most 5s", c.name, took)
		}
		if !errors.Is(err, herald.ErrStoreUnavailable) {
			t.Errorf("%s with the server down: err %v, want ErrStoreUnavailable", c.name, err)
		}
	}

	srv.Start(t)
	deadline := time.Now().Add(5 * time.Second)
	for s.Ping(t.Context()) != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range everyMethod {
		err := c.call(t.Context(), s)
		if err != nil && !errors.Is(err, herald.ErrNotFound) && !errors.Is(err, herald.ErrConflict) {
			t.Errorf("%s after the server came back: %v", c.name, err)
		}
	}
	if m, err := s.Get(t.Context(), "m1"); err != nil || m.ID != "m1" {
		t.Errorf("Get m1 after the restart = %v, %v; want it kept by the append-only file", m, err)
	}
}

// TestRestartKeepsState restarts the server (a crash: SIGKILL) between the
// steps of a message's life: the append-only file keeps every step.
func TestRestartKeepsState(t *testing.T) {
	srv := redistest.Start(t, redistest.AOF())
	s := open(t, srv, "")
	ctx := t.Context()
	if _, _, err := s.Create(ctx, message("m1"), herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	var claimed []*herald.Message
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		claimed, err = s.Claim(ctx, herald.Claim{Now: t0, Limit: 1, DefaultAccept: time.Minute})
		if err == nil || time.Now().After(deadline) {
			if err != nil || len(claimed) != 1 {
				t.Fatalf("Claim after a restart = %v, %v; want the message", claimed, err)
			}
			break
		}
	}
	srv.Restart(t)
	for time.Now().Before(deadline) && s.Ping(ctx) != nil {
		time.Sleep(50 * time.Millisecond)
	}
	got, err := s.Get(ctx, "m1")
	if err != nil || got.Status != herald.StatusSentToNS || got.Lease != claimed[0].Lease || len(got.Timeline) != 2 {
		t.Fatalf("Get after a second restart = %+v, %v; want SENT_TO_NS under lease %d with 2 timeline entries", got, err, claimed[0].Lease)
	}
	again, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 1, DefaultAccept: time.Minute})
	if err != nil || len(again) != 0 {
		t.Errorf("Claim after a restart = %v, %v; want nothing (claimed before the crash)", again, err)
	}
}
