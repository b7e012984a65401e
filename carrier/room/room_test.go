package room

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
