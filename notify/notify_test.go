package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/stdwebhook"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func event() herald.OutcomeEvent {
	m := &herald.Message{ID: "m1", Route: "hooks", Status: herald.StatusDeliverySuccessful, Attempt: 2, Text: "hi", CreatedAt: now, UpdatedAt: now}
	view := m.View()
	return herald.OutcomeEvent{ID: "evt-1", Type: herald.StatusDeliverySuccessful, At: now, Message: &view}
}

type capture struct {
	mu     sync.Mutex
	header http.Header
	body   []byte
}

func serve(t *testing.T, status int, c *capture) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.header, c.body = r.Header.Clone(), b
		c.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

func TestDeliverSigned(t *testing.T) {
	var c capture
	secret := []byte("sub-secret")
	sink, err := New(serve(t, http.StatusNoContent, &c), secret, nil, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	e := event()
	if err := sink.Deliver(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ct := c.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if id := c.header.Get("webhook-id"); id != "evt-1" {
		t.Errorf("webhook-id %q", id)
	}
	if err := stdwebhook.Verify(secret, c.header, c.body, now, time.Minute); err != nil {
		t.Errorf("signature: %v", err)
	}
	var got herald.OutcomeEvent
	if err := json.Unmarshal(c.body, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != e.ID || got.Type != e.Type || !got.At.Equal(e.At) || got.Message.ID != "m1" || got.Message.Attempt != 2 || got.Message.Text != "hi" {
		t.Errorf("body %s", c.body)
	}
}

func TestDeliverUnsigned(t *testing.T) {
	var c capture
	sink, err := New(serve(t, http.StatusOK, &c), nil, nil, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Deliver(context.Background(), event()); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.header.Get("webhook-id") != "evt-1" || c.header.Get("webhook-timestamp") != "1772366400" {
		t.Errorf("headers %v", c.header)
	}
	if _, ok := c.header["Webhook-Signature"]; ok {
		t.Error("signature without a secret")
	}
}

func TestDeliverFailures(t *testing.T) {
	cases := []struct {
		status    int
		permanent bool
	}{{400, true}, {404, true}, {408, false}, {429, false}, {500, false}, {503, false}}
	for _, c := range cases {
		var cp capture
		sink, err := New(serve(t, c.status, &cp), nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = sink.Deliver(context.Background(), event())
		var pe *herald.PermanentError
		if err == nil || errors.As(err, &pe) != c.permanent {
			t.Errorf("%d: err %v, want permanent=%v", c.status, err, c.permanent)
		}
	}
}

func TestDeliverNetworkError(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.URL
	s.Close()
	sink, err := New(u, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pe *herald.PermanentError
	if err := sink.Deliver(context.Background(), event()); err == nil || errors.As(err, &pe) {
		t.Errorf("err %v, want transient", err)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "example.com/x", "mailto:a@b"} {
		if _, err := New(u, nil, nil, nil); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
}

// TestDeliverHMAC: a sink signing with HMAC puts the hex HMAC-SHA256 of
// the raw body in its header (X-Signature by default), after its prefix,
// and no Standard Webhooks signature.
func TestDeliverHMAC(t *testing.T) {
	secret := []byte("shared-secret")
	for _, c := range []struct{ header, prefix, want string }{
		{"", "", "X-Signature"},
		{"x-device-messaging-signature", "sha256=", "X-Device-Messaging-Signature"},
	} {
		var got capture
		sink, err := New(serve(t, http.StatusOK, &got), secret, nil, func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.HMAC(c.header, c.prefix).Deliver(context.Background(), event()); err != nil {
			t.Fatal(err)
		}
		got.mu.Lock()
		mac := hmac.New(sha256.New, secret)
		mac.Write(got.body)
		if sig := got.header.Get(c.want); sig != c.prefix+hex.EncodeToString(mac.Sum(nil)) {
			t.Errorf("%s: %q, want %s and the hex HMAC-SHA256 of the body", c.want, sig, c.prefix)
		}
		if got.header.Get("webhook-signature") != "" || got.header.Get("webhook-id") != "evt-1" {
			t.Errorf("headers %v: want webhook-id and no Standard Webhooks signature", got.header)
		}
		got.mu.Unlock()
	}
}
