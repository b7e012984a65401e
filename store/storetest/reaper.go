package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func testOverdue(t *testing.T, open opener) {
	now := at(time.Hour)
	past, future := at(time.Minute), at(2*time.Hour)

	// setup stores one message per case and returns the ids Overdue must
	// return at now, and those DuePolls must.
	setup := func(h *harness) (want, polls []string) {
		// place creates a message (expiring at expires) and moves it along
		// path, the last transition setting due and deadline.
		place := func(overdue bool, expires, due, deadline time.Time, path ...herald.Status) *herald.Message {
			m := newMessage("r1")
			m.ExpiresAt = expires
			h.create(m)
			if len(path) > 1 {
				h.walk(m.ID, t0, path[:len(path)-1]...)
				h.transition(herald.Transition{ID: m.ID, From: path[len(path)-2], To: path[len(path)-1], At: t0, DueAt: due, Deadline: deadline})
			}
			if overdue {
				want = append(want, m.ID)
			}
			return m
		}
		q, s, d, v, r := herald.StatusQueued, herald.StatusSentToNS, herald.StatusDeliveredToNS, herald.StatusSentToDevice, herald.StatusToRetry
		var zero time.Time
		place(true, zero, zero, past, q, s)                                  // accept deadline passed
		place(false, zero, zero, future, q, s)                               // accept deadline ahead
		place(false, zero, zero, zero, q, s)                                 // no deadline
		place(true, zero, zero, now, q, s, d)                                // carrier deadline reached
		place(true, zero, zero, past, q, s, d, v)                            // device deadline passed
		place(true, past, zero, zero)                                        // QUEUED, expired
		place(true, now, zero, zero)                                         // QUEUED, expiring now
		place(false, future, zero, zero)                                     // QUEUED, expires later
		place(true, past, past, zero, q, s, r)                               // TO_RETRY, expired
		place(false, zero, past, zero, q, s, r)                              // TO_RETRY due: Release's, not overdue
		polls = append(polls, place(false, zero, now, future, q, s, d).ID)   // poll due now: DuePolls', not overdue
		polls = append(polls, place(false, zero, past, future, q, s, d).ID)  // poll due before: DuePolls' first
		place(false, zero, zero, future, q, s, d)                            // no poll
		place(false, zero, future, future, q, s, d)                          // poll later
		place(true, past, zero, past, q, s, d)                               // both reasons at once: returned once
		place(false, past, past, past, q, s, d, herald.StatusDeliveryFailed) // terminal
		place(false, past, zero, zero, q, herald.StatusCancelled)            // terminal
		slices.Reverse(polls)                                                // earliest due first
		return want, polls
	}

	t.Run("Cases", func(t *testing.T) {
		h := open(t)
		want, polls := setup(h)
		got, err := h.s.Overdue(h.ctx, now, 100)
		if err != nil {
			t.Fatalf("Overdue: %v", err)
		}
		if !sameSet(ids(got), want) {
			t.Errorf("Overdue = %v, want %v", ids(got), want)
		}
		for _, m := range got {
			if d := diffMessage(m, h.get(m.ID)); len(d) > 0 {
				t.Errorf("Overdue message differs from Get: %v", d)
			}
		}
		due, err := h.s.DuePolls(h.ctx, now, 100)
		if err != nil {
			t.Fatalf("DuePolls: %v", err)
		}
		if !slices.Equal(ids(due), polls) {
			t.Errorf("DuePolls = %v, want %v, earliest due first", ids(due), polls)
		}
		for _, m := range due {
			if d := diffMessage(m, h.get(m.ID)); len(d) > 0 {
				t.Errorf("DuePolls message differs from Get: %v", d)
			}
		}
		if due, err := h.s.DuePolls(h.ctx, now, 1); err != nil || !slices.Equal(ids(due), polls[:1]) {
			t.Errorf("DuePolls with limit 1 = %v, %v; want %v", ids(due), err, polls[:1])
		}
	})

	t.Run("Limit", func(t *testing.T) {
		h := open(t)
		want, _ := setup(h)
		got, err := h.s.Overdue(h.ctx, now, 3)
		if err != nil {
			t.Fatalf("Overdue: %v", err)
		}
		g := ids(got)
		if len(g) != 3 || len(slices.Compact(slices.Sorted(slices.Values(g)))) != 3 {
			t.Errorf("Overdue with limit 3 = %v, want 3 distinct messages", g)
		}
		for _, id := range g {
			if !slices.Contains(want, id) {
				t.Errorf("Overdue returned %s, which is not overdue", id)
			}
		}
	})
}

