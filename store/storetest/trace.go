package storetest

import (
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// traceParent is a W3C traceparent as Message.TraceParent keeps one.
const traceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// testTraceParent checks that a message's TraceParent comes back from
// every read that returns messages: the dispatcher's claim (which starts
// the carrier call's span), Get, List, Overdue and FindByExternalID; and
// that a message without one reads back without one.
func testTraceParent(t *testing.T, open opener) {
	h := open(t)
	traced, plain := newMessage("r1"), newMessage("r1")
	traced.TraceParent = traceParent
	h.create(traced)
	h.create(plain)
	want := map[string]string{traced.ID: traceParent, plain.ID: ""}
	check := func(what string, msgs ...*herald.Message) {
		t.Helper()
		if len(msgs) == 0 {
			t.Errorf("%s returned no message", what)
		}
		for _, m := range msgs {
			if w, ok := want[m.ID]; ok && m.TraceParent != w {
				t.Errorf("%s: message %s has TraceParent %q, want %q", what, m.ID, m.TraceParent, w)
			}
		}
	}
	check("Get", h.get(traced.ID), h.get(plain.ID))
	list, _, err := h.s.List(h.ctx, herald.Query{Tenant: "acme"})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	check("List", list...)

	claimed := h.claim(t0, 10)
	if len(claimed) != 2 {
		t.Fatalf("Claim returned %d messages, want 2", len(claimed))
	}
	check("Claim", claimed...)
	for _, m := range claimed {
		h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliveredToNS, Lease: m.Lease,
			At: t0, Deadline: at(time.Minute), ExternalID: "ext-" + m.ID})
	}
	overdue, err := h.s.Overdue(h.ctx, at(2*time.Minute), 10)
	if err != nil {
		t.Fatalf("Overdue: %v", err)
	}
	check("Overdue", overdue...)
	for id := range want {
		m, err := h.s.FindByExternalID(h.ctx, "r1", "ext-"+id)
		if err != nil {
			t.Fatalf("FindByExternalID: %v", err)
		}
		check("FindByExternalID", m)
	}
}
