package herald_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// sentAt returns when m was last dispatched: its last SENT_TO_NS entry.
func sentAt(t *testing.T, m *herald.Message) time.Time {
	t.Helper()
	for i := len(m.Timeline) - 1; i >= 0; i-- {
		if m.Timeline[i].To == herald.StatusSentToNS {
			return m.Timeline[i].At
		}
	}
	t.Fatalf("message %s was never dispatched", m.ID)
	return time.Time{}
}

// TestBackpressurePausesTheLaneWithoutSpendingAttempts: a 429 with
// Retry-After 30 pauses the lane for 30 s (another message of the lane
// waits too) and spends no attempt, so 3 × 429 on a route allowing 2
// attempts still ends DELIVERY_SUCCESSFUL.
func TestBackpressurePausesTheLaneWithoutSpendingAttempts(t *testing.T) {
	var (
		mu    sync.Mutex
		calls int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n <= 3 {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	route := webhookRoute(t, "hooks", srv.URL, herald.ProfileChannel)
	route.Policy.MaxAttempts = 2
	route.Policy.Admission = herald.Admission{Concurrency: 5}
	r := newRig(t, []herald.Route{route})

	first := r.send(herald.SendRequest{Route: "hooks", Text: "one"})
	r.tick()
	got := r.get(first.ID)
	if got.Status != herald.StatusToRetry || got.Attempt != 0 || !got.DueAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("after a 429: %s attempt %d due %v; want TO_RETRY attempt 0 due +30s", got.Status, got.Attempt, got.DueAt)
	}
	second := r.send(herald.SendRequest{Route: "hooks", Text: "two"})
	r.clock.Advance(29 * time.Second)
	r.tick()
	if calls != 1 {
		t.Fatalf("%d requests within the pause, want only the first", calls)
	}
	x, err := r.eng.Explain(context.Background(), "acme", second.ID)
	if err != nil || x.Reason != "lane_paused" || x.Until == nil || !x.Until.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("explain of a message behind the pause = %+v, %v; want lane_paused until +30s", x, err)
	}
	r.clock.Advance(time.Second)
	r.tick() // both go, both get a 429: the lane pauses again
	r.clock.Advance(30 * time.Second)
	r.tick()
	for _, m := range []*herald.Message{first, second} {
		got := r.get(m.ID)
		if got.Status != herald.StatusDeliverySuccessful || got.Attempt != 1 {
			t.Errorf("%s ended %s at attempt %d, want DELIVERY_SUCCESSFUL at attempt 1", m.ID, got.Status, got.Attempt)
		}
	}
	if got := r.get(first.ID); len(got.Timeline) != 9 || got.Timeline[2].Reason != "backpressure" {
		t.Errorf("timeline of the first: %+v", got.Timeline)
	}
}

// TestSeed003GatewayBurst is seed 003's acceptance: a burst of 100 display
// updates for 10 devices behind one gateway lane, with a coalesce key per
// device, drains only the latest update of each device; and a burst of 100
// devices drains at the gateway's 30 per minute (a burst of 30, then one
// every 2 s).
func TestSeed003GatewayBurst(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b [64]byte
		n, _ := r.Body.Read(b[:])
		mu.Lock()
		bodies = append(bodies, string(b[:n]))
		mu.Unlock()
	}))
	defer srv.Close()
	r := newRig(t, []herald.Route{webhookRoute(t, "displays", srv.URL, herald.ProfileClassC)})

	for i := range 100 {
		dev := fmt.Sprintf("dev-%d", i%10)
		r.send(herald.SendRequest{Route: "displays", Lane: "gw-1", Target: dev, CoalesceKey: dev, Text: fmt.Sprintf("%s update %d", dev, i/10)})
	}
	r.tick()
	slices.Sort(bodies)
	var want []string
	for d := range 10 {
		want = append(want, fmt.Sprintf("dev-%d update 9", d))
	}
	if !slices.Equal(bodies, want) {
		t.Fatalf("sent %v, want only the latest update of each device %v", bodies, want)
	}

	r.clock.Advance(time.Minute) // the gateway's bucket is full again
	var msgs []*herald.Message
	for i := range 100 {
		msgs = append(msgs, r.send(herald.SendRequest{Route: "displays", Lane: "gw-1", Target: fmt.Sprintf("meter-%d", i), Text: "tariff"}))
	}
	start := r.clock.Now()
	for range 60 {
		r.tick()
		r.clock.Advance(time.Second)
	}
	r.tick()
	var times []time.Duration
	for _, m := range msgs {
		if got := r.get(m.ID); got.Status == herald.StatusDeliverySuccessful {
			times = append(times, sentAt(t, got).Sub(start))
		}
	}
	// 30 at once, then one every 2 s: 30 + 30 by +60s.
	if len(times) != 60 {
		t.Fatalf("%d dispatched in 60 s, want 60", len(times))
	}
	slices.Sort(times)
	for i, d := range times {
		want := time.Duration(max(0, i-29)) * 2 * time.Second
		if d != want {
			t.Fatalf("dispatch %d at +%v, want +%v (all: %v)", i, d, want, times)
		}
	}
}