func testClaimPoll(t *testing.T, open opener) {
	// polled returns a message claimed at t0 and accepted as a pull task
	// whose first poll is due at due.
	polled := func(h *harness, due time.Time) *herald.Message {
		h.create(newMessage("r1"))
		m := h.claim(t0, 1)[0]
		h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliveredToNS, Lease: m.Lease,
			At: t0, DueAt: due, Deadline: at(48 * time.Hour), ExternalID: "task-1"})
		return h.get(m.ID)
	}
	due, until := at(10*time.Second), at(40*time.Second)

	t.Run("OneTaker", func(t *testing.T) {
		h := open(t)
		m := polled(h, due)
		if err := h.s.ClaimPoll(h.ctx, m.ID, m.Lease, due, until); err != nil {
			t.Fatalf("ClaimPoll: %v", err)
		}
		got := h.get(m.ID)
		if !sameTime(got.DueAt, until) || got.Status != herald.StatusDeliveredToNS || len(got.Timeline) != len(m.Timeline) || got.ExternalID != "task-1" {
			t.Errorf("after ClaimPoll: %s due %v, %d timeline entries, external id %q; want DELIVERED_TO_NS due %v, %d entries, task-1",
				got.Status, got.DueAt, len(got.Timeline), got.ExternalID, until, len(m.Timeline))
		}
		// Another node, which read the same due, finds the poll taken.
		if err := h.s.ClaimPoll(h.ctx, m.ID, m.Lease, due, at(50*time.Second)); !errors.Is(err, herald.ErrConflict) {
			t.Errorf("second ClaimPoll of the same due: %v, want ErrConflict", err)
		}
		if got, err := h.s.DuePolls(h.ctx, at(39*time.Second), 10); err != nil || len(got) != 0 {
			t.Errorf("DuePolls before until: %v, %v; want none", ids(got), err)
		}
		if got, err := h.s.DuePolls(h.ctx, until, 10); err != nil || !slices.Equal(ids(got), []string{m.ID}) {
			t.Errorf("DuePolls at until: %v, %v; want the task (its taker died: another polls it)", ids(got), err)
		}
	})

	t.Run("Refused", func(t *testing.T) {
		h := open(t)
		m := polled(h, due)
		if err := h.s.ClaimPoll(h.ctx, m.ID, m.Lease+1, due, until); !errors.Is(err, herald.ErrConflict) {
			t.Errorf("another lease: %v, want ErrConflict", err)
		}
		if err := h.s.ClaimPoll(h.ctx, "no-such-message", m.Lease, due, until); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("unknown id: %v, want ErrNotFound", err)
		}
		h.transition(herald.Transition{ID: m.ID, From: herald.StatusDeliveredToNS, To: herald.StatusDeliverySuccessful, Lease: m.Lease, At: due})
		if err := h.s.ClaimPoll(h.ctx, m.ID, m.Lease, due, until); !errors.Is(err, herald.ErrConflict) {
			t.Errorf("a task that ended: %v, want ErrConflict", err)
		}
		if got := h.get(m.ID); got.Status != herald.StatusDeliverySuccessful || !got.DueAt.IsZero() {
			t.Errorf("the ended task after a refused ClaimPoll: %s due %v, want DELIVERY_SUCCESSFUL, no due", got.Status, got.DueAt)
		}
	})
}

