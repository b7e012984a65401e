package room

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/stdwebhook"
)

// store is a fixed set of subscriptions and deliveries.
type store struct {
	subs       map[string]*herald.Subscription
	deliveries map[string]*herald.Message
	getErr     error
}

func (s *store) Subscription(_ context.Context, id string) (*herald.Subscription, error) {
	if sub, ok := s.subs[id]; ok {
		return sub, nil
	}
	return nil, herald.ErrNotFound
}

func (s *store) Get(_ context.Context, id string) (*herald.Message, error) {
	if s.getErr != nil {
		return nil, s.getErr
	}
	if m, ok := s.deliveries[id]; ok {
		return m, nil
	}
	return nil, herald.ErrNotFound
}

// TestSend posts a delivery as its subscriber gets it: the JSON body, its
// content type, the Standard Webhooks signature with the subscription's
// secret; a subscription that is gone or pulls fails the delivery for good.
// A delivery that moved on from its claim is not posted.
func TestSend(t *testing.T) {
	var got struct {
		posts  int
		header http.Header
		body   []byte
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.posts++
		got.header, got.body = r.Header.Clone(), must(io.ReadAll(r.Body))
	}))
	defer srv.Close()
	secrets := map[string]string{"SIGNING": "whsec_a2V5"}
	st := &store{
		subs: map[string]*herald.Subscription{
			"s1": {ID: "s1", Type: herald.SubscriptionPush, URL: srv.URL + "/hook", SecretEnv: "SIGNING"},
			"s2": {ID: "s2", Type: herald.SubscriptionPull},
			"s3": {ID: "s3", Type: herald.SubscriptionPush, URL: srv.URL, SecretEnv: "UNSET"},
			"s4": {ID: "s4", Type: herald.SubscriptionPush, URL: srv.URL, Secret: "whsec_b3du"}, // its own secret: "own"
		},
		deliveries: map[string]*herald.Message{"m1": {ID: "m1", Status: herald.StatusSentToNS, Lease: 7}},
	}
	c, err := New(Config{
		Store: st,
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, // the test server's
		Secret: func(name string) ([]byte, error) {
			v, ok := secrets[name]
			if !ok {
				return nil, errors.New("unset")
			}
			return stdwebhook.ParseSecret(v)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &herald.Message{ID: "m1", Route: "room:orders", Target: "s1", Status: herald.StatusSentToNS, Lease: 7, Attempt: 3, Text: `{"n":1}`, CorrelationID: "c1",
		Params: map[string]string{"event_id": "e1", "type": "order.created", "version": "2"}}
	if _, err := c.Send(t.Context(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	var body herald.DeliveryView
	if err := json.Unmarshal(got.body, &body); err != nil {
		t.Fatal(err)
	}
	want := herald.DeliveryView{ID: "m1", EventID: "e1", Room: "orders", Type: "order.created", Version: "2",
		Data: json.RawMessage(`{"n":1}`), CorrelationID: "c1", Attempt: 2}
	if string(must(json.Marshal(body))) != string(must(json.Marshal(want))) {
		t.Errorf("body %s, want %+v", got.body, want)
	}
	if ct := got.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if err := stdwebhook.Verify([]byte("key"), got.header, got.body, time.Now(), time.Minute); err != nil || got.header.Get("webhook-id") != "m1" {
		t.Errorf("signature: %v (id %q)", err, got.header.Get("webhook-id"))
	}
	m.Target = "s4"
	if _, err := c.Send(t.Context(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := stdwebhook.Verify([]byte("own"), got.header, got.body, time.Now(), time.Minute); err != nil {
		t.Errorf("signature with the subscription's own secret: %v", err)
	}
	for _, target := range []string{"gone", "s2", "s3"} {
		m := *m
		m.Target = target
		var perm *herald.PermanentError
		if _, err := c.Send(t.Context(), &m); !errors.As(err, &perm) {
			t.Errorf("Send to %s: %v, want a permanent error", target, err)
		}
	}

	// The delivery as the store has it right before the POST.
	for _, tt := range []struct {
		name      string
		stored    *herald.Message
		getErr    error
		permanent bool
	}{
		{name: "ended by a deletion", stored: &herald.Message{ID: "m1", Status: herald.StatusDeliveryFailed, LastError: "subscription deleted"}, permanent: true},
		{name: "claimed again", stored: &herald.Message{ID: "m1", Status: herald.StatusSentToNS, Lease: 8}, permanent: true},
		{name: "gone", permanent: true},
		{name: "the store down", stored: m, getErr: herald.ErrStoreUnavailable},
	} {
		st.deliveries, st.getErr = map[string]*herald.Message{}, tt.getErr
		if tt.stored != nil {
			st.deliveries["m1"] = tt.stored
		}
		before := got.posts
		_, err := c.Send(t.Context(), m)
		var perm *herald.PermanentError
		if err == nil || errors.As(err, &perm) != tt.permanent || got.posts != before {
			t.Errorf("%s: %v (permanent: %v), %d posts; want an error, permanent %v, and no post", tt.name, err, errors.As(err, &perm), got.posts-before, tt.permanent)
		}
	}
}

// TestSendKeepsToTheEgressPolicy: without an allow list, the carrier
// refuses a URL naming a loopback address (CheckURL) and fails a delivery
// to it for good without reaching it; the answer of a server it may reach
// is quoted in errors as a tenant may read it: no HTML.
func TestSendKeepsToTheEgressPolicy(t *testing.T) {
	reached := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached = true
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "<html>admin console</html>")
	}))
	defer srv.Close()
	m := &herald.Message{ID: "m1", Route: "room:orders", Target: "s1", Text: `{}`, Status: herald.StatusSentToNS, Lease: 1}
	hooks := &store{subs: map[string]*herald.Subscription{"s1": {ID: "s1", Type: herald.SubscriptionPush, URL: srv.URL}},
		deliveries: map[string]*herald.Message{"m1": m}}
	var told []string
	c := must(New(Config{Store: hooks, OnRefuse: func(a netip.Addr, kind string) { told = append(told, kind) }}))
	if err := c.CheckURL(srv.URL); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("CheckURL(%s): %v, want refused", srv.URL, err)
	}
	var perm *herald.PermanentError
	if _, err := c.Send(t.Context(), m); !errors.As(err, &perm) || reached {
		t.Errorf("Send: %v (reached %v), want a permanent refusal before connecting", err, reached)
	}
	if len(told) != 2 {
		t.Errorf("OnRefuse told %q, want the check and the connection", told)
	}
	allowed := must(New(Config{Store: hooks, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}))
	_, err := allowed.Send(t.Context(), m)
	if !errors.As(err, &perm) || !reached || strings.Contains(err.Error(), "admin") || !strings.HasSuffix(err.Error(), ": 403 Forbidden") {
		t.Errorf("Send, allowed: %v, want a 403 quoted without its HTML", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSendWithoutTheEventsData: a delivery the engine gave no data (its
// event is gone) fails for good, and nothing is posted.
func TestSendWithoutTheEventsData(t *testing.T) {
	posts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { posts++ }))
	defer srv.Close()
	st := &store{
		subs:       map[string]*herald.Subscription{"s1": {ID: "s1", Type: herald.SubscriptionPush, URL: srv.URL}},
		deliveries: map[string]*herald.Message{"m1": {ID: "m1", Status: herald.StatusSentToNS, Lease: 7}},
	}
	c, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	m := &herald.Message{ID: "m1", Route: "room:orders", Target: "s1", Status: herald.StatusSentToNS, Lease: 7, Attempt: 1,
		Params: map[string]string{"event_id": "e1", "type": "order.created"}}
	var perm *herald.PermanentError
	if _, err := c.Send(t.Context(), m); !errors.As(err, &perm) || posts != 0 {
		t.Fatalf("Send without data: %v, %d posts; want a permanent error, none", err, posts)
	}
}
