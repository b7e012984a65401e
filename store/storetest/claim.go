package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func testClaim(t *testing.T, open opener) {
	t.Run("OnlyDueQueued", func(t *testing.T) {
		h := open(t)
		due := h.create(newMessage("r1"))
		later := newMessage("r1")
		later.DueAt = at(time.Minute)
		h.create(later)
		retrying := newMessage("r1")
		h.create(retrying)
		h.walk(retrying.ID, t0, herald.StatusQueued, herald.StatusSentToNS, herald.StatusToRetry)

		if got := ids(h.claim(t0, 10)); !slices.Equal(got, []string{due.ID}) {
			t.Errorf("Claim at t0 = %v, want only the due QUEUED message %s", got, due.ID)
		}
		if got := ids(h.claim(t0, 10)); len(got) != 0 {
			t.Errorf("second Claim at t0 = %v, want nothing (already claimed)", got)
		}
		if got := ids(h.claim(at(time.Minute), 10)); !slices.Equal(got, []string{later.ID}) {
			t.Errorf("Claim at t0+1m = %v, want %s", got, later.ID)
		}
	})

	t.Run("PriorityThenFIFO", func(t *testing.T) {
		h := open(t)
		msgs := make([]*herald.Message, 6)
		for i, p := range []int{0, 5, 0, 9, 5, -1} {
			msgs[i] = newMessage("r1")
			msgs[i].Priority = p
		}
		// Stored out of id order: FIFO is by id, not by insertion.
		for _, i := range []int{4, 2, 5, 0, 3, 1} {
			h.create(msgs[i])
		}
		want := []string{msgs[3].ID, msgs[1].ID, msgs[4].ID, msgs[0].ID, msgs[2].ID, msgs[5].ID}
		var got []string
		for _, limit := range []int{2, 3, 10} {
			page := h.claim(t0, limit)
			if len(page) > limit {
				t.Errorf("Claim with Limit %d returned %d messages", limit, len(page))
			}
			got = append(got, ids(page)...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("claim order %v, want %v", got, want)
		}
	})

	t.Run("ClaimedFields", func(t *testing.T) {
		h := open(t)
		a, b := newMessage("slow"), newMessage("fast")
		h.create(a)
		h.create(b)
		now := at(time.Minute)
		claimed, err := h.s.Claim(h.ctx, herald.Claim{
			Now: now, Limit: 10, AcceptTimeouts: map[string]time.Duration{"fast": 5 * time.Second},
			DefaultAccept: 30 * time.Second,
		})
		if err != nil || len(claimed) != 2 {
			t.Fatalf("Claim = %d messages, %v; want 2", len(claimed), err)
		}
		leases := map[int64]bool{}
		for _, m := range claimed {
			wantDeadline := now.Add(30 * time.Second)
			if m.Route == "fast" {
				wantDeadline = now.Add(5 * time.Second)
			}
			if m.Status != herald.StatusSentToNS || m.Attempt != 1 || !sameTime(m.Deadline, wantDeadline) ||
				!sameTime(m.UpdatedAt, now) || m.Lease == 0 {
				t.Errorf("claimed %s: status %s attempt %d deadline %v updated %v lease %d; want SENT_TO_NS, 1, %v, %v, non-zero",
					m.Route, m.Status, m.Attempt, m.Deadline, m.UpdatedAt, m.Lease, wantDeadline, now)
			}
			leases[m.Lease] = true
			stored := h.get(m.ID)
			if d := diffMessage(stored, m); len(d) > 0 {
				t.Errorf("Get after Claim differs from the claimed message: %v", d)
			}
			e := lastEntry(t, stored)
			e.Reason = "" // the store's choice
			checkEntry(t, "claim", e, herald.TimelineEntry{At: now, From: herald.StatusQueued, To: herald.StatusSentToNS, Attempt: 1})
		}

		// A second claim of the same message: attempt 2, a new lease.
		h.walk(a.ID, now, herald.StatusSentToNS, herald.StatusToRetry, herald.StatusQueued)
		again := h.claim(at(time.Hour), 10)
		if len(again) != 1 || again[0].ID != a.ID {
			t.Fatalf("reclaim = %v, want %s", ids(again), a.ID)
		}
		if again[0].Attempt != 2 || lastEntry(t, h.get(a.ID)).Attempt != 2 {
			t.Errorf("reclaimed attempt %d, timeline attempt %d; want 2", again[0].Attempt, lastEntry(t, h.get(a.ID)).Attempt)
		}
		if again[0].Lease == 0 || leases[again[0].Lease] {
			t.Errorf("reclaimed lease %d, want non-zero and unlike the earlier %v", again[0].Lease, leases)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		h := open(t)
		const n = 500
		msgs := make([]*herald.Message, n)
		for i := range msgs {
			msgs[i] = newMessage("r1")
		}
		h.createAll(msgs)

		var (
			mu     sync.Mutex
			seen   = map[string]int{}
			leases = map[int64]int{} // lease -> the claim that returned it
			calls  int
			wg     sync.WaitGroup
		)
		for range 8 {
			wg.Go(func() {
				for {
					got, err := h.s.Claim(h.ctx, herald.Claim{Now: t0, Limit: 7, DefaultAccept: time.Second})
					if err != nil {
						t.Errorf("Claim: %v", err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					calls++
					for _, m := range got {
						seen[m.ID]++
						if c, ok := leases[m.Lease]; ok && c != calls {
							t.Errorf("lease %d returned by two claims", m.Lease)
						}
						leases[m.Lease] = calls
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for id, k := range seen {
			if k > 1 {
				t.Errorf("message %s claimed %d times", id, k)
			}
		}
		if len(seen) != n {
			t.Errorf("claimed %d distinct messages, want %d", len(seen), n)
		}
	})
}
