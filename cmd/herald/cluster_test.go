package main

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/redistest"
	"github.com/heraldmq/herald/sim/webhooksink"
)

// nodeConfig is the config of one herald process on storeURL with one
// webhook route to sinkURL.
func nodeConfig(addr, storeURL, sinkURL string, concurrency int, accept string) string {
	return fmt.Sprintf(`listen: %s
store: %s
concurrency: %d
api_keys:
  - {key_env: HERALD_TEST_KEY, tenant: test}
routes:
  - name: hooks
    carrier: webhook
    url: %s/in
    profile: channel
    policy:
      retry: {kind: constant, base: 200ms}
      max_attempts: 50
      timeouts: {accept: %s}
`, addr, storeURL, concurrency, sinkURL, accept)
}

// startNodes starts n herald processes on one Redis.
func startNodes(t *testing.T, n int, redisURL, sinkURL string, concurrency int, accept string) []*serverProc {
	t.Helper()
	nodes := make([]*serverProc, n)
	for i := range nodes {
		addr := freeAddr(t)
		nodes[i] = startProc(t, t.TempDir(), nodeConfig(addr, redisURL, sinkURL, concurrency, accept))
		nodes[i].waitReady("http://" + addr)
	}
	return nodes
}

// sendAll sends total messages spread over the live nodes, retrying a send
// that finds its node dead or the store down, and returns the acknowledged ids.
func sendAll(t *testing.T, nodes []*serverProc, total int, dead func(i int) bool) []string {
	t.Helper()
	var mu sync.Mutex
	var acked []string
	next := make(chan int, total)
	for i := range total {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				deadline := time.Now().Add(60 * time.Second)
				for try := w + i; ; try++ {
					node := try % len(nodes)
					if dead(node) {
						continue
					}
					var view struct{ ID string }
					code, err := nodes[node].call("POST", "/v1/messages", map[string]any{"route": "hooks", "text": fmt.Sprintf("m%d", i)}, &view)
					if err == nil && code == http.StatusAccepted {
						mu.Lock()
						acked = append(acked, view.ID)
						mu.Unlock()
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("send %d never acknowledged: %d %v", i, code, err)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return acked
}

// waitAllEnded waits until node reports no active message and at least
// want terminal ones, and returns the counts by status.
func waitAllEnded(t *testing.T, node *serverProc, want int, within time.Duration) map[string]int {
	t.Helper()
	var stats struct {
		ByStatus map[string]int `json:"by_status"`
	}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if _, err := node.call("GET", "/v1/stats", nil, &stats); err == nil {
			total, ended := 0, endedCount(stats.ByStatus)
			for _, n := range stats.ByStatus {
				total += n
			}
			if total == ended && ended >= want {
				return stats.ByStatus
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("messages still active after %v: %v", within, stats.ByStatus)
	return nil
}

// checkDelivered checks that every acknowledged id ended DELIVERY_SUCCESSFUL
// with one terminal timeline entry and reached the sink at least once.
func checkDelivered(t *testing.T, node *serverProc, sink *webhooksink.Sink, acked []string) {
	t.Helper()
	delivered := sink.Delivered()
	for _, id := range acked {
		if delivered[id] < 1 {
			t.Errorf("message %s never reached the sink", id)
		}
		var view struct {
			Status   string
			Timeline []struct{ To string }
		}
		if _, err := node.call("GET", "/v1/messages/"+id, nil, &view); err != nil {
			t.Fatal(err)
		}
		terminal := 0
		for _, e := range view.Timeline {
			if herald.Status(e.To).Terminal() {
				terminal++
			}
		}
		if view.Status != "DELIVERY_SUCCESSFUL" || terminal != 1 {
			t.Errorf("message %s: %s with %d terminal entries", id, view.Status, terminal)
		}
	}
}

// TestThreeNodesOneKilled runs three herald processes on one Redis, sends
// 5,000 messages and kills one node midway: every message ends once, reaches
// the sink, and no id is ever sent by two nodes at the same time.
func TestThreeNodesOneKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	const total = 5000
	rs := redistest.Start(t)
	sink := webhooksink.New(webhooksink.Config{Delay: 10 * time.Millisecond})
	sinkSrv := httptest.NewServer(sink)
	defer sinkSrv.Close()
	nodes := startNodes(t, 3, rs.URL(), sinkSrv.URL, 8, "2s")

	var killed sync.Once
	var isDead sync.Map
	go func() {
		for sink.Stats().Delivered < total/3 {
			time.Sleep(5 * time.Millisecond)
		}
		killed.Do(func() {
			isDead.Store(0, true)
			nodes[0].kill()
		})
	}()
	acked := sendAll(t, nodes, total, func(i int) bool { _, ok := isDead.Load(i); return ok })
	if len(acked) != total {
		t.Fatalf("%d of %d sends acknowledged", len(acked), total)
	}
	byStatus := waitAllEnded(t, nodes[1], total, 90*time.Second)
	if _, ok := isDead.Load(0); !ok {
		t.Fatal("the node was never killed: the sink is too fast for this test")
	}
	checkDelivered(t, nodes[1], sink, acked)
	if overlaps := sink.Overlaps(); len(overlaps) > 0 {
		t.Errorf("%d ids were sent by two nodes at the same time, e.g. %s", len(overlaps), overlaps[0])
	}
	st := sink.Stats()
	t.Logf("three nodes, one killed: %v; %d deliveries, %d duplicates", byStatus, st.Delivered, st.Duplicates)
}

// TestRedisRestartUnderLoad restarts Redis (AOF on) in the middle of a load:
// the nodes recover by themselves and every acknowledged message ends.
func TestRedisRestartUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	const total = 2000
	rs := redistest.Start(t, redistest.AOF())
	sink := webhooksink.New(webhooksink.Config{Delay: 5 * time.Millisecond})
	sinkSrv := httptest.NewServer(sink)
	defer sinkSrv.Close()
	nodes := startNodes(t, 2, rs.URL(), sinkSrv.URL, 8, "2s")

	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		for sink.Stats().Delivered < total/4 {
			time.Sleep(5 * time.Millisecond)
		}
		rs.Restart(t)
	}()
	acked := sendAll(t, nodes, total, func(int) bool { return false })
	<-restarted
	if len(acked) != total {
		t.Fatalf("%d of %d sends acknowledged", len(acked), total)
	}
	waitAllEnded(t, nodes[0], total, 90*time.Second)
	checkDelivered(t, nodes[0], sink, acked)
	st := sink.Stats()
	t.Logf("redis restarted under load: %d messages, %d deliveries, %d duplicates", total, st.Delivered, st.Duplicates)
}

// TestPausedNodeLateCompletionRefused pauses a node (SIGSTOP) while its send
// is outstanding: another node re-claims the message after the accept
// timeout and delivers it; the first node's late result is refused.
func TestPausedNodeLateCompletionRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	rs := redistest.Start(t)
	arrived := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	requests := map[string]int{}
	sinkSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests[r.Header.Get("Idempotency-Key")]++
		first := requests[r.Header.Get("Idempotency-Key")] == 1
		mu.Unlock()
		if first {
			close(arrived)
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer sinkSrv.Close()
	defer close(release)

	a := startNodes(t, 1, rs.URL(), sinkSrv.URL, 4, "3s")[0]
	var view struct{ ID string }
	if code, err := a.call("POST", "/v1/messages", map[string]any{"route": "hooks", "text": "x"}, &view); err != nil || code != http.StatusAccepted {
		t.Fatalf("send: %d %v", code, err)
	}
	<-arrived // node A holds the message's first send
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	b := startNodes(t, 1, rs.URL(), sinkSrv.URL, 4, "3s")[0]

	var msg struct {
		Status   string
		Attempt  int
		Timeline []struct{ To string }
	}
	deadline := time.Now().Add(20 * time.Second)
	for msg.Status != "DELIVERY_SUCCESSFUL" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if _, err := b.call("GET", "/v1/messages/"+view.ID, nil, &msg); err != nil {
			t.Fatal(err)
		}
	}
	if msg.Status != "DELIVERY_SUCCESSFUL" || msg.Attempt != 2 {
		t.Fatalf("node B: %s at attempt %d, want DELIVERY_SUCCESSFUL at 2", msg.Status, msg.Attempt)
	}
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	refused := 0.0
	for refused == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		refused = metric(t, a, `herald_problems_total{kind="stale_completion"}`)
	}
	if refused != 1 {
		t.Fatalf("node A's late result: stale_completion = %v, want 1; its log:\n%s", refused, a.log.String())
	}
	if _, err := b.call("GET", "/v1/messages/"+view.ID, nil, &msg); err != nil {
		t.Fatal(err)
	}
	terminal := 0
	for _, e := range msg.Timeline {
		if e.To == "DELIVERY_SUCCESSFUL" || e.To == "DELIVERY_FAILED" {
			terminal++
		}
	}
	if msg.Status != "DELIVERY_SUCCESSFUL" || terminal != 1 {
		t.Fatalf("after the late result: %s with %d terminal entries", msg.Status, terminal)
	}
}

// metric reads one sample from a node's /metrics; 0 when absent.
func metric(t *testing.T, node *serverProc, name string) float64 {
	t.Helper()
	resp, err := http.Get(node.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, _ := strconv.ParseFloat(rest, 64)
			return v
		}
	}
	return 0
}
