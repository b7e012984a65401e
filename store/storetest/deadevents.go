package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// testDeadEvents: the dead outbox events are listed newest first, a page
// at a time, by tenant (of their messages), subscriber, time and id, and
// replayed by id: live again, due at once, no delivery tried.
func testDeadEvents(t *testing.T, open opener) {
	h := open(t)
	// dead makes a dead event for subscriber sub about a new message of
	// tenant, at t0 + d.
	dead := func(tenant, sub string, d time.Duration) string {
		m := newMessage("r1")
		m.Tenant = tenant
		h.create(m)
		h.transition(herald.Transition{ID: m.ID, From: herald.StatusQueued, To: herald.StatusCancelled, At: at(d), Notify: []string{sub}})
		evs, err := h.s.ClaimEvents(h.ctx, at(time.Hour), 10, at(2*time.Hour))
		if err != nil || len(evs) != 1 {
			h.t.Fatalf("ClaimEvents: %v, %v; want the new event", evs, err)
		}
		if err := h.s.SettleEvent(h.ctx, herald.EventResult{ID: evs[0].ID, Dead: true, Attempt: 6, Error: "HTTP 500 from " + sub}); err != nil {
			h.t.Fatal(err)
		}
		return evs[0].ID
	}
	a1 := dead("acme", "hook", time.Second)
	a2 := dead("acme", "audit", 2*time.Second)
	a3 := dead("acme", "hook", 3*time.Second)
	g1 := dead("globex", "hook", 2*time.Second)
	list := func(q herald.EventQuery) ([]string, herald.EventCursor) {
		t.Helper()
		evs, next, err := h.s.DeadEvents(h.ctx, q)
		if err != nil {
			t.Fatalf("DeadEvents %+v: %v", q, err)
		}
		var ids []string
		for _, e := range evs {
			ids = append(ids, e.ID)
		}
		return ids, next
	}

	// Pages, newest first, of the tenant's events only.
	var got []string
	q := herald.EventQuery{Tenant: "acme", Limit: 2}
	for range 10 {
		ids, next := list(q)
		got = append(got, ids...)
		if next.IsZero() {
			break
		}
		q.After = next
	}
	if want := []string{a3, a2, a1}; !slices.Equal(got, want) {
		t.Fatalf("acme's dead events, 2 a page: %v, want %v", got, want)
	}
	evs, _, err := h.s.DeadEvents(h.ctx, herald.EventQuery{Tenant: "acme", IDs: []string{a2}, Limit: 10})
	if err != nil || len(evs) != 1 || evs[0].Subscriber != "audit" || evs[0].Attempt != 6 || evs[0].LastError != "HTTP 500 from audit" ||
		evs[0].Type != herald.StatusCancelled || !sameTime(evs[0].At, at(2*time.Second)) {
		t.Fatalf("dead event %s: %+v, %v", a2, evs, err)
	}
	for what, c := range map[string]struct {
		q    herald.EventQuery
		want []string
	}{
		"a subscriber's":    {herald.EventQuery{Tenant: "acme", Subscriber: "hook", Limit: 10}, []string{a3, a1}},
		"since and until":   {herald.EventQuery{Tenant: "acme", Since: at(2 * time.Second), Until: at(3 * time.Second), Limit: 10}, []string{a2}},
		"another tenant's":  {herald.EventQuery{Tenant: "globex", Limit: 10}, []string{g1}},
		"every tenant's":    {herald.EventQuery{Limit: 10}, nil},
		"by id, of acme's":  {herald.EventQuery{Tenant: "acme", IDs: []string{a1, g1}, Limit: 10}, []string{a1}},
		"an unknown tenant": {herald.EventQuery{Tenant: "initech", Limit: 10}, nil},
	} {
		ids, next := list(c.q)
		if what == "every tenant's" {
			if len(ids) != 4 || !next.IsZero() {
				t.Errorf("%s: %v, next %+v; want all 4", what, ids, next)
			}
			continue
		}
		if !slices.Equal(ids, c.want) || !next.IsZero() {
			t.Errorf("%s: %v, next %+v; want %v", what, ids, next, c.want)
		}
	}

	// Replayed by id: of the tenant's only, each once.
	n, err := h.s.ReplayEvents(h.ctx, "acme", []string{a1, a3, g1, "no-such-event"}, at(time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("ReplayEvents: %d, %v; want 2", n, err)
	}
	if n, err := h.s.ReplayEvents(h.ctx, "acme", []string{a1}, at(time.Hour)); err != nil || n != 0 {
		t.Errorf("ReplayEvents of an event replayed already: %d, %v; want 0", n, err)
	}
	if ids, _ := list(herald.EventQuery{Limit: 10}); !slices.Equal(ids, []string{a2, g1}) && !slices.Equal(ids, []string{g1, a2}) {
		t.Errorf("dead after the replay: %v, want %s and %s", ids, a2, g1)
	}
	live, err := h.s.ClaimEvents(h.ctx, at(time.Hour), 10, at(2*time.Hour))
	if err != nil || len(live) != 2 {
		t.Fatalf("ClaimEvents after the replay: %v, %v; want the 2 replayed", live, err)
	}
	for _, e := range live {
		if (e.ID != a1 && e.ID != a3) || e.Attempt != 0 {
			t.Errorf("replayed event %+v: want %s or %s, no delivery tried", e, a1, a3)
		}
	}
}
