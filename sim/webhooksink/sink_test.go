package webhooksink

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// post sends a delivery for id and returns the status.
func post(t *testing.T, url, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/hook", strings.NewReader("body"))
	if id != "" {
		req.Header.Set("Idempotency-Key", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func start(t *testing.T, cfg Config) (*Sink, string) {
	t.Helper()
	s := New(cfg)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func TestFailFirst(t *testing.T) {
	s, url := start(t, Config{FailFirst: 3})
	for _, id := range []string{"a", "b"} {
		for i := 1; i <= 5; i++ {
			want := http.StatusOK
			if i <= 3 {
				want = http.StatusServiceUnavailable
			}
			if got := post(t, url, id); got != want {
				t.Errorf("%s request %d: %d, want %d", id, i, got, want)
			}
		}
	}
	if st := s.Stats(); st != (Stats{Requests: 10, Delivered: 4, Unique: 2, Duplicates: 2}) {
		t.Errorf("Stats = %+v", st)
	}
	if d := s.Delivered(); d["a"] != 2 || d["b"] != 2 || len(d) != 2 {
		t.Errorf("Delivered = %v", d)
	}
}

func TestFailRate(t *testing.T) {
	s := New(Config{FailRate: 0.5, FailStatus: 500, Seed: 7})
	failed := 0
	const n = 1000
	for i := range n {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x"))
		req.Header.Set("webhook-id", fmt.Sprint("id-", i))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		switch w.Code {
		case 500:
			failed++
		case 200:
		default:
			t.Fatalf("status %d", w.Code)
		}
	}
	if failed < 430 || failed > 570 {
		t.Errorf("%d of %d failed, want about half", failed, n)
	}
	if st := s.Stats(); st.Delivered != n-failed || st.Requests != n {
		t.Errorf("Stats = %+v", st)
	}
}

func TestNoFailures(t *testing.T) {
	s, url := start(t, Config{})
	for range 3 {
		if got := post(t, url, "x"); got != 200 {
			t.Fatalf("status %d", got)
		}
	}
	if got := post(t, url, ""); got != http.StatusBadRequest {
		t.Errorf("no id: status %d", got)
	}
	if st := s.Stats(); st != (Stats{Requests: 4, Delivered: 3, Unique: 1, Duplicates: 2}) {
		t.Errorf("Stats = %+v", st)
	}
}

func TestOverlaps(t *testing.T) {
	s, url := start(t, Config{Delay: 200 * time.Millisecond})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { post(t, url, "dup") })
	}
	wg.Wait()
	post(t, url, "seq")
	post(t, url, "seq")
	if o := s.Overlaps(); !slices.Equal(o, []string{"dup"}) {
		t.Errorf("Overlaps = %v", o)
	}
	recs := s.Records()
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if r.End.Sub(r.Start) < 200*time.Millisecond || r.Status != 200 {
			t.Errorf("record %+v", r)
		}
	}
}

// A client that gives up during the delay delivers nothing.
func TestClientGoneDuringDelay(t *testing.T) {
	s, url := start(t, Config{Delay: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the client goes once the sink has begun the request, not before it got it
		for {
			s.mu.Lock()
			begun := s.attempts["gone"] > 0
			s.mu.Unlock()
			if begun || ctx.Err() != nil {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("x"))
	req.Header.Set("Idempotency-Key", "gone")
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("request succeeded")
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(s.Records()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	recs := s.Records()
	if len(recs) != 1 || recs[0].Status != StatusClientClosed || s.Stats().Delivered != 0 {
		t.Errorf("records %+v stats %+v", recs, s.Stats())
	}
}

func TestStatsOverHTTP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{FailFirst: 1})
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, s) }()
	url := "http://" + ln.Addr().String()
	post(t, url, "a")
	post(t, url, "a")
	post(t, url, "b")

	st, err := GetStats(context.Background(), nil, url)
	if err != nil {
		t.Fatal(err)
	}
	if st != (Stats{Requests: 3, Delivered: 1, Unique: 1, Duplicates: 0}) {
		t.Errorf("Stats = %+v", st)
	}
	recs, err := GetRecords(context.Background(), nil, url+"/")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[1].ID != "a" || recs[1].Status != 200 || recs[2].Status != 503 || recs[0].Start.IsZero() {
		t.Errorf("records %+v", recs)
	}
	resp, err := http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Serve did not stop")
	}
}

func TestListenAndServeBadAddr(t *testing.T) {
	if err := ListenAndServe(context.Background(), "256.0.0.1:x", New(Config{})); err == nil {
		t.Error("no error")
	}
}
