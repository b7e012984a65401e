package storetest

import (
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// testDedup: a message with a DedupKey is not stored when the last
// message sent to its target (same tenant and route) has its key, was
// sent within the window, is the last created for that target and did
// not fail; Create returns that one instead. Sent is the move from
// SENT_TO_NS to DELIVERED_TO_NS or DELIVERY_SUCCESSFUL.
func testDedup(t *testing.T, open opener) {
	// cmd returns a command of key for target on route "d" of tenant.
	cmd := func(tenant, target, key string) *herald.Message {
		m := newMessage("d")
		m.Tenant, m.Target, m.DedupKey = tenant, target, key
		return m
	}
	// sent creates m and sends it at when: the network server accepts it.
	sent := func(h *harness, m *herald.Message, when time.Time, to herald.Status) *herald.Message {
		h.t.Helper()
		h.createWith(m, herald.CreateOptions{DedupSince: when.Add(-time.Hour)})
		h.walk(m.ID, when, herald.StatusQueued, herald.StatusSentToNS, to)
		return m
	}
	// try creates m with the window starting at since and reports whether
	// it was stored, failing unless a twin comes back with the twin's id.
	try := func(h *harness, m *herald.Message, since time.Time, twin string) bool {
		h.t.Helper()
		stored, created, err := h.s.Create(h.ctx, m, herald.CreateOptions{DedupSince: since})
		switch {
		case err != nil:
			h.t.Fatalf("Create %s: %v", m.ID, err)
		case created && stored.ID != m.ID:
			h.t.Fatalf("Create %s: created, but returned %s", m.ID, stored.ID)
		case !created && (stored == nil || stored.ID != twin || len(stored.Timeline) < 3):
			h.t.Fatalf("Create %s: not created, returned %+v; want %s with its timeline", m.ID, stored, twin)
		}
		return created
	}
	const dev = "202020390c0e0902"

	t.Run("RedGreenRedAllSent", func(t *testing.T) {
		h := open(t)
		red := sent(h, cmd("acme", dev, "red"), at(time.Second), herald.StatusDeliverySuccessful)
		green := cmd("acme", dev, "green")
		if !try(h, green, t0, "") {
			t.Fatal("GREEN after RED was deduplicated")
		}
		h.walk(green.ID, at(2*time.Second), herald.StatusQueued, herald.StatusSentToNS, herald.StatusDeliverySuccessful)
		if !try(h, cmd("acme", dev, "red"), t0, "") {
			t.Fatalf("RED after GREEN was deduplicated against %s, sent before GREEN", red.ID)
		}
	})

	t.Run("RedRedDeduplicated", func(t *testing.T) {
		for _, to := range []herald.Status{herald.StatusDeliveredToNS, herald.StatusDeliverySuccessful} {
			h := open(t)
			red := sent(h, cmd("acme", dev, "red"), at(time.Second), to)
			if try(h, cmd("acme", dev, "red"), at(time.Second), red.ID) {
				t.Fatalf("RED after RED (sent, %s): stored, want %s back", to, red.ID)
			}
			// Deduplicated, the second is not the last created: a third
			// is deduplicated too.
			if try(h, cmd("acme", dev, "red"), t0, red.ID) {
				t.Fatalf("a third RED: stored, want %s back", red.ID)
			}
		}
	})

	t.Run("ForgottenAfterTTL", func(t *testing.T) {
		h := open(t)
		sent(h, cmd("acme", dev, "red"), at(time.Second), herald.StatusDeliveredToNS)
		if !try(h, cmd("acme", dev, "red"), at(time.Second+time.Millisecond), "") {
			t.Fatal("RED sent before the window: deduplicated, want stored")
		}
	})

	t.Run("OnlyWhatWasSent", func(t *testing.T) {
		h := open(t)
		// Not sent yet: nothing to compare with.
		queued := cmd("acme", dev, "red")
		h.createWith(queued, herald.CreateOptions{DedupSince: t0})
		if !try(h, cmd("acme", dev, "red"), t0, "") {
			t.Fatal("RED while the first RED waits: deduplicated, want stored")
		}

		// A newer command waits: the device will show it, so RED goes.
		h = open(t)
		sent(h, cmd("acme", dev, "red"), at(time.Second), herald.StatusDeliveredToNS)
		h.createWith(cmd("acme", dev, "green"), herald.CreateOptions{DedupSince: t0})
		if !try(h, cmd("acme", dev, "red"), t0, "") {
			t.Fatal("RED while a GREEN waits after RED: deduplicated, want stored")
		}

		// The last RED sent failed in the end: the device may not show it.
		h = open(t)
		red := sent(h, cmd("acme", dev, "red"), at(time.Second), herald.StatusDeliveredToNS)
		h.walk(red.ID, at(time.Minute), herald.StatusDeliveredToNS, herald.StatusDeliveryFailed)
		if !try(h, cmd("acme", dev, "red"), t0, "") {
			t.Fatal("RED after a RED that failed: deduplicated, want stored")
		}
	})

	t.Run("PerTenantRouteAndTarget", func(t *testing.T) {
		h := open(t)
		sent(h, cmd("acme", dev, "red"), at(time.Second), herald.StatusDeliveredToNS)
		other := cmd("acme", dev, "red")
		other.Route = "d2"
		for what, m := range map[string]*herald.Message{
			"another target": cmd("acme", "202020390c0e0903", "red"),
			"another tenant": cmd("globex", dev, "red"),
			"another route":  other,
		} {
			if !try(h, m, t0, "") {
				t.Errorf("RED to %s: deduplicated, want stored", what)
			}
		}
		if _, created, err := h.s.Create(h.ctx, cmd("acme", dev, "red"), herald.CreateOptions{}); err != nil || !created {
			t.Errorf("RED with no window: created %v, %v; want stored", created, err)
		}
	})

	t.Run("Pruned", func(t *testing.T) {
		h := open(t)
		sent(h, cmd("acme", dev, "red"), at(time.Second), herald.StatusDeliverySuccessful)
		if _, err := h.s.Prune(h.ctx, at(time.Minute), 100); err != nil {
			t.Fatal(err)
		}
		if !try(h, cmd("acme", dev, "red"), t0, "") {
			t.Fatal("RED once the last RED was pruned: deduplicated, want stored")
		}
	})
}
