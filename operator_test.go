package herald_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// counting returns a webhook server that counts its requests and answers
// them with status.
func counting(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestSendAt: a message sent with send_at 3 s ahead waits QUEUED (explain
// says scheduled until then, the view's next_attempt_at too) and is not
// sent before; it is sent once its time comes. A send_at in the past is
// now; one beyond 366 days, or not before expires_at, is refused.
func TestSendAt(t *testing.T) {
	srv, sends := counting(t, http.StatusOK)
	r := newRig(t, []herald.Route{webhookRoute(t, "hooks", srv.URL, herald.ProfileChannel)})
	r.start()
	at := t0.Add(3 * time.Second)
	m := r.send(herald.SendRequest{Route: "hooks", Text: "later", SendAt: at})
	r.settle()
	x, err := r.eng.Explain(context.Background(), "acme", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if x.Reason != "scheduled" || x.Until == nil || !x.Until.Equal(at) {
		t.Errorf("explain = %+v, want scheduled until %v", x, at)
	}
	if v := r.get(m.ID).View(); v.NextAttemptAt == nil || !v.NextAttemptAt.Equal(at) {
		t.Errorf("next_attempt_at = %v, want %v", v.NextAttemptAt, at)
	}
	r.advance(2999 * time.Millisecond)
	if got := r.get(m.ID); got.Status != herald.StatusQueued || sends.Load() != 0 {
		t.Fatalf("before its send_at: %s, %d sends; want QUEUED, none", got.Status, sends.Load())
	}
	r.advance(time.Millisecond)
	if got := r.get(m.ID); got.Status != herald.StatusDeliverySuccessful || sends.Load() != 1 {
		t.Fatalf("at its send_at: %s, %d sends; want DELIVERY_SUCCESSFUL, 1", got.Status, sends.Load())
	}

	past := r.send(herald.SendRequest{Route: "hooks", Text: "past", SendAt: r.clock.Now().Add(-time.Hour)})
	r.settle()
	if got := r.get(past.ID); got.Status != herald.StatusDeliverySuccessful {
		t.Errorf("send_at in the past: %s, want sent at once", got.Status)
	}
	now := r.clock.Now()
	for _, req := range []herald.SendRequest{
		{Route: "hooks", Text: "far", SendAt: now.Add(herald.MaxSendAhead + time.Second)},
		{Route: "hooks", Text: "dead on arrival", SendAt: now.Add(time.Hour), ExpiresAt: now.Add(time.Minute)},
	} {
		_, _, err := r.eng.Send(context.Background(), "acme", req)
		var invalid *herald.InvalidError
		if !errors.As(err, &invalid) || invalid.Field != "send_at" {
			t.Errorf("send_at %v (expires %v): %v, want an invalid send_at", req.SendAt, req.ExpiresAt, err)
		}
	}
}

// TestSendNow: a scheduled message and one waiting to retry are sent at
// once on an operator's send-now, which their timelines record; a
// message that waits for nothing is refused ErrNotWaiting, and another
// tenant's is not found.
func TestSendNow(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	t.Cleanup(srv.Close)
	r := newRig(t, []herald.Route{webhookRoute(t, "hooks", srv.URL, herald.ProfileChannel)})
	r.start()
	ctx := context.Background()

	retrying := r.send(herald.SendRequest{Route: "hooks", Text: "retry"})
	r.settle()
	if got := r.get(retrying.ID); got.Status != herald.StatusToRetry {
		t.Fatalf("after a 502: %s, want TO_RETRY", got.Status)
	}
	fail.Store(false)
	later := r.send(herald.SendRequest{Route: "hooks", Text: "later", SendAt: t0.Add(time.Hour)})
	r.settle()
	for _, m := range []*herald.Message{retrying, later} {
		v, err := r.eng.SendNow(ctx, "acme", m.ID)
		if err != nil {
			t.Fatalf("send-now %s: %v", m.ID, err)
		}
		if v.Status == herald.StatusToRetry || (v.Status == herald.StatusQueued && v.DueAt.After(r.clock.Now())) {
			t.Errorf("send-now answered %s due %v, want due now (or taken already)", v.Status, v.DueAt)
		}
		if _, err := r.eng.SendNow(ctx, "other", m.ID); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("another tenant's send-now: %v, want ErrNotFound", err)
		}
	}
	r.settle()
	for _, m := range []*herald.Message{retrying, later} {
		got := r.get(m.ID)
		if got.Status != herald.StatusDeliverySuccessful {
			t.Errorf("%s after send-now: %s, want DELIVERY_SUCCESSFUL without the clock moving", m.Text, got.Status)
		}
		found := false
		for _, e := range got.Timeline {
			found = found || e.Reason == "sent now by an operator"
		}
		if !found {
			t.Errorf("%s's timeline does not record the send-now: %+v", m.Text, got.Timeline)
		}
	}
	if _, err := r.eng.SendNow(ctx, "acme", later.ID); !errors.Is(err, herald.ErrNotWaiting) {
		t.Errorf("send-now of a delivered message: %v, want ErrNotWaiting", err)
	}
}

// TestCancelMessages: bulk cancel takes the tenant's waiting messages of
// the route that match every filter, and nothing else: not another
// route's, another lane's or target's, not another tenant's, not those
// created after before, not one in flight; a filter without a route is
// refused.
func TestCancelMessages(t *testing.T) {
	srv, _ := counting(t, http.StatusOK)
	r := newRig(t, []herald.Route{webhookRoute(t, "hooks", srv.URL, herald.ProfileChannel), webhookRoute(t, "other", srv.URL, herald.ProfileChannel)})
	ctx := context.Background() // the loops are not started: every message waits QUEUED
	send := func(tenant, route, lane, target string) *herald.Message {
		m, _, err := r.eng.Send(ctx, tenant, herald.SendRequest{Route: route, Lane: lane, Target: target, Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	want := []*herald.Message{send("acme", "hooks", "a", "t1"), send("acme", "hooks", "a", "t1")}
	keep := []*herald.Message{send("acme", "hooks", "b", "t1"), send("acme", "hooks", "a", "t2"), send("acme", "other", "a", "t1"), send("globex", "hooks", "a", "t1")}
	r.clock.Advance(time.Second)
	keep = append(keep, send("acme", "hooks", "a", "t1")) // created at the filter's before
	n, err := r.eng.CancelMessages(ctx, "acme", herald.CancelFilter{Route: "hooks", Lane: "a", Target: "t1", Status: herald.StatusQueued, Before: r.clock.Now()})
	if err != nil || n != len(want) {
		t.Fatalf("cancelled %d, %v; want %d", n, err, len(want))
	}
	for _, m := range want {
		if got, _ := r.eng.Get(ctx, "acme", m.ID); got.Status != herald.StatusCancelled {
			t.Errorf("%s: %s, want CANCELLED", m.ID, got.Status)
		}
	}
	for _, m := range keep {
		if got, _ := r.eng.Get(ctx, m.Tenant, m.ID); got.Status != herald.StatusQueued {
			t.Errorf("%s (%s %s %s %s): %s, want still QUEUED", m.ID, m.Tenant, m.Route, m.Lane, m.Target, got.Status)
		}
	}
	for _, f := range []herald.CancelFilter{{}, {Route: "hooks", Status: herald.StatusSentToNS}} {
		var invalid *herald.InvalidError
		if _, err := r.eng.CancelMessages(ctx, "acme", f); !errors.As(err, &invalid) {
			t.Errorf("filter %+v: %v, want invalid", f, err)
		} else if !strings.Contains(invalid.Field, "route") && !strings.Contains(invalid.Field, "status") {
			t.Errorf("filter %+v: field %q", f, invalid.Field)
		}
	}
	// Those sent already are left alone.
	r.start()
	r.settle()
	n, err = r.eng.CancelMessages(ctx, "acme", herald.CancelFilter{Route: "other"})
	if err != nil || n != 0 {
		t.Errorf("after the sends: cancelled %d, %v; want none", n, err)
	}
}
