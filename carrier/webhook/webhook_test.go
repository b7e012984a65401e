package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/httpsend"
	"github.com/heraldmq/herald/stdwebhook"
)

// received is what a test server saw.
type received struct {
	header http.Header
	body   []byte
	method string
}

// server answers with handler and records every request.
func server(t *testing.T, handler http.HandlerFunc) (*httptest.Server, func() []received) {
	t.Helper()
	var mu sync.Mutex
	var got []received
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Clone(), b, r.Method})
		mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), got...)
	}
}

func newCarrier(t *testing.T, c Config) *Carrier {
	t.Helper()
	cr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return cr
}

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestSendOK(t *testing.T) {
	s, got := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-42")
		w.WriteHeader(http.StatusAccepted)
	})
	secret := []byte("topsecret")
	cr := newCarrier(t, Config{
		URL:     s.URL + "/hook?token=x",
		Headers: map[string]string{"Authorization": "Bearer abc", "content-type": "application/json"},
		Secret:  secret,
		Now:     func() time.Time { return fixedNow },
	})
	m := &herald.Message{ID: "m1", Payload: []byte(`{"x":1}`), Attempt: 3, Target: "svc-a", CorrelationID: "c-9"}
	res, err := cr.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExternalID != "req-42" {
		t.Errorf("ExternalID = %q", res.ExternalID)
	}
	r := got()[0]
	want := map[string]string{
		"Authorization":           "Bearer abc",
		"Content-Type":            "application/json",
		"Idempotency-Key":         "m1",
		"X-Herald-Message-Id":     "m1",
		"X-Herald-Attempt":        "3",
		"X-Herald-Target":         "svc-a",
		"X-Herald-Correlation-Id": "c-9",
		"Webhook-Id":              "m1",
	}
	for k, v := range want {
		if g := r.header.Get(k); g != v {
			t.Errorf("%s = %q, want %q", k, g, v)
		}
	}
	if r.method != http.MethodPost || string(r.body) != `{"x":1}` {
		t.Errorf("%s %q", r.method, r.body)
	}
	if err := stdwebhook.Verify(secret, r.header, r.body, fixedNow, stdwebhook.DefaultTolerance); err != nil {
		t.Errorf("signature: %v", err)
	}
	if err := stdwebhook.Verify([]byte("wrong"), r.header, r.body, fixedNow, stdwebhook.DefaultTolerance); err == nil {
		t.Error("signature verified under a wrong secret")
	}
}

func TestSendTextUnsigned(t *testing.T) {
	s, got := server(t, func(w http.ResponseWriter, r *http.Request) {})
	cr := newCarrier(t, Config{URL: s.URL})
	res, err := cr.Send(context.Background(), &herald.Message{ID: "m2", Text: "héllo", Attempt: 1})
	if err != nil || res.ExternalID != "" {
		t.Fatal(res, err)
	}
	r := got()[0]
	if ct := r.header.Get("Content-Type"); ct != ContentTypeText || string(r.body) != "héllo" {
		t.Errorf("Content-Type %q body %q", ct, r.body)
	}
	for _, k := range []string{"X-Herald-Target", "X-Herald-Correlation-Id", "Webhook-Id", "Webhook-Signature"} {
		if _, ok := r.header[k]; ok {
			t.Errorf("unexpected header %s", k)
		}
	}
	if r.header.Get("Idempotency-Key") != "m2" {
		t.Errorf("Idempotency-Key %q", r.header.Get("Idempotency-Key"))
	}
}

func TestSendPayloadContentType(t *testing.T) {
	s, got := server(t, func(w http.ResponseWriter, r *http.Request) {})
	cr := newCarrier(t, Config{URL: s.URL})
	if _, err := cr.Send(context.Background(), &herald.Message{ID: "m", Payload: []byte{0, 1}}); err != nil {
		t.Fatal(err)
	}
	if ct := got()[0].header.Get("Content-Type"); ct != ContentTypePayload {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestSendPermanent(t *testing.T) {
	for _, code := range []int{400, 401, 404, 410, 422, 302} {
		s, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/elsewhere")
			w.Header().Set("Retry-After", "5") // ignored: not a transient status
			w.WriteHeader(code)
			io.WriteString(w, "bad\nthing")
		})
		cr := newCarrier(t, Config{URL: s.URL + "/x"})
		_, err := cr.Send(context.Background(), &herald.Message{ID: "m", Text: "t"})
		var pe *herald.PermanentError
		if !errors.As(err, &pe) {
			t.Errorf("%d: %v is not permanent", code, err)
			continue
		}
		var ra *herald.RetryAfterError
		if errors.As(err, &ra) {
			t.Errorf("%d: unexpected RetryAfter", code)
		}
		want := fmt.Sprintf("webhook: POST %s/…: %d %s: bad thing", s.URL, code, http.StatusText(code)) // the path may hold a secret
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%d: error text %q", code, err)
		}
	}
}