func testLookup(t *testing.T, open opener) {
	t.Run("FindByExternalID", func(t *testing.T) {
		h := open(t)
		withExternal := func(route, ext string, final herald.Status) *herald.Message {
			m := h.create(newMessage(route))
			h.walk(m.ID, t0, herald.StatusQueued, herald.StatusSentToNS)
			h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliveredToNS, At: t0, ExternalID: ext})
			if final != herald.StatusDeliveredToNS {
				h.walk(m.ID, t0, herald.StatusDeliveredToNS, final)
			}
			return m
		}
		withExternal("r1", "X", herald.StatusDeliverySuccessful) // an earlier, finished use of X
		active := withExternal("r1", "X", herald.StatusDeliveredToNS)
		other := withExternal("r2", "X", herald.StatusSentToDevice)
		withExternal("r1", "Y", herald.StatusDeliveryFailed)

		for _, c := range []struct{ route, ext, want string }{
			{"r1", "X", active.ID}, {"r2", "X", other.ID}, {"r1", "Y", ""}, {"r1", "Z", ""}, {"r3", "X", ""},
		} {
			m, err := h.s.FindByExternalID(h.ctx, c.route, c.ext)
			switch {
			case c.want == "" && !errors.Is(err, herald.ErrNotFound):
				t.Errorf("FindByExternalID(%s, %s): %v, %v; want ErrNotFound", c.route, c.ext, m, err)
			case c.want != "" && (err != nil || m.ID != c.want):
				t.Errorf("FindByExternalID(%s, %s): %v, %v; want %s", c.route, c.ext, m, err, c.want)
			}
		}
	})

	t.Run("ActiveRoutes", func(t *testing.T) {
		h := open(t)
		h.create(newMessage("queued"))
		h.walk(h.create(newMessage("retrying")).ID, t0, herald.StatusQueued, herald.StatusSentToNS, herald.StatusToRetry)
		h.walk(h.create(newMessage("flying")).ID, t0, herald.StatusQueued, herald.StatusSentToNS, herald.StatusDeliveredToNS)
		h.walk(h.create(newMessage("done")).ID, t0, herald.StatusQueued, herald.StatusCancelled)
		h.create(newMessage("queued"))
		got, err := h.s.ActiveRoutes(h.ctx)
		if err != nil {
			t.Fatalf("ActiveRoutes: %v", err)
		}
		if !sameSet(got, []string{"queued", "retrying", "flying"}) {
			t.Errorf("ActiveRoutes = %v, want queued, retrying and flying, each once", got)
		}
	})

	t.Run("Counts", func(t *testing.T) {
		h := open(t)
		add := func(tenant, route string, created time.Duration, path ...herald.Status) string {
			m := newMessage(route)
			m.Tenant, m.CreatedAt = tenant, at(created)
			h.create(m)
			h.walk(m.ID, at(created), path...)
			return m.ID
		}
		q, s, f := herald.StatusQueued, herald.StatusSentToNS, herald.StatusDeliveryFailed
		add("acme", "r1", 3*time.Second)
		add("acme", "r1", time.Second)
		add("acme", "r1", 2*time.Second)
		add("acme", "r1", 5*time.Second, q, s, f)
		add("acme", "r2", 4*time.Second)
		flying := add("globex", "r1", 7*time.Second, q, s)
		add("globex", "r1", 6*time.Second, q, s)

		got, err := h.s.Counts(h.ctx)
		if err != nil {
			t.Fatalf("Counts: %v", err)
		}
		want := []herald.Count{
			{Tenant: "acme", Route: "r1", Status: q, N: 3, OldestCreated: at(time.Second)},
			{Tenant: "acme", Route: "r1", Status: f, N: 1}, // the oldest of waiting messages only
			{Tenant: "acme", Route: "r2", Status: q, N: 1, OldestCreated: at(4 * time.Second)},
			{Tenant: "globex", Route: "r1", Status: s, N: 2},
		}
		if len(got) != len(want) {
			t.Fatalf("Counts = %+v, want %+v", got, want)
		}
		for _, w := range want {
			i := slices.IndexFunc(got, func(c herald.Count) bool {
				return c.Tenant == w.Tenant && c.Route == w.Route && c.Status == w.Status
			})
			if i < 0 || got[i].N != w.N || !sameTime(got[i].OldestCreated, w.OldestCreated) {
				t.Errorf("Counts = %+v, missing %+v", got, w)
			}
		}

		// A message leaving a status, deleted or not, leaves its count.
		if n, err := h.s.Purge(h.ctx, herald.PurgeQuery{Tenant: "acme"}); err != nil || n != 1 {
			t.Fatalf("Purge = %d, %v; want the one dead letter", n, err)
		}
		h.walk(flying, at(8*time.Second), s, herald.StatusDeliverySuccessful)
		got, err = h.s.Counts(h.ctx)
		if err != nil {
			t.Fatalf("Counts: %v", err)
		}
		want = []herald.Count{
			{Tenant: "acme", Route: "r1", Status: q, N: 3, OldestCreated: at(time.Second)},
			{Tenant: "acme", Route: "r2", Status: q, N: 1, OldestCreated: at(4 * time.Second)},
			{Tenant: "globex", Route: "r1", Status: s, N: 1},
			{Tenant: "globex", Route: "r1", Status: herald.StatusDeliverySuccessful, N: 1},
		}
		if len(got) != len(want) {
			t.Fatalf("after a purge and a delivery: Counts = %+v, want %+v", got, want)
		}
		for _, w := range want {
			if !slices.ContainsFunc(got, func(c herald.Count) bool {
				return c.Tenant == w.Tenant && c.Route == w.Route && c.Status == w.Status && c.N == w.N
			}) {
				t.Errorf("after a purge and a delivery: Counts = %+v, missing %+v", got, w)
			}
		}

		// A claim moves its messages' counts too.
		if claimed := h.claim(at(9*time.Second), 2); len(claimed) != 2 {
			t.Fatalf("claimed %d, want 2", len(claimed))
		}
		got, err = h.s.Counts(h.ctx)
		if err != nil {
			t.Fatalf("Counts: %v", err)
		}
		byStatus := map[herald.Status]int{}
		for _, c := range got {
			byStatus[c.Status] += c.N
		}
		if byStatus[q] != 2 || byStatus[s] != 3 {
			t.Errorf("after claiming 2: Counts = %+v, want 2 QUEUED and 3 SENT_TO_NS", got)
		}
	})
}