// TestFloodedLaneDoesNotDelayAnother: lane A holds 10,000 due messages and
// one dispatch every 10 s, lane B one message; B's goes in the first round.
func TestFloodedLaneDoesNotDelayAnother(t *testing.T) {
	c := &scripted{path: herald.PathDirect}
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	p.Admission = herald.Admission{Spacing: 10 * time.Second}
	r := newRig(t, []herald.Route{{Name: "net", Carrier: c, Policy: p}})
	reqs := make([]herald.SendRequest, 10000)
	for i := range reqs {
		reqs[i] = herald.SendRequest{Route: "net", Lane: "A", Text: "a"}
	}
	sendAll(t, r, reqs)
	b := r.send(herald.SendRequest{Route: "net", Lane: "B", Text: "b"})
	r.tick()
	if got := r.get(b.ID); got.Status != herald.StatusDeliverySuccessful || !sentAt(t, got).Equal(t0) {
		t.Fatalf("lane B's message is %s, want delivered in the first round", got.Status)
	}
	if n := c.sends.Load(); n != 2 {
		t.Errorf("%d sends, want A's first and B's", n)
	}
}

// sendAll sends reqs from several goroutines.
func sendAll(t *testing.T, r *rig, reqs []herald.SendRequest) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(reqs))
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < len(reqs); i += 16 {
				if _, _, err := r.eng.Send(context.Background(), "acme", reqs[i]); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestExplainSaysWhyALaneHoldsAMessage covers each lane reason.
func TestExplainSaysWhyALaneHoldsAMessage(t *testing.T) {
	hold := &scripted{path: herald.PathPush} // accepted, then waits for the device
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	route := func(name string, a herald.Admission) herald.Route {
		p := p
		p.Admission = a
		return herald.Route{Name: name, Carrier: hold, Policy: p}
	}
	r := newRig(t, []herald.Route{
		route("capped", herald.Admission{Concurrency: 1}),
		route("spaced", herald.Admission{Spacing: 2 * time.Second}),
		route("rated", herald.Admission{Rate: herald.Rate{N: 1, Per: time.Minute}}),
		route("tenant", herald.Admission{TenantRate: herald.Rate{N: 1, Per: time.Minute}}),
	})
	pairs := map[string][2]*herald.Message{}
	for _, name := range []string{"capped", "spaced", "rated", "tenant"} {
		lane2 := "L"
		if name == "tenant" {
			lane2 = "M" // the tenant's bucket holds across lanes
		}
		pairs[name] = [2]*herald.Message{
			r.send(herald.SendRequest{Route: name, Lane: "L", Text: "first"}),
			r.send(herald.SendRequest{Route: name, Lane: lane2, Text: "second"}),
		}
	}
	r.tick()
	explain := func(m *herald.Message) herald.Explanation {
		x, err := r.eng.Explain(context.Background(), "acme", m.ID)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	if x := explain(pairs["capped"][0]); x.Reason != "awaiting_carrier" {
		t.Errorf("the message in flight: %+v, want awaiting_carrier", x)
	}
	if x := explain(pairs["capped"][1]); x.Reason != "lane_concurrency" || !slices.Equal(x.BlockingIDs, []string{pairs["capped"][0].ID}) {
		t.Errorf("capped: %+v, want lane_concurrency blocked by %s", x, pairs["capped"][0].ID)
	}
	if x := explain(pairs["spaced"][1]); x.Reason != "lane_spacing" || x.Until == nil || !x.Until.Equal(t0.Add(2*time.Second)) {
		t.Errorf("spaced: %+v, want lane_spacing until +2s", x)
	}
	if x := explain(pairs["rated"][1]); x.Reason != "rate_limited" || x.Until == nil || !x.Until.Equal(t0.Add(time.Minute)) {
		t.Errorf("rated: %+v, want rate_limited until +1m", x)
	}
	if x := explain(pairs["tenant"][1]); x.Reason != "tenant_rate_limited" || x.Until == nil || !x.Until.Equal(t0.Add(time.Minute)) {
		t.Errorf("tenant: %+v, want tenant_rate_limited until +1m", x)
	}
	out, _ := json.Marshal(explain(pairs["spaced"][1]))
	t.Logf("%s", out)
}
