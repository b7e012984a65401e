package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBodyBudget: while one request holds the whole budget of bodies in
// memory, another with a body is answered 503 overloaded with Retry-After,
// unread; one without a body goes through; once the first ends, the
// budget is free again.
func TestBodyBudget(t *testing.T) {
	f := newFixture(t)
	f.run()
	h := f.unchecked(func(c *Config) { c.MaxBodyBytesInFlight = MaxBodyBytes })
	pr, pw := io.Pipe()
	first := httptest.NewRequest("POST", "/v1/messages", pr)
	first.ContentLength = MaxBodyBytes // its share: the whole budget
	first.Header.Set("Authorization", "Bearer "+keyA)
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, first)
		done <- rec
	}()
	if _, err := io.WriteString(pw, `{"route":"hooks",`); err != nil { // the handler is reading it
		t.Fatal(err)
	}

	second := &countingReader{r: strings.NewReader(`{"route":"hooks","text":"hi"}`)}
	req := httptest.NewRequest("POST", "/v1/messages", second)
	req.Header.Set("Authorization", "Bearer "+keyA)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	wantError(t, rec, http.StatusServiceUnavailable, codeOverloaded)
	if rec.Header().Get("Retry-After") == "" || rec.Header().Get("Connection") != "close" {
		t.Errorf("headers %v, want Retry-After and Connection: close", rec.Header())
	}
	if second.n != 0 {
		t.Errorf("the refused body was read (%d bytes)", second.n)
	}
	stats := httptest.NewRequest("GET", "/v1/stats", nil)
	stats.Header.Set("Authorization", "Bearer "+keyA)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, stats)
	wantStatus(t, rec, http.StatusOK) // no body, no share

	pw.Write([]byte(`"text":"hi"}`))
	pw.Close()
	wantStatus(t, <-done, http.StatusAccepted)
	req = httptest.NewRequest("POST", "/v1/messages", strings.NewReader(`{"route":"hooks","text":"after"}`))
	req.Header.Set("Authorization", "Bearer "+keyA)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	wantStatus(t, rec, http.StatusAccepted)
	if !strings.Contains(f.logs.String(), "max_body_bytes_in_flight") {
		t.Errorf("the refusal is not logged:\n%s", f.logs)
	}
}

// TestUnauthenticatedBodyUnread: a request without a valid key is answered
// 401 without a byte of its body read, and its connection is closed.
func TestUnauthenticatedBodyUnread(t *testing.T) {
	h := newFixture(t).unchecked()
	for _, path := range []string{"/v1/messages", "/v1/ingress/lora?event=txack"} {
		body := &countingReader{r: strings.NewReader(`{"route":"hooks","text":"hi"}`)}
		req := httptest.NewRequest("POST", path, body)
		req.Header.Set("Authorization", "Bearer wrong")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		wantError(t, rec, http.StatusUnauthorized, "unauthorized")
		if body.n != 0 || rec.Header().Get("Connection") != "close" {
			t.Errorf("%s: %d bytes of the body read, Connection %q; want none read, close", path, body.n, rec.Header().Get("Connection"))
		}
	}
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// unchecked returns a handler on f's engine, as New returns it: not
// wrapped in the OpenAPI checks, which read every request's body first.
func (f *fixture) unchecked(mutate ...func(*Config)) http.Handler {
	cfg := Config{Engine: f.engine, Keys: map[string]string{keyA: tenantA, keyB: tenantB}, Logger: slog.New(slog.NewTextHandler(f.logs, nil))}
	for _, m := range mutate {
		m(&cfg)
	}
	return New(cfg)
}
