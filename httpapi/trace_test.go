package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
)

// requestTracer records each request's span as "METHOD path -> pattern
// status".
type requestTracer struct {
	mu    sync.Mutex
	spans []string
}

func (rt *requestTracer) StartRequest(r *http.Request) (context.Context, func(string, int)) {
	start := r.Method + " " + r.URL.Path
	return r.Context(), func(pattern string, status int) {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		rt.spans = append(rt.spans, fmt.Sprintf("%s -> %q %d", start, pattern, status))
	}
}

// TestTracerSeesEveryRequest: with a Tracer, every request, refused or
// not, is one span, told the route's pattern (none when no route served
// it) and the status answered.
func TestTracerSeesEveryRequest(t *testing.T) {
	rt := &requestTracer{}
	f := newFixture(t, func(c *Config) { c.Tracer = rt })
	m := f.sendOK(`{"route":"hooks","text":"hi"}`)
	wantStatus(t, f.do(http.MethodGet, "/v1/messages/"+m.ID, keyA, ""), http.StatusOK)
	wantStatus(t, f.do(http.MethodGet, "/v1/messages", "", ""), http.StatusUnauthorized)
	wantStatus(t, f.do(http.MethodGet, "/v1/nowhere", keyA, ""), http.StatusNotFound)
	wantStatus(t, f.do(http.MethodGet, "/healthz", "", ""), http.StatusOK)
	want := []string{
		`POST /v1/messages -> "POST /v1/messages" 202`,
		`GET /v1/messages/` + m.ID + ` -> "GET /v1/messages/{id}" 200`,
		`GET /v1/messages -> "" 401`,
		`GET /v1/nowhere -> "" 404`,
		`GET /healthz -> "GET /healthz" 200`,
	}
	if !slices.Equal(rt.spans, want) {
		t.Errorf("spans:\n%q\nwant\n%q", rt.spans, want)
	}
}
