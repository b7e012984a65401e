package herald_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// TestPublishToChosenSubscriptions: a publish that names subscriptions
// delivers to those of them that take the event only; an id that is not
// a subscription of the room is refused, naming the field, and nothing is
// published.
func TestPublishToChosenSubscriptions(t *testing.T) {
	r := roomRig(t)
	r.start()
	r.createRoom(herald.RoomRequest{Name: "orders"})
	r.createRoom(herald.RoomRequest{Name: "audit"})
	pull := func(room string, types ...herald.EventType) *herald.Subscription {
		return r.subscribe(room, herald.SubscriptionRequest{Type: herald.SubscriptionPull, EventTypes: types})
	}
	a, b := pull("orders"), pull("orders", herald.EventType{Type: "order.created"})
	other := pull("orders", herald.EventType{Type: "order.paid"})
	elsewhere := pull("audit")

	ev := r.publish("orders", herald.PublishRequest{Type: "order.created", Subscriptions: []string{b.ID}})
	if len(ev.Deliveries) != 1 || ev.Deliveries[0].SubscriptionID != b.ID {
		t.Fatalf("published to %v, want one delivery, to %s (not %s)", ev.Deliveries, b.ID, a.ID)
	}
	if ev := r.publish("orders", herald.PublishRequest{Type: "order.created", Subscriptions: []string{other.ID}}); len(ev.Deliveries) != 0 {
		t.Fatalf("published to a named subscription that does not take the event: %v, want none", ev.Deliveries)
	}
	for _, ids := range [][]string{{a.ID, "no-such-subscription"}, {elsewhere.ID}, {}} {
		_, err := r.eng.Publish(context.Background(), "acme", "orders", herald.PublishRequest{Type: "order.created", CorrelationID: "refused", Subscriptions: ids})
		var invalid *herald.InvalidError
		if !errors.As(err, &invalid) || invalid.Field != "subscriptions" {
			t.Errorf("publish to %v: %v, want an invalid subscriptions", ids, err)
		}
	}
	if msgs, _, err := r.eng.List(context.Background(), "acme", herald.Query{CorrelationID: "refused"}); err != nil || len(msgs) != 0 {
		t.Errorf("refused publishes stored %d deliveries, %v; want none", len(msgs), err)
	}
}

// TestPushHeadersCountRedeliveries: a push carries the redeliveries before
// it and the backoff waited before it in headers: 0 and 0 on a first send
// that succeeds; after one failure, 1 and the delay (1 s: 1000).
func TestPushHeadersCountRedeliveries(t *testing.T) {
	r := roomRig(t)
	var (
		mu    sync.Mutex
		fails = map[string]int{} // by subscription: failures left to answer
		got   = map[string][]http.Header{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		sub := req.Header.Get("X-Herald-Target")
		got[sub] = append(got[sub], req.Header.Clone())
		if fails[sub] > 0 {
			fails[sub]--
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	r.start()
	r.createRoom(herald.RoomRequest{Name: "orders", Delivery: herald.DeliveryOverrides{Delay: ptr(time.Second), Multiplier: ptr(2.0)}})
	first := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPush, URL: srv.URL})
	second := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPush, URL: srv.URL})
	mu.Lock()
	fails[second.ID] = 1
	mu.Unlock()
	ev := r.publish("orders", herald.PublishRequest{Type: "order.created"})
	r.advance(time.Second)
	for _, c := range []struct {
		sub      *herald.Subscription
		attempts []string // X-Herald-Attempt of each push
		delays   []string // X-Herald-Delivery-Delay-Ms of each push
	}{
		{first, []string{"0"}, []string{"0"}},
		{second, []string{"0", "1"}, []string{"0", "1000"}},
	} {
		mu.Lock()
		pushes := got[c.sub.ID]
		mu.Unlock()
		if len(pushes) != len(c.attempts) {
			t.Fatalf("%d pushes to %s, want %d", len(pushes), c.sub.ID, len(c.attempts))
		}
		for i, h := range pushes {
			if a, d := h.Get("X-Herald-Attempt"), h.Get("X-Herald-Delivery-Delay-Ms"); a != c.attempts[i] || d != c.delays[i] {
				t.Errorf("push %d to %s: X-Herald-Attempt %q, X-Herald-Delivery-Delay-Ms %q; want %q and %q", i, c.sub.ID, a, d, c.attempts[i], c.delays[i])
			}
		}
		if m := r.get(delivery(t, ev, c.sub.ID)); m.Status != herald.StatusDeliverySuccessful {
			t.Errorf("delivery to %s: %s, want DELIVERY_SUCCESSFUL", c.sub.ID, m.Status)
		}
	}
}
