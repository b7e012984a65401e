package storetest

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// testTimeline checks what the timeline keeps beyond the statuses: every
// attempt's answer (Transition.Call), through retries and a replay, and the
// entry of a transition that keeps the status but has a reason.
func testTimeline(t *testing.T, open opener) {
	t.Run("EveryAttemptsAnswer", func(t *testing.T) {
		h := open(t)
		h.create(newMessage("r1"))
		long := strings.Repeat("é", herald.MaxCallError/2) // a text as long as a timeline entry keeps
		calls := []herald.Call{
			{Answer: "503", Error: "webhook: POST http://hooks: 503 Service Unavailable: down\n|for now", Duration: 1500 * time.Millisecond},
			{Answer: "500", Error: long, Duration: 20 * time.Millisecond},
			{Answer: "400", Error: "webhook: POST http://hooks: 400 Bad Request: no such field", Duration: 3 * time.Millisecond},
		}
		var id string
		for i, c := range calls {
			now := at(time.Duration(i) * time.Minute)
			if i > 0 {
				if _, err := h.s.Release(h.ctx, now, 10); err != nil {
					t.Fatalf("Release: %v", err)
				}
			}
			got := h.claim(now, 1)
			if len(got) != 1 {
				t.Fatalf("claim %d: %d messages, want 1", i+1, len(got))
			}
			m := got[0]
			id = m.ID
			to, reason := herald.StatusToRetry, "send failed"
			if i == len(calls)-1 {
				to, reason = herald.StatusDeliveryFailed, "permanent error: send failed"
			}
			h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: to, Lease: m.Lease, At: now.Add(time.Second),
				DueAt: now.Add(time.Second), Reason: reason, LastError: c.Error, Call: c})
		}
		h.transition(herald.Transition{ID: id, From: herald.StatusDeliveryFailed, To: herald.StatusQueued, At: at(time.Hour),
			DueAt: at(time.Hour), ResetAttempts: true, Reason: "replayed by user"})
		m := h.get(id)
		var got []herald.Call
		for _, e := range m.Timeline {
			if !e.Call.IsZero() {
				got = append(got, e.Call)
			}
			if e.To == herald.StatusSentToNS && !e.Call.IsZero() {
				t.Errorf("claim entry %+v carries a call", e)
			}
		}
		if !slices.Equal(got, calls) {
			t.Errorf("the timeline's answers after a replay:\n%+v\nwant\n%+v", got, calls)
		}
		if last := lastEntry(t, m); last.Reason != "replayed by user" || !last.Call.IsZero() {
			t.Errorf("replay entry %+v, want its reason and no call", last)
		}
	})

	t.Run("SameStatusWithReason", func(t *testing.T) {
		h := open(t)
		later := newMessage("r1")
		later.DueAt = at(time.Hour)
		h.create(later)
		if got := h.claim(t0, 10); len(got) != 0 {
			t.Fatalf("claim before it is due = %v, want none", ids(got))
		}
		// Without a reason a transition that keeps the status records nothing.
		h.transition(herald.Transition{ID: later.ID, From: herald.StatusQueued, To: herald.StatusQueued, At: at(time.Second), DueAt: at(time.Hour)})
		if m := h.get(later.ID); len(m.Timeline) != 1 {
			t.Fatalf("timeline after a transition without a reason: %d entries, want 1", len(m.Timeline))
		}
		h.transition(herald.Transition{ID: later.ID, From: herald.StatusQueued, To: herald.StatusQueued, At: at(2 * time.Second),
			DueAt: at(2 * time.Second), Reason: "sent now by an operator"})
		m := h.get(later.ID)
		checkEntry(t, "send-now", lastEntry(t, m), herald.TimelineEntry{At: at(2 * time.Second), From: herald.StatusQueued,
			To: herald.StatusQueued, Reason: "sent now by an operator"})
		if m.Status != herald.StatusQueued || !sameTime(m.DueAt, at(2*time.Second)) {
			t.Errorf("after send-now: %s due %v, want QUEUED due %v", m.Status, m.DueAt, at(2*time.Second))
		}
		if got := h.claim(at(2*time.Second), 10); !slices.Equal(ids(got), []string{later.ID}) {
			t.Errorf("claim once due now = %v, want %s", ids(got), later.ID)
		}
	})

	// A message waiting to retry an hour from now, QUEUED due now (an
	// operator's send-now), is claimed at once, through its lane too.
	for _, rule := range []herald.Admission{{}, {Concurrency: 2}, {Concurrency: 2, ClaimAhead: 4}} {
		t.Run("RetryDueNow/gated="+strconv.FormatBool(rule.Gated())+",ahead="+strconv.Itoa(rule.ClaimAhead), func(t *testing.T) {
			h := open(t)
			if rule.Gated() {
				h.admit(map[string]herald.Admission{"g": rule})
			}
			m := newMessage("g")
			m.Lane = "dcu-1"
			h.create(m)
			c := h.claimKept("n1", 10, map[string]int{"g": 10}, nil)
			if len(c) != 1 {
				t.Fatalf("first claim = %v, want %s", ids(c), m.ID)
			}
			h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusToRetry, Lease: c[0].Lease, At: t0,
				DueAt: at(time.Hour), Reason: "send failed"})
			if got := h.claimKept("n1", 10, map[string]int{"g": 10}, nil); len(got) != 0 {
				t.Fatalf("claim while it waits to retry = %v, want none", ids(got))
			}
			h.transition(herald.Transition{ID: m.ID, From: herald.StatusToRetry, To: herald.StatusQueued, At: t0, DueAt: t0,
				Reason: "sent now by an operator"})
			if got := h.claimKept("n1", 10, map[string]int{"g": 10}, nil); !slices.Equal(ids(got), []string{m.ID}) {
				t.Errorf("claim once due now = %v, want %s", ids(got), m.ID)
			}
		})
	}

	// A scheduled message of a gated route's lane, made due now, is
	// claimed through its lane, a kept route's (ClaimAhead) too.
	for _, rule := range []herald.Admission{{Concurrency: 2}, {Concurrency: 2, ClaimAhead: 4}} {
		t.Run("SameStatusGated/ahead="+strconv.Itoa(rule.ClaimAhead), func(t *testing.T) {
			h := open(t)
			h.admit(map[string]herald.Admission{"g": rule})
			m := newMessage("g")
			m.Lane, m.DueAt = "dcu-1", at(time.Hour)
			h.create(m)
			if got := h.claimKept("n1", 10, map[string]int{"g": 10}, nil); len(got) != 0 {
				t.Fatalf("claim before it is due = %v, want none", ids(got))
			}
			h.transition(herald.Transition{ID: m.ID, From: herald.StatusQueued, To: herald.StatusQueued, At: t0, DueAt: t0,
				Reason: "sent now by an operator"})
			if got := h.claimKept("n1", 10, map[string]int{"g": 10}, nil); !slices.Equal(ids(got), []string{m.ID}) {
				t.Errorf("claim once due now = %v, want %s", ids(got), m.ID)
			}
		})
	}
}
