package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func testDelete(t *testing.T, open opener) {
	q, s, r := herald.StatusQueued, herald.StatusSentToNS, herald.StatusToRetry
	ok, failed, cancelled := herald.StatusDeliverySuccessful, herald.StatusDeliveryFailed, herald.StatusCancelled

	// place stores a message of tenant and route that reached the last
	// status of path at updated.
	place := func(h *harness, tenant, route string, updated time.Duration, path ...herald.Status) string {
		m := newMessage(route)
		m.Tenant = tenant
		h.create(m)
		h.walk(m.ID, at(updated), path...)
		return m.ID
	}
	// gone fails unless exactly the ids in deleted are gone from h's store.
	gone := func(t *testing.T, h *harness, all, deleted []string) {
		t.Helper()
		for _, id := range all {
			_, err := h.s.Get(h.ctx, id)
			switch {
			case slices.Contains(deleted, id) && !errors.Is(err, herald.ErrNotFound):
				t.Errorf("message %s: Get err %v, want ErrNotFound (deleted)", id, err)
			case !slices.Contains(deleted, id) && err != nil:
				t.Errorf("message %s: Get err %v, want it kept", id, err)
			}
		}
	}

	t.Run("Purge", func(t *testing.T) {
		h := open(t)
		oldA1 := place(h, "acme", "r1", time.Minute, q, s, failed)
		newA1 := place(h, "acme", "r1", time.Hour, q, s, failed)
		oldA2 := place(h, "acme", "r2", time.Minute, q, s, failed)
		oldB1 := place(h, "globex", "r1", time.Minute, q, s, failed)
		cancelledA1 := place(h, "acme", "r1", time.Minute, q, cancelled)
		queuedA1 := place(h, "acme", "r1", 0)
		all := []string{oldA1, newA1, oldA2, oldB1, cancelledA1, queuedA1}

		n, err := h.s.Purge(h.ctx, herald.PurgeQuery{Tenant: "acme", Route: "r1", Before: at(30 * time.Minute)})
		if err != nil || n != 1 {
			t.Fatalf("Purge acme/r1 before 30m = %d, %v; want 1", n, err)
		}
		gone(t, h, all, []string{oldA1})

		n, err = h.s.Purge(h.ctx, herald.PurgeQuery{Tenant: "acme"})
		if err != nil || n != 2 {
			t.Fatalf("Purge acme = %d, %v; want 2", n, err)
		}
		gone(t, h, all, []string{oldA1, newA1, oldA2})
	})

	t.Run("Prune", func(t *testing.T) {
		h := open(t)
		old := []string{
			place(h, "acme", "r1", time.Minute, q, s, ok),
			place(h, "acme", "r1", time.Minute, q, s, failed),
			place(h, "globex", "r2", time.Minute, q, cancelled),
		}
		kept := []string{
			place(h, "acme", "r1", time.Hour, q, s, ok), // terminal, but recent
			place(h, "acme", "r1", 0),                   // active, old
			place(h, "acme", "r1", time.Minute, q, s),
			place(h, "acme", "r1", time.Minute, q, s, r),
		}
		all := append(slices.Clone(old), kept...)
		var counts []int
		for range 3 {
			n, err := h.s.Prune(h.ctx, at(30*time.Minute), 2)
			if err != nil {
				t.Fatalf("Prune: %v", err)
			}
			counts = append(counts, n)
		}
		if !slices.Equal(counts, []int{2, 1, 0}) {
			t.Errorf("Prune with limit 2 deleted %v, want [2 1 0]", counts)
		}
		gone(t, h, all, old)
		if routes, err := h.s.ActiveRoutes(h.ctx); err != nil || !slices.Equal(routes, []string{"r1"}) {
			t.Errorf("ActiveRoutes after Prune = %v, %v; want [r1]", routes, err)
		}
	})
}
