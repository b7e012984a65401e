package herald_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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
	requests := func() int {
		mu.Lock()
		defer mu.Unlock()
		return calls
	}
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
	r.start()

	first := r.send(herald.SendRequest{Route: "hooks", Text: "one"})
	r.settle()
	got := r.get(first.ID)
	if got.Status != herald.StatusToRetry || got.Attempt != 0 || !got.DueAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("after a 429: %s attempt %d due %v; want TO_RETRY attempt 0 due +30s", got.Status, got.Attempt, got.DueAt)
	}
	second := r.send(herald.SendRequest{Route: "hooks", Text: "two"})
	r.advance(29 * time.Second)
	if n := requests(); n != 1 {
		t.Fatalf("%d requests within the pause, want only the first", n)
	}
	x, err := r.eng.Explain(context.Background(), "acme", second.ID)
	if err != nil || x.Reason != "lane_paused" || x.Until == nil || !x.Until.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("explain of a message behind the pause = %+v, %v; want lane_paused until +30s", x, err)
	}
	r.advance(time.Second) // both go, both get a 429: the lane pauses again
	r.advance(30 * time.Second)
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

// TestGatewayBurst, the classc profile at work: a burst of 100 display
// updates for 10 devices behind one gateway lane, with a coalesce key per
// device, drains only the latest update of each device; and a burst of 100
// devices drains at the gateway's 30 per minute (a burst of 30, then one
// every 2 s).
func TestGatewayBurst(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
	)
	sentBodies := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(bodies)
	}
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
	r.start()
	r.settle()
	got := sentBodies()
	slices.Sort(got)
	var want []string
	for d := range 10 {
		want = append(want, fmt.Sprintf("dev-%d update 9", d))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sent %v, want only the latest update of each device %v", got, want)
	}

	r.advance(time.Minute) // the gateway's bucket is full again
	var msgs []*herald.Message
	for i := range 100 {
		msgs = append(msgs, r.send(herald.SendRequest{Route: "displays", Lane: "gw-1", Target: fmt.Sprintf("meter-%d", i), Text: "tariff"}))
	}
	start := r.clock.Now()
	for range 60 {
		r.advance(time.Second)
	}
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
	r.start()
	r.settle()
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
		route("whole", herald.Admission{RouteRate: herald.Rate{N: 1, Per: time.Minute}}),
	})
	pairs := map[string][2]*herald.Message{}
	for _, name := range []string{"capped", "spaced", "rated", "tenant", "whole"} {
		lane2 := "L"
		if name == "tenant" || name == "whole" {
			lane2 = "M" // the tenant's and the route's buckets hold across lanes
		}
		pairs[name] = [2]*herald.Message{
			r.send(herald.SendRequest{Route: name, Lane: "L", Text: "first"}),
			r.send(herald.SendRequest{Route: name, Lane: lane2, Text: "second"}),
		}
	}
	r.start()
	r.settle()
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
	if x := explain(pairs["whole"][1]); x.Reason != "rate_limited" || x.Until == nil || !x.Until.Equal(t0.Add(time.Minute)) ||
		!strings.Contains(x.Detail, "route whole's bucket") {
		t.Errorf("whole: %+v, want rate_limited until +1m by the route's bucket", x)
	}
	out, _ := json.Marshal(explain(pairs["spaced"][1]))
	t.Logf("%s", out)
}

// logCarrier records the text of every send, and fails the first send of
// each text it lists.
type logCarrier struct {
	mu       sync.Mutex
	sent     []string
	failOnce map[string]bool
}

// texts returns the texts sent, in order.
func (c *logCarrier) texts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sent)
}

func (c *logCarrier) Path() herald.Path              { return herald.PathDirect }
func (c *logCarrier) Validate(*herald.Message) error { return nil }
func (c *logCarrier) Send(_ context.Context, m *herald.Message) (herald.SendResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, m.Text)
	if c.failOnce[m.Text] {
		delete(c.failOnce, m.Text)
		return herald.SendResult{}, fmt.Errorf("device busy")
	}
	return herald.SendResult{}, nil
}

