package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
)

// TestStoreFull: while the store refuses writes for want of room, a send
// is answered 503 store_unavailable with Retry-After (never 500), nothing
// stored; /readyz is 503 and /v1/health critical with the reason, logged
// once; once a write succeeds again, all of them clear.
func TestStoreFull(t *testing.T) {
	f := newFixture(t)
	f.sendOK(`{"route":"hooks","text":"before"}`)
	f.store.createErr = fmt.Errorf("sqlite create: %w: database or disk is full", herald.ErrStoreFull)
	for range 3 {
		rec := f.do("POST", "/v1/messages", keyA, `{"route":"hooks","text":"full"}`)
		wantError(t, rec, http.StatusServiceUnavailable, codeStoreUnavailable)
		if rec.Header().Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After")
		}
	}
	rec := f.do("GET", "/readyz", "", "")
	if e := wantError(t, rec, http.StatusServiceUnavailable, codeStoreUnavailable); !strings.Contains(e.Message, "want of room") {
		t.Errorf("/readyz: %q, want it to say the store is full", e.Message)
	}
	rec = f.do("GET", "/v1/health", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	h := decode[herald.Health](t, rec)
	if h.Status != "critical" || len(h.Warnings) != 1 || !strings.Contains(h.Warnings[0], "disk is full") {
		t.Errorf("health %s %q, want critical, saying why", h.Status, h.Warnings)
	}
	if n := strings.Count(f.logs.String(), "refuses writes for want of room"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, f.logs)
	}

	f.store.createErr = nil
	f.sendOK(`{"route":"hooks","text":"after"}`)
	wantStatus(t, f.do("GET", "/readyz", "", ""), http.StatusOK)
	if h := decode[herald.Health](t, f.do("GET", "/v1/health", keyA, "")); h.Status != "healthy" {
		t.Errorf("health after: %s %q", h.Status, h.Warnings)
	}
	if l := f.list("/v1/messages", keyA); len(l.Messages) != 2 {
		t.Errorf("%d messages, want the two acknowledged", len(l.Messages))
	}
}
