package storetest

import (
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func testOutbox(t *testing.T, open opener) {
	// notify stores a message and moves it to DELIVERY_SUCCESSFUL at t0,
	// with one outcome event per subscriber.
	notify := func(h *harness, subs ...string) *herald.Message {
		m := h.create(newMessage("r1"))
		h.walk(m.ID, t0, herald.StatusQueued, herald.StatusSentToNS)
		h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0, Notify: subs})
		return m
	}
	claim := func(h *harness, now time.Time, limit int, leaseUntil time.Time) []herald.Event {
		h.t.Helper()
		evs, err := h.s.ClaimEvents(h.ctx, now, limit, leaseUntil)
		if err != nil {
			h.t.Fatalf("ClaimEvents: %v", err)
		}
		return evs
	}
	settle := func(h *harness, r herald.EventResult) {
		h.t.Helper()
		if err := h.s.SettleEvent(h.ctx, r); err != nil {
			h.t.Fatalf("SettleEvent: %v", err)
		}
	}

	t.Run("LeaseHides", func(t *testing.T) {
		h := open(t)
		notify(h, "a", "b")
		if evs := claim(h, t0, 10, at(30*time.Second)); len(evs) != 2 {
			t.Fatalf("first claim: %d events, want 2", len(evs))
		}
		if evs := claim(h, at(29*time.Second), 10, at(time.Hour)); len(evs) != 0 {
			t.Errorf("claim within the lease: %d events, want none", len(evs))
		}
		if evs := claim(h, at(31*time.Second), 10, at(time.Hour)); len(evs) != 2 {
			t.Errorf("claim after the lease: %d events, want 2 back", len(evs))
		}
	})

	t.Run("Limit", func(t *testing.T) {
		h := open(t)
		notify(h, "a", "b", "c")
		notify(h, "a", "b")
		seen := map[string]bool{}
		for i, want := range []int{2, 2, 1, 0} {
			evs := claim(h, t0, 2, at(time.Hour))
			if len(evs) != want {
				t.Errorf("claim %d with limit 2: %d events, want %d", i, len(evs), want)
			}
			for _, e := range evs {
				if seen[e.ID] {
					t.Errorf("event %s claimed twice within its lease", e.ID)
				}
				seen[e.ID] = true
			}
		}
	})

	t.Run("Settle", func(t *testing.T) {
		h := open(t)
		notify(h, "delivered", "retried", "dead")
		evs := claim(h, t0, 10, at(time.Second))
		if len(evs) != 3 {
			t.Fatalf("claim: %d events, want 3", len(evs))
		}
		byName := map[string]herald.Event{}
		for _, e := range evs {
			byName[e.Subscriber] = e
		}
		settle(h, herald.EventResult{ID: byName["delivered"].ID, Delivered: true, Attempt: 1})
		settle(h, herald.EventResult{ID: byName["retried"].ID, RetryAt: at(time.Minute), Attempt: 1, Error: "503"})
		settle(h, herald.EventResult{ID: byName["dead"].ID, Dead: true, Attempt: 1, Error: "410"})

		if evs := claim(h, at(59*time.Second), 10, at(2*time.Minute)); len(evs) != 0 {
			t.Errorf("claim before RetryAt: %v, want none", evs)
		}
		evs = claim(h, at(time.Minute), 10, at(2*time.Minute))
		if len(evs) != 1 || evs[0].Subscriber != "retried" || evs[0].Attempt != 1 {
			t.Fatalf("claim at RetryAt: %+v, want only the retried event, at attempt 1", evs)
		}
		if e := evs[0]; e.Type != herald.StatusDeliverySuccessful || !sameTime(e.At, t0) || e.ID != byName["retried"].ID {
			t.Errorf("retried event %+v, want it as first claimed %+v", e, byName["retried"])
		}
		if evs := claim(h, at(24*time.Hour), 10, at(25*time.Hour)); len(evs) != 1 || evs[0].Subscriber != "retried" {
			t.Errorf("claim much later: %+v, want only the retried event (delivered is gone, dead stays out)", evs)
		}
	})
}
