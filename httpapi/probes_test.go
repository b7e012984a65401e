package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
)

func TestHealthAndStats(t *testing.T) {
	f := newFixture(t)
	f.deadLetters("hooks", 20)
	f.stop() // the next two messages stay queued
	f.sendOK(`{"route":"hooks","text":"hi"}`)
	rec := f.do("POST", "/v1/messages", keyB, `{"route":"hooks","text":"b"}`)
	wantStatus(t, rec, http.StatusAccepted)

	h := decode[map[string]any](t, f.do("GET", "/v1/health", keyA, ""))
	if h["status"] != "critical" { // 20 dead letters, none delivered: success rate 0
		t.Errorf("health = %v", h)
	}
	if _, ok := h["warnings"].([]any); !ok {
		t.Errorf("health warnings = %v", h["warnings"])
	}
	// The message says what is wrong, with the threshold passed, and
	// where to look.
	msg, _ := h["message"].(string)
	for _, want := range []string{"20 messages failed for good (warning at 10)", "dead letters", "replay them",
		"Only 0.0% of the messages that ended were delivered (critical below 80%)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("health message %q lacks %q", msg, want)
		}
	}
	if h := decode[map[string]any](t, f.do("GET", "/v1/health", keyB, "")); h["status"] != "healthy" || h["message"] != "Healthy" {
		t.Errorf("B's health = %v, want healthy and the message Healthy", h)
	}
	s := decode[herald.Stats](t, f.do("GET", "/v1/stats", keyA, ""))
	if s.ByStatus[herald.StatusQueued] != 1 || s.DeadLetters != 20 || s.ByRoute["hooks"][herald.StatusDeliveryFailed] != 20 {
		t.Errorf("stats of A = %+v", s)
	}
	s = decode[herald.Stats](t, f.do("GET", "/v1/stats", keyB, ""))
	if s.ByStatus[herald.StatusQueued] != 1 || s.DeadLetters != 0 {
		t.Errorf("stats of B = %+v", s)
	}
}

func TestStoreFailures(t *testing.T) {
	f := newFixture(t)
	v := f.sendOK(`{"route":"hooks","text":"hi"}`)

	f.store.err = fmt.Errorf("sqlite get: %w", herald.ErrStoreUnavailable)
	rec := f.do("GET", "/v1/messages/"+v.ID, keyA, "")
	wantError(t, rec, http.StatusServiceUnavailable, codeStoreUnavailable)
	if rec.Header().Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	wantError(t, f.do("GET", "/readyz", "", ""), http.StatusServiceUnavailable, codeStoreUnavailable)

	f.store.err = errors.New("disk on fire: /secret/path")
	e := wantError(t, f.do("GET", "/v1/messages/"+v.ID, keyA, ""), http.StatusInternalServerError, codeInternal)
	if strings.Contains(e.Message, "secret") {
		t.Errorf("500 leaks the error: %q", e.Message)
	}
	if !strings.Contains(f.logs.String(), "disk on fire") {
		t.Errorf("the error is not logged:\n%s", f.logs)
	}

	f.store.err = nil
	wantStatus(t, f.do("GET", "/readyz", "", ""), http.StatusOK)
}

func TestMetricsEndpoint(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "herald_up 1")
	})
	f := newFixture(t, func(c *Config) { c.Metrics = metrics })
	rec := f.do("GET", "/metrics", "", "")
	wantStatus(t, rec, http.StatusOK)
	if rec.Body.String() != "herald_up 1\n" {
		t.Errorf("metrics body %q", rec.Body)
	}

	f = newFixture(t)
	wantError(t, f.do("GET", "/metrics", "", ""), http.StatusNotFound, codeNotFound)
}

func TestUnknownEndpointsAnswerJSON(t *testing.T) {
	f := newFixture(t)
	wantError(t, f.do("GET", "/v1/nothing-here", keyA, ""), http.StatusNotFound, codeNotFound)
	wantError(t, f.do("GET", "/nothing-here", "", ""), http.StatusNotFound, codeNotFound)
	rec := f.do("PUT", "/v1/messages", keyA, "")
	wantError(t, rec, http.StatusMethodNotAllowed, codeMethodNotAllowed)
	if allow := rec.Header().Get("Allow"); !strings.Contains(allow, "POST") || !strings.Contains(allow, "GET") {
		t.Errorf("Allow %q", allow)
	}
}

// TestStatsCounters: /v1/stats (and /v1/health) carry the engine's
// counters since it started, of the caller's tenant, or of every tenant
// for an admin key.
func TestStatsCounters(t *testing.T) {
	f := newFixture(t, withAdmin)
	f.sendOK(`{"route":"hooks","text":"first","coalesce_key":"c"}`)
	f.sendOK(`{"route":"hooks","text":"ok","coalesce_key":"c"}`) // cancels the first
	f.sendOK(`{"route":"hooks","text":"ok"}`)
	f.sendOK(`{"route":"hooks","text":"ok","idempotency_key":"k"}`)
	wantStatus(t, f.do("POST", "/v1/messages", keyA, `{"route":"hooks","text":"ok","idempotency_key":"k"}`), http.StatusOK)
	wantStatus(t, f.do("POST", "/v1/messages", keyB, `{"route":"hooks","target":"fail","text":"no"}`), http.StatusAccepted)
	f.run()

	wants := map[string]map[string]float64{
		keyA:     {"enqueued": 4, "succeeded": 3, "retried": 0, "dead_lettered": 0, "deduplicated": 0, "coalesced": 1},
		keyB:     {"enqueued": 1, "succeeded": 0, "retried": 0, "dead_lettered": 1, "deduplicated": 0, "coalesced": 0},
		keyAdmin: {"enqueued": 5, "succeeded": 3, "retried": 0, "dead_lettered": 1, "deduplicated": 0, "coalesced": 1},
	}
	for _, path := range []string{"/v1/stats", "/v1/health"} {
		for key, want := range wants {
			s := decode[map[string]any](t, f.do("GET", path, key, ""))
			for name, n := range want {
				if s[name] != n {
					t.Errorf("%s of %s: %s = %v, want %v", path, key, name, s[name], n)
				}
			}
		}
	}
}