// TestOrderedRouteSendsOneAtATimeInOrder: three messages to one target on
// an ordered route go strictly one after another, in order, even when the
// first is retried; another target's message does not wait.
func TestOrderedRouteSendsOneAtATimeInOrder(t *testing.T) {
	c := &logCarrier{failOnce: map[string]bool{"one": true}}
	p, _ := herald.ProfilePolicy(herald.ProfileChannel) // first retry after 5 s
	p.Admission.Ordered = true
	r := newRig(t, []herald.Route{{Name: "meters", Carrier: c, Policy: p}})
	var msgs []*herald.Message
	for _, text := range []string{"one", "two", "three"} {
		msgs = append(msgs, r.send(herald.SendRequest{Route: "meters", Target: "meter-7", Text: text}))
	}
	r.send(herald.SendRequest{Route: "meters", Target: "meter-8", Text: "other"})
	r.start()
	r.settle()
	if sent, want := c.texts(), []string{"one", "other"}; !sameSet(sent, want) {
		t.Fatalf("sent %v, want %v: the first of each target", sent, want)
	}
	x, err := r.eng.Explain(context.Background(), "acme", msgs[1].ID)
	if err != nil || x.Reason != "ordered_behind" || !slices.Equal(x.BlockingIDs, []string{msgs[0].ID}) {
		t.Fatalf("explain of the second = %+v, %v; want ordered_behind %s", x, err, msgs[0].ID)
	}
	r.advance(5 * time.Second)
	if sent, want := c.texts(), []string{"one", "two", "three"}; len(sent) < 2 || !slices.Equal(sent[2:], want) {
		t.Fatalf("sent %v, want %v", sent, want)
	}
	for i, m := range msgs {
		got := r.get(m.ID)
		if got.Status != herald.StatusDeliverySuccessful {
			t.Fatalf("%s is %s", m.Text, got.Status)
		}
		if i > 0 { // each was dispatched once the one before it had ended
			prev := r.get(msgs[i-1].ID)
			if sentAt(t, got).Before(prev.UpdatedAt) {
				t.Errorf("%s dispatched at %v, before %s ended at %v", m.Text, sentAt(t, got), prev.Text, prev.UpdatedAt)
			}
		}
	}
}

// TestDedupAgainstTheLastCommandSent: on a classc route (dedup_ttl 1h) a
// command equal to the last one sent to its device is not queued: the
// earlier message comes back, marked deduplicated. Anything else is sent:
// RED, GREEN, RED are three sends; RED again an hour after the last RED
// was sent is a fourth.
func TestDedupAgainstTheLastCommandSent(t *testing.T) {
	c := &logCarrier{}
	p, _ := herald.ProfilePolicy(herald.ProfileClassC)
	r := newRig(t, []herald.Route{{Name: "displays", Carrier: c, Policy: p}})
	r.start()
	red := herald.SendRequest{Route: "displays", Target: "dev-1", Text: "RED", Params: map[string]string{"f_port": "2"}}
	green := red
	green.Text = "GREEN"
	send := func(req herald.SendRequest) (*herald.Message, bool) {
		t.Helper()
		m, created, err := r.eng.Send(context.Background(), "acme", req)
		if err != nil {
			t.Fatal(err)
		}
		if !created && (!m.Deduplicated || !m.View().Deduplicated) {
			t.Fatalf("%s not created, but not marked deduplicated", req.Text)
		}
		r.settle()
		return m, created
	}
	first, _ := send(red)
	r.advance(59 * time.Minute)
	if twin, created := send(red); created || twin.ID != first.ID {
		t.Fatalf("RED, RED: the second created %v (%s), want %s back, deduplicated", created, twin.ID, first.ID)
	}
	if _, created := send(green); !created {
		t.Fatal("RED, GREEN: GREEN deduplicated")
	}
	third, created := send(red)
	if !created {
		t.Fatal("RED, GREEN, RED: the last RED deduplicated against the first")
	}
	r.advance(59 * time.Minute)
	if twin, created := send(red); created || twin.ID != third.ID {
		t.Fatalf("RED within the hour of the last RED sent: created %v, want %s back", created, third.ID)
	}
	r.advance(2 * time.Minute)
	if _, created := send(red); !created {
		t.Fatal("RED over an hour after the last RED sent: deduplicated")
	}
	if sent := c.texts(); !slices.Equal(sent, []string{"RED", "GREEN", "RED", "RED"}) {
		t.Errorf("sent %v, want RED, GREEN, RED, RED", sent)
	}
}

