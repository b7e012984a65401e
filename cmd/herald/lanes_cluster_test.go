package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald/internal/redistest"
)

// laneSink records the start and end of every request it serves, by path,
// after holding each for delay.
type laneSink struct {
	delay time.Duration

	mu      sync.Mutex
	open    map[string]int         // requests being served, by path
	maxOpen map[string]int         // the most served at once, by path
	starts  map[string][]time.Time // when each request arrived, by path
}

func newLaneSink(delay time.Duration) *laneSink {
	return &laneSink{delay: delay, open: map[string]int{}, maxOpen: map[string]int{}, starts: map[string][]time.Time{}}
}

func (s *laneSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.starts[r.URL.Path] = append(s.starts[r.URL.Path], time.Now())
	s.open[r.URL.Path]++
	s.maxOpen[r.URL.Path] = max(s.maxOpen[r.URL.Path], s.open[r.URL.Path])
	s.mu.Unlock()
	time.Sleep(s.delay)
	s.mu.Lock()
	s.open[r.URL.Path]--
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// TestTwoNodesKeepLaneLimits runs two herald processes on one Redis, with a
// route capped at 3 in flight per lane and a route spaced 300 ms per lane:
// the sink never serves more than 3 of the first at once, and never gets two
// of the second closer than the spacing (less 25 ms for the HTTP exchange's
// jitter), though both nodes send.
func TestTwoNodesKeepLaneLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	const capped, spaced = 150, 12
	rs := redistest.Start(t)
	sink := newLaneSink(20 * time.Millisecond)
	srv := httptest.NewServer(sink)
	defer srv.Close()
	var nodes []*serverProc
	for range 2 {
		addr := freeAddr(t)
		node := startProc(t, t.TempDir(), fmt.Sprintf(`listen: %s
store: %s
concurrency: 16
api_keys:
  - {key_env: HERALD_TEST_KEY, tenant: test}
routes:
  - {name: dcu, carrier: webhook, url: %s/dcu, lane: dcu-1, admission: {concurrency: 3}}
  - {name: net, carrier: webhook, url: %s/net, lane: net-1, admission: {spacing: 300ms}}
`, addr, rs.URL(), srv.URL, srv.URL))
		node.waitReady("http://" + addr)
		nodes = append(nodes, node)
	}
	var wg sync.WaitGroup
	send := func(route string, n int) {
		defer wg.Done()
		for i := range n {
			var view struct{ ID string }
			if code, err := nodes[i%2].call("POST", "/v1/messages", map[string]any{"route": route, "text": fmt.Sprint(i)}, &view); err != nil || code != http.StatusAccepted {
				t.Errorf("send to %s: %d %v", route, code, err)
				return
			}
		}
	}
	wg.Add(2)
	go send("dcu", capped)
	go send("net", spaced)
	wg.Wait()
	waitAllEnded(t, nodes[0], capped+spaced, 60*time.Second)
	for i, node := range nodes {
		for _, route := range []string{"dcu", "net"} {
			if n := metric(t, node, `herald_transitions_total{from="QUEUED",route="`+route+`",to="SENT_TO_NS"}`); n == 0 {
				t.Errorf("node %d dispatched none of route %s: the limits were not shared", i, route)
			}
		}
	}

	sink.mu.Lock()
	defer sink.mu.Unlock()
	if got := len(sink.starts["/dcu"]); got != capped {
		t.Errorf("the capped lane's sink got %d requests, want %d", got, capped)
	}
	if sink.maxOpen["/dcu"] > 3 {
		t.Errorf("the sink served %d requests of a lane capped at 3 at once", sink.maxOpen["/dcu"])
	}
	if sink.maxOpen["/dcu"] < 2 {
		t.Errorf("the sink served at most %d of the capped lane at once: the test shows nothing", sink.maxOpen["/dcu"])
	}
	starts := sink.starts["/net"]
	if len(starts) != spaced {
		t.Fatalf("the spaced lane's sink got %d requests, want %d", len(starts), spaced)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 275*time.Millisecond {
			t.Errorf("dispatches %d and %d of a lane spaced 300ms came %v apart", i-1, i, gap)
		}
	}
	t.Logf("capped lane: at most %d at once; spaced lane: %d requests over %v", sink.maxOpen["/dcu"], len(starts), starts[len(starts)-1].Sub(starts[0]))
}
