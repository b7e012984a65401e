package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func testTransition(t *testing.T, open opener) {
	t.Run("WrongFromConflicts", func(t *testing.T) {
		h := open(t)
		m := h.create(newMessage("r1"))
		err := h.s.Transition(h.ctx, herald.Transition{ID: m.ID, From: herald.StatusToRetry, To: herald.StatusQueued, At: at(time.Second)})
		if !errors.Is(err, herald.ErrConflict) {
			t.Errorf("Transition from the wrong status: err %v, want ErrConflict", err)
		}
		if got := h.get(m.ID); got.Status != herald.StatusQueued || len(got.Timeline) != 1 || !sameTime(got.UpdatedAt, t0) {
			t.Errorf("after a conflict: status %s, %d timeline entries, updated %v; want unchanged", got.Status, len(got.Timeline), got.UpdatedAt)
		}
	})

	t.Run("Lease", func(t *testing.T) {
		h := open(t)
		h.create(newMessage("r1"))
		m := h.claim(t0, 1)[0]
		wrong := herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, Lease: m.Lease + 1, At: at(time.Second)}
		if err := h.s.Transition(h.ctx, wrong); !errors.Is(err, herald.ErrConflict) {
			t.Errorf("Transition under the wrong lease: err %v, want ErrConflict", err)
		}
		if got := h.get(m.ID); got.Status != herald.StatusSentToNS || len(got.Timeline) != 2 {
			t.Errorf("after a lease conflict: status %s with %d entries, want SENT_TO_NS with 2", got.Status, len(got.Timeline))
		}
		right := wrong
		right.Lease = m.Lease
		h.transition(right)
		if got := h.get(m.ID); got.Status != herald.StatusDeliverySuccessful {
			t.Errorf("status %s after a transition under the right lease, want DELIVERY_SUCCESSFUL", got.Status)
		}
	})

	t.Run("UnknownID", func(t *testing.T) {
		h := open(t)
		err := h.s.Transition(h.ctx, herald.Transition{ID: "no-such-id", From: herald.StatusQueued, To: herald.StatusCancelled, At: t0})
		if !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("Transition of an unknown id: err %v, want ErrNotFound", err)
		}
	})

	t.Run("AppliesFields", func(t *testing.T) {
		h := open(t)
		created := newMessage("r1")
		created.ExpiresAt = at(time.Hour)
		h.create(created)
		m := h.claim(t0, 1)[0]

		// Accepted: every field set; the lease lasts while the message is in flight.
		accept := herald.Transition{
			ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliveredToNS, Lease: m.Lease,
			At: at(time.Second), Reason: "accepted", DueAt: at(10 * time.Second), Deadline: at(15 * time.Minute),
			ExpiresAt: at(2 * time.Hour), ExternalID: "ext-1", LastError: "warning",
		}
		h.transition(accept)
		want := *m
		want.Status, want.UpdatedAt, want.DueAt, want.Deadline = accept.To, accept.At, accept.DueAt, accept.Deadline
		want.ExpiresAt, want.ExternalID, want.LastError = accept.ExpiresAt, accept.ExternalID, accept.LastError
		got := h.get(m.ID)
		if d := diffMessage(got, &want); len(d) > 0 {
			t.Errorf("after %s->%s: %v", accept.From, accept.To, d)
		}

		// Failed: zero times clear DueAt and Deadline, empty strings and a
		// zero ExpiresAt keep theirs, and the lease ends with the flight.
		retry := herald.Transition{
			ID: m.ID, From: herald.StatusDeliveredToNS, To: herald.StatusToRetry, Lease: m.Lease,
			At: at(2 * time.Second), Reason: "carrier timeout", LastError: "timeout",
		}
		h.transition(retry)
		want.Status, want.UpdatedAt, want.DueAt, want.Deadline = retry.To, retry.At, time.Time{}, time.Time{}
		want.LastError, want.Lease = "timeout", 0
		got = h.get(m.ID)
		if d := diffMessage(got, &want); len(d) > 0 {
			t.Errorf("after %s->%s: %v", retry.From, retry.To, d)
		}
		if len(got.Timeline) != 4 {
			t.Fatalf("timeline has %d entries, want 4: %+v", len(got.Timeline), got.Timeline)
		}
		checkEntry(t, "accept", got.Timeline[2], herald.TimelineEntry{At: accept.At, From: accept.From, To: accept.To, Attempt: 1, Reason: "accepted"})
		checkEntry(t, "retry", got.Timeline[3], herald.TimelineEntry{At: retry.At, From: retry.From, To: retry.To, Attempt: 1, Reason: "carrier timeout"})
	})

	t.Run("ResetAttempts", func(t *testing.T) {
		h := open(t)
		h.create(newMessage("r1"))
		m := h.claim(t0, 1)[0]
		h.walk(m.ID, at(time.Second), herald.StatusSentToNS, herald.StatusDeliveryFailed)
		h.transition(herald.Transition{ID: m.ID, From: herald.StatusDeliveryFailed, To: herald.StatusQueued, At: at(time.Minute), DueAt: at(time.Minute), ResetAttempts: true, Reason: "replay"})
		got := h.get(m.ID)
		if got.Attempt != 0 || got.Status != herald.StatusQueued || !sameTime(got.DueAt, at(time.Minute)) {
			t.Errorf("after replay: attempt %d status %s due %v, want 0 QUEUED %v", got.Attempt, got.Status, got.DueAt, at(time.Minute))
		}
		checkEntry(t, "replay", lastEntry(t, got), herald.TimelineEntry{At: at(time.Minute), From: herald.StatusDeliveryFailed, To: herald.StatusQueued, Attempt: 0, Reason: "replay"})
		if again := h.claim(at(time.Minute), 1); len(again) != 1 || again[0].Attempt != 1 {
			t.Errorf("claim after replay: %d messages, want 1 at attempt 1", len(again))
		}
	})

	t.Run("TerminalStaysWithStaleFrom", func(t *testing.T) {
		h := open(t)
		h.create(newMessage("r1"))
		m := h.claim(t0, 1)[0]
		h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, Lease: m.Lease, At: at(time.Second)})
		for _, to := range []herald.Status{herald.StatusToRetry, herald.StatusDeliveryFailed} {
			err := h.s.Transition(h.ctx, herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: to, Lease: m.Lease, At: at(time.Minute)})
			if !errors.Is(err, herald.ErrConflict) {
				t.Errorf("stale SENT_TO_NS->%s: err %v, want ErrConflict", to, err)
			}
		}
		if got := h.get(m.ID); got.Status != herald.StatusDeliverySuccessful || len(got.Timeline) != 3 {
			t.Errorf("status %s with %d entries, want DELIVERY_SUCCESSFUL with 3", got.Status, len(got.Timeline))
		}
	})

	t.Run("Notify", func(t *testing.T) {
		h := open(t)
		h.create(newMessage("r1"))
		m := h.claim(t0, 1)[0]
		done := herald.Transition{
			ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, Lease: m.Lease,
			At: at(3 * time.Second), Notify: []string{"hook-a", "hook-b"},
		}
		stale := done
		stale.From, stale.Notify = herald.StatusDeliveredToNS, []string{"hook-c"}
		if err := h.s.Transition(h.ctx, stale); !errors.Is(err, herald.ErrConflict) {
			t.Fatalf("stale transition: err %v, want ErrConflict", err)
		}
		h.transition(done)

		evs := h.events(at(time.Hour))
		var subs []string
		for _, e := range evs {
			subs = append(subs, e.Subscriber)
			if e.MessageID != m.ID || e.Type != herald.StatusDeliverySuccessful || !sameTime(e.At, done.At) || e.ID == "" {
				t.Errorf("event %+v, want MessageID %s Type DELIVERY_SUCCESSFUL At %v and an id", e, m.ID, done.At)
			}
		}
		if !sameSet(subs, []string{"hook-a", "hook-b"}) {
			t.Errorf("events for %v, want one each for hook-a and hook-b (none for a failed transition)", subs)
		}
		if len(evs) == 2 && evs[0].ID == evs[1].ID {
			t.Errorf("two events share id %s", evs[0].ID)
		}
	})
}

