package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func testCreate(t *testing.T, open opener) {
	t.Run("QueuedWithCreationEntry", func(t *testing.T) {
		h := open(t)
		m := newMessage("r1")
		m.Status = ""
		stored := h.create(m)
		if stored.Status != herald.StatusQueued {
			t.Errorf("Create returned status %q, want QUEUED", stored.Status)
		}
		got := h.get(m.ID)
		if got.Status != herald.StatusQueued {
			t.Errorf("stored status %q, want QUEUED", got.Status)
		}
		if len(got.Timeline) != 1 {
			t.Fatalf("timeline has %d entries, want 1: %+v", len(got.Timeline), got.Timeline)
		}
		e := got.Timeline[0]
		if e.From != "" || e.To != herald.StatusQueued || !sameTime(e.At, m.CreatedAt) || e.Attempt != 0 {
			t.Errorf("creation entry %+v, want From \"\" To QUEUED At %v Attempt 0", e, m.CreatedAt)
		}
	})

	t.Run("RoundTrip", func(t *testing.T) {
		h := open(t)
		m := newMessage("r1")
		m.Tenant, m.Lane, m.Target = "tenant-7", "lane-x", "chat:42"
		m.Payload = []byte{0, 1, 2, 0xfe, 0xff, '\n', 0}
		m.Text = "héllo\nwörld"
		m.Params = map[string]string{"port": "10", "confirmed": "true", "empty": ""}
		m.Priority, m.CorrelationID, m.MaxAttempts = 7, "corr-1", 12
		m.IdempotencyKey, m.CoalesceKey = "idem-1", "coal-1"
		m.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		m.CreatedAt = at(123456789 * time.Nanosecond) // sub-millisecond part is dropped
		m.UpdatedAt = m.CreatedAt
		m.DueAt = at(90 * time.Second)
		m.ExpiresAt = at(48 * time.Hour)
		h.create(m)

		got := h.get(m.ID)
		if d := diffMessage(got, m); len(d) > 0 {
			t.Errorf("Get differs from what was created:\n%v", d)
		}
	})

	t.Run("GetUnknown", func(t *testing.T) {
		h := open(t)
		h.create(newMessage("r1"))
		if _, err := h.s.Get(h.ctx, "no-such-id"); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("Get unknown id: err %v, want ErrNotFound", err)
		}
	})
}

