package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/config"
)

// TestSubscribersFromTheConfig: a subscriber with signature: hmac-sha256
// signs each body with the hex HMAC-SHA256 under its secret's bytes in its
// header, and keeps its retry and attempts; one with none gets herald's
// defaults.
func TestSubscribersFromTheConfig(t *testing.T) {
	t.Setenv("LEGACY_SECRET", "shared-secret")
	var (
		mu   sync.Mutex
		sig  string
		body []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body, sig = b, r.Header.Get("X-Device-Messaging-Signature")
		mu.Unlock()
	}))
	defer srv.Close()
	f, err := config.Parse([]byte(`
subscribers:
  - {name: legacy, url: "` + srv.URL + `", secret_env: LEGACY_SECRET, signature: hmac-sha256,
     signature_header: X-Device-Messaging-Signature, signature_prefix: "sha256=", retry: {base: 1s}, max_attempts: 3}
  - {name: plain, url: "` + srv.URL + `"}
routes:
  - {name: hooks, carrier: webhook, url: "http://127.0.0.1:9000/in"}
`))
	if err != nil {
		t.Fatal(err)
	}
	subs, err := buildSubscribers(f)
	if err != nil || len(subs) != 2 {
		t.Fatalf("buildSubscribers: %v, %v", subs, err)
	}
	legacy, plain := subs[0], subs[1]
	if legacy.MaxAttempts != 3 || legacy.Retry.Base != time.Second || legacy.Retry.Max != time.Minute {
		t.Errorf("legacy: %d attempts, retry %+v; want 3, base 1 s over the default", legacy.MaxAttempts, legacy.Retry)
	}
	if plain.MaxAttempts != 0 || !reflect.DeepEqual(plain.Retry, herald.DefaultSubscriberRetry) {
		t.Errorf("plain: %d attempts, retry %+v; want the defaults", plain.MaxAttempts, plain.Retry)
	}
	if err := legacy.Sink.Deliver(context.Background(), herald.OutcomeEvent{ID: "e1", Type: herald.StatusDeliveryFailed, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	mac := hmac.New(sha256.New, []byte("shared-secret"))
	mac.Write(body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); sig != want {
		t.Errorf("X-Device-Messaging-Signature %q, want %q", sig, want)
	}
}
