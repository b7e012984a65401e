package herald

import (
	"context"
	"testing"
	"time"
)

// lateStore is a Store whose transitions of the message its test names
// conflict once, as when the message moved on, and which then holds that
// message as cur; it records the transitions it applies.
type lateStore struct {
	transitionLog
	cur      *Message
	conflict bool
}

func (s *lateStore) Transition(ctx context.Context, t Transition) error {
	if s.conflict {
		s.conflict = false
		return ErrConflict
	}
	return s.transitionLog.Transition(ctx, t)
}

func (s *lateStore) Get(context.Context, string) (*Message, error) {
	cp := *s.cur
	return &cp, nil
}

// TestLateAnswerAdoptedOrDropped: the answer to attempt 1 of m finds the
// message moved on. A success is adopted when the message waits for its
// next attempt (it takes the answer as if in time, its lease still
// attempt 1's), and ends a message whose attempt 2 is at the carrier when
// it is a delivery; an acceptance by a push carrier while attempt 2 is at
// the carrier, a failure, or any answer to a message that ended changes
// nothing.
func TestLateAnswerAdoptedOrDropped(t *testing.T) {
	claimed := &Message{ID: "m1", Route: "r", Status: StatusSentToNS, Attempt: 1, Lease: 7, MaxAttempts: 5, CreatedAt: t0}
	at := t0.Add(30 * time.Second)
	delivered := Transition{From: StatusSentToNS, To: StatusDeliverySuccessful, Lease: 7, At: at, ExternalID: "x1", Reason: "accepted by carrier"}
	accepted := Transition{From: StatusSentToNS, To: StatusDeliveredToNS, Lease: 7, At: at, ExternalID: "q1", Deadline: at.Add(time.Minute), Reason: "accepted by carrier"}
	failed := Transition{From: StatusSentToNS, To: StatusToRetry, Lease: 7, At: at, DueAt: at, Reason: "send failed"}
	for _, tc := range []struct {
		name   string
		cur    Message
		answer Transition
		want   *Transition // nil: dropped
	}{
		{"delivered while TO_RETRY", Message{Status: StatusToRetry, Attempt: 1, Lease: 7}, delivered,
			&Transition{From: StatusToRetry, To: StatusDeliverySuccessful, Lease: 7, At: at, ExternalID: "x1", Reason: "late answer of attempt 1 adopted: accepted by carrier"}},
		{"accepted while QUEUED", Message{Status: StatusQueued, Attempt: 1, Lease: 7}, accepted,
			&Transition{From: StatusQueued, To: StatusDeliveredToNS, Lease: 7, At: at, ExternalID: "q1", Deadline: at.Add(time.Minute), Reason: "late answer of attempt 1 adopted: accepted by carrier"}},
		{"delivered while attempt 2 is at the carrier", Message{Status: StatusSentToNS, Attempt: 2, Lease: 8}, delivered,
			&Transition{From: StatusSentToNS, To: StatusDeliverySuccessful, Lease: 8, At: at, ExternalID: "x1", Reason: "late answer of attempt 1 adopted: accepted by carrier"}},
		{"accepted while attempt 2 is at the carrier", Message{Status: StatusDeliveredToNS, Attempt: 2, Lease: 8}, accepted, nil},
		{"failed while TO_RETRY", Message{Status: StatusToRetry, Attempt: 1, Lease: 7}, failed, nil},
		{"delivered after it failed", Message{Status: StatusDeliveryFailed, Attempt: 1, Lease: 7}, delivered, nil},
		{"delivered after a replay claimed it again", Message{Status: StatusToRetry, Attempt: 1, Lease: 9}, delivered, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newBufferRig(t, 0)
			cur := tc.cur
			cur.ID, cur.Route = "m1", "r"
			st := &lateStore{cur: &cur, conflict: true}
			rig.e.store = st
			err := rig.e.recordResult(context.Background(), claimed, tc.answer)
			ts := st.transitions()
			if tc.want == nil {
				if len(ts) != 0 || err == nil {
					t.Fatalf("applied %+v (%v), want the answer dropped", ts, err)
				}
				return
			}
			if err != nil || len(ts) != 1 {
				t.Fatalf("applied %+v (%v), want one adoption", ts, err)
			}
			got := ts[0]
			got.ID, got.Notify = "", nil
			if got.From != tc.want.From || got.To != tc.want.To || got.Lease != tc.want.Lease || !got.At.Equal(tc.want.At) ||
				got.ExternalID != tc.want.ExternalID || !got.Deadline.Equal(tc.want.Deadline) || got.Reason != tc.want.Reason {
				t.Fatalf("adoption %+v, want %+v", got, *tc.want)
			}
		})
	}
}
