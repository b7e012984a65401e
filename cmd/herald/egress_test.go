package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/config"
)

// startConfigServer starts an in-process herald on SQLite from the config
// lines given (after listen and store), stopped when the test ends, and
// returns a caller of its API with key.
func startConfigServer(t *testing.T, key, lines string) *serverProc {
	t.Helper()
	f, err := config.Parse([]byte("listen: 127.0.0.1:0\nstore: sqlite:" + filepath.Join(t.TempDir(), "herald.db") + "\n" + lines))
	if err != nil {
		t.Fatal(err)
	}
	s, err := startServer(context.Background(), f, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.shutdown(); err != nil {
			t.Error(err)
		}
	})
	return &serverProc{t: t, base: "http://" + s.addr, key: key}
}

// egressConfig is a server's config with the key k1 of tenant acme and
// the egress lines given.
func egressConfig(egress string) string {
	return "api_keys: [{key: k1, tenant: acme}]\n" + egress +
		"routes:\n  - {name: hooks, carrier: webhook, url: \"http://127.0.0.1:9/in\"}\n"
}

// publishOne publishes an event to room and returns its one delivery's message id.
func publishOne(t *testing.T, api *serverProc, room string) string {
	t.Helper()
	var pub struct {
		Deliveries []struct {
			MessageID string `json:"message_id"`
		} `json:"deliveries"`
	}
	mustCall(t, api, "POST", "/v1/rooms/"+room+"/events", map[string]any{"type": "order.created", "data": map[string]int{"n": 1}}, &pub, http.StatusAccepted)
	if len(pub.Deliveries) != 1 {
		t.Fatalf("publish: %d deliveries, want 1", len(pub.Deliveries))
	}
	return pub.Deliveries[0].MessageID
}

// waitEnded waits until message id is terminal and returns its view.
func waitEnded(t *testing.T, api *serverProc, id string) herald.MessageView {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var v herald.MessageView
		mustCall(t, api, "GET", "/v1/messages/"+id, nil, &v, http.StatusOK)
		if v.Status.Terminal() {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %s is still %s", id, v.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPushSubscriptionsKeepToTheEgressPolicy: a tenant's push subscription
// may not make herald POST to this machine or its network. A URL naming a
// loopback, link-local (the cloud metadata service) or IPv6 loopback
// address is refused at its creation, 400 naming url; one naming a host
// that resolves to 127.0.0.1 is created, and its delivery fails for good
// at the connection, saying why, without reaching the server; each
// refusal is counted in /metrics. With the address in egress.allow, the
// same subscriptions are made and delivered.
func TestPushSubscriptionsKeepToTheEgressPolicy(t *testing.T) {
	var hits atomic.Int32
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer sink.Close()
	port := strconv.Itoa(sink.Listener.Addr().(*net.TCPAddr).Port)

	api := startConfigServer(t, "k1", egressConfig(""))
	mustCall(t, api, "POST", "/v1/rooms", map[string]any{"name": "orders"}, nil, http.StatusCreated)
	for _, u := range []string{sink.URL + "/hook", "http://169.254.169.254/latest/meta-data/", "http://[::1]:" + port + "/hook",
		"http://127.0.0.1:" + port + "/ui/login", "http://0.0.0.0:" + port + "/"} {
		var e struct {
			Error struct{ Code, Message string }
		}
		mustCall(t, api, "POST", "/v1/rooms/orders/subscriptions", map[string]any{"type": "push", "url": u}, &e, http.StatusBadRequest)
		if e.Error.Code != "invalid_field" || !strings.HasPrefix(e.Error.Message, "url: ") || !strings.Contains(e.Error.Message, "egress") {
			t.Errorf("push to %s: %+v, want invalid_field naming url and the egress policy", u, e.Error)
		}
	}
	var sub struct{ ID string }
	mustCall(t, api, "POST", "/v1/rooms/orders/subscriptions", map[string]any{"type": "push", "url": "http://localhost:" + port + "/hook"}, &sub, http.StatusCreated)
	v := waitEnded(t, api, publishOne(t, api, "orders"))
	if v.Status != herald.StatusDeliveryFailed || v.Attempt != 1 || !strings.Contains(v.LastError, "is loopback: refused by the egress policy") {
		t.Errorf("delivery to a name of 127.0.0.1: %s after %d attempts, %q; want failed at once by the egress policy", v.Status, v.Attempt, v.LastError)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the sink was reached %d times", n)
	}
	if n := metric(t, api, `herald_problems_total{kind="egress_refused"}`); n < 6 {
		t.Errorf("egress_refused counted %v times, want at least 6", n)
	}

	allowed := startConfigServer(t, "k1", egressConfig("egress: {allow: [127.0.0.0/8, \"::1\"]}\n"))
	mustCall(t, allowed, "POST", "/v1/rooms", map[string]any{"name": "orders"}, nil, http.StatusCreated)
	mustCall(t, allowed, "POST", "/v1/rooms/orders/subscriptions", map[string]any{"type": "push", "url": sink.URL + "/hook"}, &sub, http.StatusCreated)
	if v := waitEnded(t, allowed, publishOne(t, allowed, "orders")); v.Status != herald.StatusDeliverySuccessful || hits.Load() != 1 {
		t.Fatalf("allowed: %s %q, %d hits", v.Status, v.LastError, hits.Load())
	}
	mustCall(t, allowed, "POST", "/v1/rooms/orders/subscriptions", map[string]any{"type": "push", "url": "http://localhost:" + port + "/hook"}, &sub, http.StatusCreated)
	mustCall(t, allowed, "DELETE", "/v1/subscriptions/"+firstSub(t, allowed), nil, nil, http.StatusNoContent)
	if v := waitEnded(t, allowed, publishOne(t, allowed, "orders")); v.Status != herald.StatusDeliverySuccessful || hits.Load() != 2 {
		t.Fatalf("allowed, by name: %s %q, %d hits", v.Status, v.LastError, hits.Load())
	}
}

// firstSub returns the id of the first subscription of room orders.
func firstSub(t *testing.T, api *serverProc) string {
	t.Helper()
	var list struct {
		Subscriptions []struct{ ID string } `json:"subscriptions"`
	}
	mustCall(t, api, "GET", "/v1/rooms/orders/subscriptions", nil, &list, http.StatusOK)
	if len(list.Subscriptions) == 0 {
		t.Fatal("no subscription")
	}
	return list.Subscriptions[0].ID
}