// sameSet reports whether got and want hold the same strings in any order.
func sameSet(got, want []string) bool {
	return len(got) == len(want) && !slices.ContainsFunc(want, func(w string) bool { return !slices.Contains(got, w) })
}

// TestCircuitOpensAfterTwentyFailures: 20 consecutive 503s open the lane's
// circuit; messages stop going to the endpoint and spend no attempt; after
// the cool-down exactly one probe goes; a 200 closes the circuit and the
// backlog drains. Subscribers hear of the open and the close: those that
// name no types, and those that name the lane events' types, no other.
func TestCircuitOpensAfterTwentyFailures(t *testing.T) {
	var (
		mu      sync.Mutex
		calls   int
		healthy bool
	)
	requests := func() int {
		mu.Lock()
		defer mu.Unlock()
		return calls
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if !healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	route := webhookRoute(t, "hooks", srv.URL, herald.ProfileChannel)
	route.Policy.Admission.Circuit = herald.Circuit{Failures: 20, CoolDown: time.Minute}
	sink, opens, failures := &recordingSink{}, &recordingSink{}, &recordingSink{}
	// One send at a time. The dispatcher starts the next send as soon as
	// one returns, before its failure is recorded and counted by the
	// circuit, so the backlog is queued once 20 sends failed: what the
	// circuit stops is what comes after its 20th failure.
	r := newRigWith(t, func(c *herald.Config) { c.Concurrency = 1 }, []herald.Route{route},
		herald.Subscriber{Name: "ops", Sink: sink},
		herald.Subscriber{Name: "opens", Sink: opens, Types: []herald.Status{herald.EventCircuitOpen}},
		herald.Subscriber{Name: "failures", Sink: failures, Types: []herald.Status{herald.StatusDeliveryFailed}})
	var msgs []*herald.Message
	for i := range 20 {
		msgs = append(msgs, r.send(herald.SendRequest{Route: "hooks", Text: fmt.Sprint(i)}))
	}
	r.start()
	r.settle() // the lane event's delivery too
	for i := 20; i < 30; i++ {
		msgs = append(msgs, r.send(herald.SendRequest{Route: "hooks", Text: fmt.Sprint(i)}))
	}
	r.settle()
	if n := requests(); n != 20 {
		t.Fatalf("%d requests, want 20: the circuit opens at the 20th failure", n)
	}
	waiting := r.get(msgs[29].ID)
	if !waiting.Status.Waiting() || waiting.Attempt != 0 {
		t.Fatalf("a message behind the open circuit is %s attempt %d, want waiting at attempt 0", waiting.Status, waiting.Attempt)
	}
	x, err := r.eng.Explain(context.Background(), "acme", msgs[29].ID)
	if err != nil || x.Reason != "lane_paused" || x.Until == nil || !x.Until.Equal(t0.Add(time.Minute)) {
		t.Fatalf("explain behind the open circuit = %+v, %v; want lane_paused until +1m", x, err)
	}
	if evs := sink.lane(); len(evs) != 1 || evs[0].Type != herald.EventCircuitOpen || evs[0].Lane.Route != "hooks" {
		t.Fatalf("lane events %+v, want one lane.circuit_open", evs)
	}
	r.advance(59 * time.Second)
	if n := requests(); n != 20 {
		t.Fatalf("%d requests before the cool-down ended, want 20", n)
	}
	r.advance(time.Second)
	if n := requests(); n != 21 {
		t.Fatalf("%d requests after the cool-down, want 21: exactly one probe", n)
	}
	// The probe failed: open again for twice as long.
	r.advance(2*time.Minute - time.Second)
	if n := requests(); n != 21 {
		t.Fatalf("%d requests within the doubled cool-down, want 21", n)
	}
	mu.Lock()
	healthy = true
	mu.Unlock()
	r.advance(time.Second)
	for _, m := range msgs {
		if got := r.get(m.ID); got.Status != herald.StatusDeliverySuccessful && got.Status != herald.StatusToRetry {
			t.Errorf("%s is %s", m.Text, got.Status)
		}
	}
	if got := r.get(msgs[29].ID); got.Status != herald.StatusDeliverySuccessful || got.Attempt != 1 {
		t.Errorf("the last message: %s attempt %d, want delivered at its first attempt", got.Status, got.Attempt)
	}
	if evs := sink.lane(); len(evs) != 3 || evs[1].Type != herald.EventCircuitOpen || evs[2].Type != herald.EventCircuitClosed {
		t.Errorf("lane events %+v, want open, open again, closed", evs)
	}
	if evs := opens.lane(); len(evs) != 2 || evs[0].Type != herald.EventCircuitOpen || evs[1].Type != herald.EventCircuitOpen {
		t.Errorf("the lane events of a subscriber of lane.circuit_open: %+v, want the two opens", evs)
	}
	if evs := failures.lane(); len(evs) != 0 {
		t.Errorf("the lane events of a subscriber of DELIVERY_FAILED only: %+v, want none", evs)
	}
}

// lane returns the lane events recorded, in order.
func (s *recordingSink) lane() []herald.OutcomeEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []herald.OutcomeEvent
	for _, e := range s.events {
		if e.Lane != nil {
			out = append(out, e)
		}
	}
	return out
}

