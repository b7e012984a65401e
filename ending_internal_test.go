package herald

import (
	"strings"
	"testing"
	"time"
)

// TestExplainEnd: explain on an ended message says why it ended, from the
// entry that ended it, with its error, and whether a replay can help.
func TestExplainEnd(t *testing.T) {
	e := &Engine{}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		status Status
		reason string
		call   Call
		want   []string
		helps  *bool
	}{
		{StatusDeliveryFailed, "permanent error: send failed", Call{Answer: "400", Error: "no such field"},
			[]string{"permanent error: no such field", "answered 400", "a replay will fail the same way"}, ptr(false)},
		{StatusDeliveryFailed, "send failed; 3 of 3 attempts used", Call{Answer: "503", Error: "down"},
			[]string{"attempts used up (3 of 3)", "down", "a replay can help once the carrier is back"}, ptr(true)},
		{StatusDeliveryFailed, "expired", Call{}, []string{"expired: expired at"}, ptr(true)},
		{StatusDeliveryFailed, "route removed", Call{}, []string{"route removed: route r1 was not in the configuration", "once the route is configured again"}, ptr(false)},
		{StatusDeliveryFailed, "carrier timeout", Call{Error: "Timed out waiting"}, []string{"carrier timeout", "Timed out waiting"}, ptr(true)},
		{StatusDeliveryFailed, "subscription deleted", Call{}, []string{"subscription was deleted"}, ptr(false)},
		{StatusCancelled, "coalesced", Call{}, []string{"cancelled and coalesced"}, ptr(false)},
		{StatusCancelled, "cancelled by user", Call{}, []string{"cancelled by an operator"}, ptr(true)},
		{StatusDeliverySuccessful, "accepted by carrier", Call{Answer: "204"}, []string{"delivered"}, nil},
	} {
		m := &Message{ID: "m1", Route: "r1", Status: tc.status, Attempt: 3, MaxAttempts: 3, CreatedAt: at, LastError: "expired at then",
			Timeline: []TimelineEntry{{At: at, To: StatusQueued, Reason: "created"}, {At: at, From: StatusQueued, To: tc.status, Reason: tc.reason, Call: tc.call}}}
		var x Explanation
		e.explainEnd(&x, m)
		for _, w := range tc.want {
			if !strings.Contains(x.Detail, w) {
				t.Errorf("%s %q: detail %q lacks %q", tc.status, tc.reason, x.Detail, w)
			}
		}
		if x.Reason != "terminal" || (x.ReplayHelps == nil) != (tc.helps == nil) || (x.ReplayHelps != nil && *x.ReplayHelps != *tc.helps) {
			t.Errorf("%s %q: reason %s, replay_helps %v; want terminal, %v", tc.status, tc.reason, x.Reason, deref(x.ReplayHelps), deref(tc.helps))
		}
	}
}

func ptr(b bool) *bool { return &b }

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}
