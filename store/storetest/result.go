package storetest

import (
	"maps"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// testResult: a transition's Result is kept with the message, read by
// Get, List, Claim and Overdue alike; a transition without one keeps it;
// a replay clears it.
func testResult(t *testing.T, open opener) {
	h := open(t)
	h.create(newMessage("r1"))
	m := h.claim(t0, 1)[0]
	h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliveredToNS, Lease: m.Lease,
		At: at(time.Second), Deadline: at(time.Minute), DueAt: at(10 * time.Second)})
	result := map[string]string{"execution": "failure", "reason": "meter | offline \"100%\""}
	h.transition(herald.Transition{ID: m.ID, From: herald.StatusDeliveredToNS, To: herald.StatusDeliverySuccessful, Lease: m.Lease,
		At: at(20 * time.Second), Reason: "task completed", Result: result})
	if got := h.get(m.ID); !maps.Equal(got.Result, result) {
		t.Errorf("Get after a transition with a result: Result %v, want %v", got.Result, result)
	}
	listed, _, err := h.s.List(h.ctx, herald.Query{Tenant: "acme", Status: herald.StatusDeliverySuccessful})
	if err != nil || len(listed) != 1 || !maps.Equal(listed[0].Result, result) {
		t.Errorf("List: %v, %v; want the message with Result %v", listed, err, result)
	}

	// A replay starts afresh: no result until a new one.
	h.transition(herald.Transition{ID: m.ID, From: herald.StatusDeliverySuccessful, To: herald.StatusQueued,
		At: at(time.Minute), DueAt: at(time.Minute), ResetAttempts: true, Reason: "replayed"})
	if got := h.get(m.ID); got.Result != nil {
		t.Errorf("after a replay: Result %v, want none", got.Result)
	}

	// A message created with a result keeps it; a transition without one
	// changes nothing of it.
	c := newMessage("r1")
	c.Result = map[string]string{"method": "propagated"}
	h.create(c)
	h.transition(herald.Transition{ID: c.ID, From: herald.StatusQueued, To: herald.StatusCancelled, At: at(time.Second), Reason: "cancelled"})
	if got := h.get(c.ID); !maps.Equal(got.Result, c.Result) {
		t.Errorf("a created result after a transition without one: %v, want %v", got.Result, c.Result)
	}
}
