package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald/internal/redistest"
)

// laneSink records the start and end of every request it serves, by path
// (by path and lane for a body "<lane>:<text>"), after holding each for
// delay.
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
	body, _ := io.ReadAll(r.Body)
	key := r.URL.Path
	if lane, _, ok := strings.Cut(string(body), ":"); ok {
		key += "#" + lane
	}
	s.mu.Lock()
	s.starts[key] = append(s.starts[key], time.Now())
	s.open[key]++
	s.maxOpen[key] = max(s.maxOpen[key], s.open[key])
	s.mu.Unlock()
	time.Sleep(s.delay)
	s.mu.Lock()
	s.open[key]--
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// TestTwoNodesKeepLaneLimits runs two herald processes on one Redis, with a
// route capped at 3 in flight per lane (4 lanes) and a route spaced 300 ms
// per lane: the sink never serves more than 3 of a lane of the first at
// once, and gets the second's requests spaced, though both nodes dispatch:
// no gap under 200 ms, and the 11 gaps together at least 11 spacings less
// 100 ms. (The lane's clock is Redis's, so the claims are spaced exactly;
// the sink sees them after each node's HTTP exchange, whose time varies by
// tens of milliseconds under the race detector on a busy machine: CI saw a
// gap of 271 ms once. The span depends on two exchanges only. Nodes that
// did not share the spacing would each send every 300 ms, out of phase:
// some gap would be under 150 ms, and the span about half.) (A webhook
// route's capped lane is dispatched by one node at a time, the one whose
// claim took the messages in flight: Admission.ClaimAhead.)
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
  - {name: dcu, carrier: webhook, url: %s/dcu, admission: {concurrency: 3}}
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
			msg := map[string]any{"route": route, "text": fmt.Sprint(i)}
			if route == "dcu" {
				lane := fmt.Sprintf("dcu-%d", i%4)
				msg["lane"], msg["text"] = lane, fmt.Sprintf("%s:%d", lane, i)
			}
			if code, err := nodes[i%2].call("POST", "/v1/messages", msg, &view); err != nil || code != http.StatusAccepted {
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
	// Both nodes dispatch (which of them wins each turn of the spaced lane
	// depends on the phase of their polls, so neither route is required
	// of both).
	for i, node := range nodes {
		dcu := metric(t, node, `herald_transitions_total{from="QUEUED",route="dcu",to="SENT_TO_NS"}`)
		net := metric(t, node, `herald_transitions_total{from="QUEUED",route="net",to="SENT_TO_NS"}`)
		if dcu+net == 0 {
			t.Errorf("node %d dispatched nothing: the limits were not shared", i)
		}
		t.Logf("node %d dispatched %v of route dcu and %v of route net", i, dcu, net)
	}

	sink.mu.Lock()
	defer sink.mu.Unlock()
	got, most := 0, 0
	for lane := range 4 {
		key := fmt.Sprintf("/dcu#dcu-%d", lane)
		got += len(sink.starts[key])
		if sink.maxOpen[key] > 3 {
			t.Errorf("the sink served %d requests of lane %s, capped at 3, at once", sink.maxOpen[key], key)
		}
		most = max(most, sink.maxOpen[key])
	}
	if got != capped {
		t.Errorf("the capped lanes' sink got %d requests, want %d", got, capped)
	}
	if most < 2 {
		t.Errorf("the sink served at most %d of a capped lane at once: the test shows nothing", most)
	}
	starts := sink.starts["/net"]
	if len(starts) != spaced {
		t.Fatalf("the spaced lane's sink got %d requests, want %d", len(starts), spaced)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 200*time.Millisecond {
			t.Errorf("dispatches %d and %d of a lane spaced 300ms came %v apart", i-1, i, gap)
		}
	}
	if span := starts[len(starts)-1].Sub(starts[0]); span < time.Duration(len(starts)-1)*300*time.Millisecond-100*time.Millisecond {
		t.Errorf("%d dispatches of a lane spaced 300ms came within %v", len(starts), span)
	}
	t.Logf("capped lanes: at most %d at once; spaced lane: %d requests over %v", most, len(starts), starts[len(starts)-1].Sub(starts[0]))
}

// slowSink answers every request after delay, and records how many
// requests each message (its Idempotency-Key) got.
type slowSink struct {
	delay time.Duration
	mu    sync.Mutex
	calls map[string]int
}

func (s *slowSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls[r.Header.Get("Idempotency-Key")]++
	s.mu.Unlock()
	select {
	case <-time.After(s.delay):
	case <-r.Context().Done(): // the node that sent it died
	}
	w.WriteHeader(http.StatusOK)
}