func testIdempotency(t *testing.T, open opener) {
	t.Run("SameKeyReturnsFirst", func(t *testing.T) {
		h := open(t)
		first := newMessage("r1")
		first.IdempotencyKey, first.Text = "key-1", "first"
		h.create(first)

		again := newMessage("r1")
		again.IdempotencyKey, again.Text = "key-1", "second"
		stored, created, err := h.s.Create(h.ctx, again, herald.CreateOptions{})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if created {
			t.Errorf("created = true, want false for a repeated idempotency key")
		}
		if stored == nil || stored.ID != first.ID || stored.Text != "first" {
			t.Fatalf("Create returned %+v, want the first message %s", stored, first.ID)
		}
		if _, err := h.s.Get(h.ctx, again.ID); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("Get of the repeat's id: err %v, want ErrNotFound (nothing stored)", err)
		}
		all, _, err := h.s.List(h.ctx, herald.Query{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(all) != 1 {
			t.Errorf("store holds %d messages, want 1", len(all))
		}
	})

	t.Run("OtherRouteOrTenant", func(t *testing.T) {
		h := open(t)
		first := newMessage("r1")
		first.IdempotencyKey = "key-1"
		h.create(first)

		otherRoute := newMessage("r2")
		otherRoute.IdempotencyKey = "key-1"
		h.create(otherRoute)

		otherTenant := newMessage("r1")
		otherTenant.Tenant, otherTenant.IdempotencyKey = "globex", "key-1"
		h.create(otherTenant)

		for _, m := range []*herald.Message{newMessage("r1"), newMessage("r1")} {
			h.create(m) // no key: never deduplicated
		}
		for _, id := range []string{first.ID, otherRoute.ID, otherTenant.ID} {
			h.get(id)
		}
	})
}

func testCoalesce(t *testing.T, open opener) {
	// Only one message of a key can be waiting at a time: each Create
	// cancels the one before. So each case has one waiting message, in
	// status waiting, beside others of the same key that are not waiting.
	for _, waiting := range []herald.Status{herald.StatusQueued, herald.StatusToRetry} {
		t.Run("CancelsWaiting"+string(waiting), func(t *testing.T) {
			h := open(t)
			keyed := func(route, tenant string, path ...herald.Status) *herald.Message {
				m := newMessage(route)
				m.Tenant, m.CoalesceKey = tenant, "k"
				h.create(m)
				h.walk(m.ID, at(time.Second), path...)
				return m
			}
			q, s := herald.StatusQueued, herald.StatusSentToNS
			inFlight := keyed("r1", "acme", q, s)
			done := keyed("r1", "acme", q, s, herald.StatusDeliverySuccessful)
			old := keyed("r1", "acme", q, s, herald.StatusToRetry)
			if waiting == q {
				old = keyed("r1", "acme") // the TO_RETRY one is cancelled by this one
			}
			otherRoute := keyed("r2", "acme")
			otherTenant := keyed("r1", "globex")
			otherKey := newMessage("r1")
			otherKey.CoalesceKey = "other"
			h.create(otherKey)

			n := newMessage("r1")
			n.CoalesceKey, n.CreatedAt, n.UpdatedAt = "k", at(time.Hour), at(time.Hour)
			coalesced := -1
			h.createWith(n, herald.CreateOptions{CoalesceNotify: []string{"audit", "billing"}, Coalesced: &coalesced})
			if coalesced != 1 {
				t.Errorf("CreateOptions.Coalesced = %d, want 1", coalesced)
			}

			got := h.get(old.ID)
			if got.Status != herald.StatusCancelled || !sameTime(got.UpdatedAt, n.CreatedAt) {
				t.Errorf("%s message: status %s updated %v, want CANCELLED at the new message's CreatedAt %v",
					waiting, got.Status, got.UpdatedAt, n.CreatedAt)
			}
			e := lastEntry(t, got)
			if e.From != waiting || e.To != herald.StatusCancelled || e.Reason != "coalesced" || !sameTime(e.At, n.CreatedAt) {
				t.Errorf("%s message: last timeline entry %+v, want %s->CANCELLED \"coalesced\" at %v", waiting, e, waiting, n.CreatedAt)
			}
			for _, c := range []struct {
				m    *herald.Message
				want herald.Status
			}{
				{inFlight, s}, {done, herald.StatusDeliverySuccessful}, {otherKey, q},
				{otherRoute, q}, {otherTenant, q}, {n, q},
			} {
				if got := h.get(c.m.ID); got.Status != c.want {
					t.Errorf("message %s: status %s, want %s (not coalesced)", c.m.ID, got.Status, c.want)
				}
			}

			var subs []string
			for _, e := range h.events(at(2 * time.Hour)) {
				if e.Type != herald.StatusCancelled || e.MessageID != old.ID || !sameTime(e.At, n.CreatedAt) {
					t.Errorf("event %+v: want Type CANCELLED for %s At %v", e, old.ID, n.CreatedAt)
				}
				subs = append(subs, e.Subscriber)
			}
			if !sameSet(subs, []string{"audit", "billing"}) {
				t.Errorf("outbox events for %v, want audit and billing", subs)
			}
		})
	}

	t.Run("IdempotentRepeatCoalescesNothing", func(t *testing.T) {
		h := open(t)
		old := newMessage("r1")
		old.CoalesceKey = "k"
		h.create(old)
		first := newMessage("r1")
		first.IdempotencyKey = "i"
		h.create(first)

		repeat := newMessage("r1")
		repeat.IdempotencyKey, repeat.CoalesceKey = "i", "k"
		if _, created, err := h.s.Create(h.ctx, repeat, herald.CreateOptions{}); err != nil || created {
			t.Fatalf("Create repeat: created=%v err=%v, want false, nil", created, err)
		}
		if got := h.get(old.ID); got.Status != herald.StatusQueued || len(got.Timeline) != 1 {
			t.Errorf("after an idempotent repeat: status %s with %d timeline entries, want QUEUED with 1", got.Status, len(got.Timeline))
		}
	})
}