func testRelease(t *testing.T, open opener) {
	t.Run("DueOnly", func(t *testing.T) {
		h := open(t)
		retry := func(due time.Time) *herald.Message {
			m := h.create(newMessage("r1"))
			h.walk(m.ID, t0, herald.StatusQueued, herald.StatusSentToNS)
			h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusToRetry, At: t0, DueAt: due})
			return m
		}
		early, onTime, late := retry(at(time.Second)), retry(at(2*time.Second)), retry(at(time.Hour))
		queued := h.create(newMessage("r1"))

		n, err := h.s.Release(h.ctx, at(2*time.Second), 10)
		if err != nil || n != 2 {
			t.Fatalf("Release = %d, %v; want 2", n, err)
		}
		for _, m := range []*herald.Message{early, onTime} {
			got := h.get(m.ID)
			if got.Status != herald.StatusQueued {
				t.Errorf("released message: status %s, want QUEUED", got.Status)
			}
			e := lastEntry(t, got)
			if e.From != herald.StatusToRetry || e.To != herald.StatusQueued || !sameTime(e.At, at(2*time.Second)) {
				t.Errorf("released message: last entry %+v, want TO_RETRY->QUEUED at %v", e, at(2*time.Second))
			}
		}
		if got := h.get(late.ID); got.Status != herald.StatusToRetry {
			t.Errorf("message due later: status %s, want TO_RETRY", got.Status)
		}
		if got := ids(h.claim(at(2*time.Second), 10)); !sameSet(got, []string{early.ID, onTime.ID, queued.ID}) {
			t.Errorf("claim after release = %v, want the two released and the queued one", got)
		}
	})

	t.Run("Limit", func(t *testing.T) {
		h := open(t)
		var want []string
		for range 5 {
			m := h.create(newMessage("r1"))
			h.walk(m.ID, t0, herald.StatusQueued, herald.StatusSentToNS, herald.StatusToRetry)
			want = append(want, m.ID)
		}
		var counts []int
		for range 4 {
			n, err := h.s.Release(h.ctx, at(time.Second), 2)
			if err != nil {
				t.Fatalf("Release: %v", err)
			}
			counts = append(counts, n)
		}
		if !slices.Equal(counts, []int{2, 2, 1, 0}) {
			t.Errorf("Release with limit 2 moved %v, want [2 2 1 0]", counts)
		}
		if got := ids(h.claim(at(time.Second), 10)); !sameSet(got, want) {
			t.Errorf("claim after release = %v, want all %d", got, len(want))
		}
	})
}