func (s *slowSink) callsOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[id]
}

// TestKilledNodesHeldBackMessagesGoAtOnce: node A dispatches a webhook
// lane capped at 2 calls, whose sink answers in 1.5 s, with 8 messages: 2
// at the sink (SENT_TO_NS), 6 held back (QUEUED, attempt 0, explain
// lane_concurrency). A is killed with SIGKILL; node B, on the same Redis,
// takes the lane over once A's heartbeat lapses (5 s) and delivers the 6,
// each sent once, at attempt 1, long before the accept timeout (20 s) that
// A's 2 in flight wait for.
func TestKilledNodesHeldBackMessagesGoAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	rs := redistest.Start(t)
	sink := &slowSink{delay: 1500 * time.Millisecond, calls: map[string]int{}}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	config := func(addr string) string {
		return fmt.Sprintf(`listen: %s
store: %s
api_keys:
  - {key_env: HERALD_TEST_KEY, tenant: test}
routes:
  - {name: dcu, carrier: webhook, url: %s, admission: {concurrency: 2}, policy: {timeouts: {accept: 20s}}}
`, addr, rs.URL(), srv.URL)
	}
	addrA := freeAddr(t)
	a := startProc(t, t.TempDir(), config(addrA))
	a.waitReady("http://" + addrA)
	ids := make([]string, 8)
	for i := range ids {
		var view struct{ ID string }
		if code, err := a.call("POST", "/v1/messages", map[string]any{"route": "dcu", "lane": "dcu-1", "text": fmt.Sprint(i)}, &view); err != nil || code != http.StatusAccepted {
			t.Fatalf("send %d: %d %v", i, code, err)
		}
		ids[i] = view.ID
	}
	status := func(node *serverProc, id string) (string, int) {
		var view struct {
			Status  string
			Attempt int
		}
		if code, err := node.call("GET", "/v1/messages/"+id, nil, &view); err != nil || code != http.StatusOK {
			t.Fatalf("get %s: %d %v", id, code, err)
		}
		return view.Status, view.Attempt
	}
	var sent, held []string
	deadline := time.Now().Add(10 * time.Second)
	for len(sent) != 2 && time.Now().Before(deadline) {
		sent, held = nil, nil
		for _, id := range ids {
			if st, _ := status(a, id); st == "SENT_TO_NS" {
				sent = append(sent, id)
			} else {
				held = append(held, id)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(sent) != 2 {
		t.Fatalf("%d messages SENT_TO_NS on a lane capped at 2", len(sent))
	}
	for _, id := range held {
		if st, attempt := status(a, id); st != "QUEUED" || attempt != 0 {
			t.Fatalf("%s held back by its lane: %s attempt %d, want QUEUED attempt 0", id, st, attempt)
		}
		var x struct {
			Reason      string
			BlockingIDs []string `json:"blocking_ids"`
		}
		if _, err := a.call("GET", "/v1/messages/"+id+"/explain", nil, &x); err != nil || x.Reason != "lane_concurrency" || !sameIDs(x.BlockingIDs, sent) {
			t.Fatalf("explain %s = %+v, %v; want lane_concurrency, blocked by %v", id, x, err, sent)
		}
	}
	addrB := freeAddr(t)
	b := startProc(t, t.TempDir(), config(addrB))
	b.waitReady("http://" + addrB)
	a.kill()
	killed := time.Now()
	for _, id := range held {
		for {
			st, attempt := status(b, id)
			if st == "DELIVERY_SUCCESSFUL" {
				if attempt != 1 || sink.callsOf(id) != 1 {
					t.Errorf("%s delivered at attempt %d after %d calls, want attempt 1 after 1", id, attempt, sink.callsOf(id))
				}
				break
			}
			if time.Since(killed) > 18*time.Second {
				t.Fatalf("%s is %s at attempt %d %v after A was killed: it waited as long as an accept timeout", id, st, attempt, time.Since(killed))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("the 6 held back were delivered by B %v after A was killed", time.Since(killed).Round(100*time.Millisecond))
	for _, id := range sent { // A's calls: in doubt until their accept timeout
		if st, attempt := status(b, id); st != "SENT_TO_NS" || attempt != 1 {
			t.Errorf("%s of A's calls: %s attempt %d, want SENT_TO_NS attempt 1 until its deadline", id, st, attempt)
		}
	}
}

// sameIDs reports whether a and b hold the same ids, in any order.
func sameIDs(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(id string) bool { return !slices.Contains(b, id) })
}