func TestSendTransient(t *testing.T) {
	cases := []struct {
		code       int
		retryAfter string
		want       time.Duration
	}{
		{500, "", 0},
		{502, "garbage", 0},
		{503, "120", 120 * time.Second},
		{429, fixedNow.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{408, "7", 0}, // transient, but not a "not now": only 429 and 503 pause the lane
		{502, "7", 0},
		{503, fixedNow.Add(-time.Hour).Format(http.TimeFormat), 0},
	}
	for _, c := range cases {
		s, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
			if c.retryAfter != "" {
				w.Header().Set("Retry-After", c.retryAfter)
			}
			w.WriteHeader(c.code)
			io.WriteString(w, strings.Repeat("z", 1000))
		})
		cr := newCarrier(t, Config{URL: s.URL, Now: func() time.Time { return fixedNow }})
		_, err := cr.Send(context.Background(), &herald.Message{ID: "m", Text: "t"})
		if err == nil {
			t.Fatalf("%d: no error", c.code)
		}
		var pe *herald.PermanentError
		if errors.As(err, &pe) {
			t.Errorf("%d: %v is permanent", c.code, err)
		}
		var ra *herald.RetryAfterError
		switch {
		case c.want == 0 && errors.As(err, &ra):
			t.Errorf("%d %q: unexpected RetryAfter %v", c.code, c.retryAfter, ra.After)
		case c.want != 0 && (!errors.As(err, &ra) || ra.After != c.want):
			t.Errorf("%d %q: RetryAfter = %v, want %v (%v)", c.code, c.retryAfter, ra, c.want, err)
		}
		if !strings.Contains(err.Error(), http.StatusText(c.code)) {
			t.Errorf("error text %q", err)
		}
		if n := strings.Count(err.Error(), "z"); n != httpsend.ErrorBodyLen {
			t.Errorf("error quotes %d body bytes, want %d", n, httpsend.ErrorBodyLen)
		}
	}
}

func TestSendTimeout(t *testing.T) {
	release := make(chan struct{})
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	cr := newCarrier(t, Config{URL: s.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cr.Send(ctx, &herald.Message{ID: "m", Text: "t"})
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("Send took %v", el)
	}
	var pe *herald.PermanentError
	if err == nil || errors.As(err, &pe) {
		t.Fatalf("err = %v, want a transient error", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "webhook: POST "+s.URL) {
		t.Errorf("error %q", err)
	}
}

func TestSendConnectionRefused(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	url := s.URL
	s.Close()
	cr := newCarrier(t, Config{URL: url})
	_, err := cr.Send(context.Background(), &herald.Message{ID: "m", Text: "t"})
	var pe *herald.PermanentError
	if err == nil || errors.As(err, &pe) {
		t.Fatalf("err = %v, want a transient error", err)
	}
}

// Bodies are drained, so one connection carries many requests.
func TestConnectionReuse(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		w.WriteHeader(503)
		io.WriteString(w, strings.Repeat("x", 10000))
	}))
	s.Start()
	defer s.Close()
	cr := newCarrier(t, Config{URL: s.URL})
	for range 5 {
		if _, err := cr.Send(context.Background(), &herald.Message{ID: "m", Text: "t"}); err == nil {
			t.Fatal("no error")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Errorf("%d connections for 5 sequential requests", len(conns))
	}
}

func TestValidate(t *testing.T) {
	cr := newCarrier(t, Config{URL: "https://example.com/h"})
	cases := []struct {
		m     herald.Message
		field string
	}{
		{herald.Message{Text: "t"}, ""},
		{herald.Message{Payload: []byte("p"), Target: "anything"}, ""},
		{herald.Message{}, "payload"},
		{herald.Message{Text: "t", Payload: []byte("p")}, "text"},
		{herald.Message{Text: "t", Target: "a\r\nX-Evil: 1"}, "target"},
		{herald.Message{Text: "t", CorrelationID: "c\n"}, "correlation_id"},
	}
	for _, c := range cases {
		err := cr.Validate(&c.m)
		var ie *herald.InvalidError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v", c.m, err)
		case c.field != "" && (!errors.As(err, &ie) || ie.Field != c.field):
			t.Errorf("%+v: err %v, want field %s", c.m, err, c.field)
		}
	}
	if cr.Path() != herald.PathDirect {
		t.Errorf("Path = %v", cr.Path())
	}
}

func TestNewRejects(t *testing.T) {
	bad := []Config{
		{URL: ""},
		{URL: "/relative"},
		{URL: "ftp://example.com"},
		{URL: "http://"},
		{URL: "http://x", Headers: map[string]string{"Idempotency-Key": "k"}},
		{URL: "http://x", Headers: map[string]string{"x-herald-attempt": "1"}},
		{URL: "http://x", Headers: map[string]string{"Webhook-Signature": "s"}},
		{URL: "http://x", Headers: map[string]string{"Bad Name": "v"}},
		{URL: "http://x", Headers: map[string]string{"X-A": "v\r\n"}},
	}
	for _, c := range bad {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

func TestErrorTextRedactsURL(t *testing.T) {
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(400) })
	u := strings.Replace(s.URL, "http://", "http://user:pw@", 1) + "/p?token=secret"
	cr := newCarrier(t, Config{URL: u})
	_, err := cr.Send(context.Background(), &herald.Message{ID: "m", Text: "t"})
	if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "pw") {
		t.Errorf("error %q", err)
	}
}