// TestFreedSlotWakesTheDispatcher: on a lane capped at one, the next
// message goes as soon as a poll ends the one in flight, not at the
// dispatcher's next poll (an hour away here), for a pull task and for a
// push message ended by its network's event.
func TestFreedSlotWakesTheDispatcher(t *testing.T) {
	for _, path := range []herald.Path{herald.PathPull, herald.PathPush} {
		t.Run(path.String(), func(t *testing.T) {
			var c herald.Carrier = &scripted{path: path, poll: herald.PollSucceeded}
			if path == herald.PathPush {
				c = &network{}
			}
			p, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
			p.Admission = herald.Admission{Concurrency: 1}
			r := newRigWith(t, func(cfg *herald.Config) { cfg.PollInterval = time.Hour }, []herald.Route{{Name: "dcu", Carrier: c, Policy: p}})
			r.start()
			unconfirmed := map[string]string{"confirmed": "false"} // push: delivered at its txack
			first := r.send(herald.SendRequest{Route: "dcu", Target: "0102030405060708", Lane: "dcu-1", Text: "first", Params: unconfirmed})
			second := r.send(herald.SendRequest{Route: "dcu", Target: "0102030405060708", Lane: "dcu-1", Text: "second", Params: unconfirmed})
			r.settle()
			if s := r.get(second.ID).Status; s != herald.StatusQueued {
				t.Fatalf("second while the first holds the lane's slot: %s, want QUEUED", s)
			}
			if path == herald.PathPull {
				r.advance(12 * time.Second) // the first poll, 10 s after acceptance (+ jitter 0 here)
			} else {
				body, _ := json.Marshal(networkEvent{Item: "q-" + first.ID})
				if err := r.eng.Ingest(context.Background(), "dcu", "txack", "", body); err != nil {
					t.Fatal(err)
				}
				r.settle()
			}
			if s := r.get(first.ID).Status; s != herald.StatusDeliverySuccessful {
				t.Fatalf("first: %s, want DELIVERY_SUCCESSFUL", s)
			}
			if s := r.get(second.ID).Status; s != herald.StatusDeliveredToNS {
				t.Fatalf("second once the first ended: %s, want DELIVERED_TO_NS (sent at once)", s)
			}
		})
	}
}
