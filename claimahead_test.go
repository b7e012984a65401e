package herald_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// laneGate is a direct carrier that holds every call of the lanes it gates
// until the test releases it, and counts the calls per lane: in flight,
// the most in flight at once, and ended; and the calls per message.
type laneGate struct {
	mu               sync.Mutex
	gates            map[string]chan struct{} // by lane; a call of another lane returns at once
	open, most, done map[string]int
	sent             map[string]int // by message id
	closeOnce        sync.Once
}

// newLaneGate returns a laneGate that holds the calls of lanes.
func newLaneGate(lanes ...string) *laneGate {
	c := &laneGate{gates: map[string]chan struct{}{}, open: map[string]int{}, most: map[string]int{}, done: map[string]int{}, sent: map[string]int{}}
	for _, l := range lanes {
		c.gates[l] = make(chan struct{})
	}
	return c
}

func (c *laneGate) Path() herald.Path              { return herald.PathDirect }
func (c *laneGate) Validate(*herald.Message) error { return nil }
func (c *laneGate) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	c.mu.Lock()
	c.open[m.Lane]++
	c.most[m.Lane] = max(c.most[m.Lane], c.open[m.Lane])
	c.sent[m.ID]++
	gate := c.gates[m.Lane]
	c.mu.Unlock()
	var err error
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done(): // the engine stops: a test that failed
			err = ctx.Err()
		}
	}
	c.mu.Lock()
	c.open[m.Lane]--
	c.done[m.Lane]++
	c.mu.Unlock()
	return herald.SendResult{}, err
}

// state returns lane's calls in flight, the most in flight at once, and
// the calls ended.
func (c *laneGate) state(lane string) (open, most, done int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open[lane], c.most[lane], c.done[lane]
}

// calls returns how many calls m got.
func (c *laneGate) calls(m *herald.Message) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent[m.ID]
}

// releaseOne ends one call of lane, which must be held.
func (c *laneGate) releaseOne(lane string) { c.gates[lane] <- struct{}{} }

// releaseAll ends the calls held and holds no more.
func (c *laneGate) releaseAll() {
	c.closeOnce.Do(func() {
		for _, g := range c.gates {
			close(g)
		}
	})
}

// claimAheadRig returns a rig with the direct route "dcu" capped at
// concurrency calls per lane (so the engine gives it a ClaimAhead) on
// carrier c, whose held calls end before the engine stops.
func claimAheadRig(t *testing.T, c *laneGate, concurrency int) *rig {
	t.Helper()
	p, _ := herald.ProfilePolicy(herald.ProfileChannel) // accept timeout 20 s
	p.Admission = herald.Admission{Concurrency: concurrency}
	r := newRig(t, []herald.Route{{Name: "dcu", Carrier: c, Policy: p}})
	t.Cleanup(c.releaseAll) // runs before the rig's stop
	return r
}

// TestClaimAheadKeepsTheLaneConcurrencyAtTheCarrier: on a direct route
// capped at 2 calls per lane, the carrier never has more than 2 calls of a
// lane at once, and has exactly 2 (while the lane has 2 left) after each
// call that ends, as the calls are released one per lane at a time; while
// the first calls are held, only they are SENT_TO_NS, the 36 others QUEUED
// with no attempt spent; the 40 messages of lanes A and B end
// DELIVERY_SUCCESSFUL, each sent once.
func TestClaimAheadKeepsTheLaneConcurrencyAtTheCarrier(t *testing.T) {
	const perLane = 20
	c := newLaneGate("A", "B")
	r := claimAheadRig(t, c, 2)
	var msgs []*herald.Message
	for i := range 2 * perLane {
		msgs = append(msgs, r.send(herald.SendRequest{Route: "dcu", Lane: []string{"A", "B"}[i%2], Text: "x"}))
	}
	r.start()
	for released := range perLane {
		want := min(2, perLane-released)
		eventually(t, func() bool {
			for _, lane := range []string{"A", "B"} {
				open, most, done := c.state(lane)
				if most > 2 {
					return true // fails below
				}
				if done != released || open != want {
					return false
				}
			}
			return true
		}, patience)
		for _, lane := range []string{"A", "B"} {
			if _, most, _ := c.state(lane); most > 2 {
				t.Fatalf("lane %s had %d carrier calls at once, capped at 2", lane, most)
			}
		}
		if released == 0 { // the calls held: the lanes' other messages were not sent, and do not say so
			for i, m := range msgs {
				want, attempt := herald.StatusQueued, 0
				if i < 4 {
					want, attempt = herald.StatusSentToNS, 1
				}
				if got := r.get(m.ID); got.Status != want || got.Attempt != attempt {
					t.Fatalf("%s of lane %s is %s at attempt %d while the first calls are held, want %s at attempt %d",
						m.ID, m.Lane, got.Status, got.Attempt, want, attempt)
				}
			}
		}
		c.releaseOne("A")
		c.releaseOne("B")
	}
	r.settle()
	for _, lane := range []string{"A", "B"} {
		if open, most, done := c.state(lane); most != 2 || done != perLane || open != 0 {
			t.Errorf("lane %s: %d calls ended, %d in flight, at most %d at once; want %d, 0, 2", lane, done, open, most, perLane)
		}
	}
	for _, m := range msgs {
		if got := r.get(m.ID); got.Status != herald.StatusDeliverySuccessful || c.calls(m) != 1 {
			t.Errorf("%s of lane %s: %s after %d calls, want DELIVERY_SUCCESSFUL after 1", m.ID, m.Lane, got.Status, c.calls(m))
		}
	}
}

// TestClaimAheadLaneDoesNotKeepAnotherBack: lane A holds 2,000 due
// messages of a direct route capped at 1 call per lane, and its first call
// does not end; lane B's one message is delivered all the same, while A's
// call is still held (the messages of A claimed ahead and waiting for
// their lane neither fill the claims' window nor take the send slots);
// once A's calls are released, all of A's are sent, one at a time, once
// each.
func TestClaimAheadLaneDoesNotKeepAnotherBack(t *testing.T) {
	const flood = 2000
	c := newLaneGate("A")
	r := claimAheadRig(t, c, 1)
	reqs := make([]herald.SendRequest, flood)
	for i := range reqs {
		reqs[i] = herald.SendRequest{Route: "dcu", Lane: "A", Text: "a"}
	}
	sendAll(t, r, reqs)
	b := r.send(herald.SendRequest{Route: "dcu", Lane: "B", Text: "b"})
	r.start()
	eventually(t, func() bool { return r.get(b.ID).Status == herald.StatusDeliverySuccessful }, patience)
	if open, most, done := c.state("A"); open != 1 || most != 1 || done != 0 {
		t.Fatalf("when B's message was delivered lane A had %d calls in flight (at most %d), %d ended; want its first held alone", open, most, done)
	}
	c.releaseAll()
	eventually(t, r.eng.Idle, time.Minute) // 2,000 calls one at a time: slow on a busy machine under -race
	if open, most, done := c.state("A"); done != flood || most != 1 || open != 0 {
		t.Errorf("lane A: %d calls ended, %d in flight, at most %d at once; want %d, 0, 1", done, open, most, flood)
	}
	if n := len(c.sent); n != flood+1 {
		t.Errorf("%d messages sent, want %d", n, flood+1)
	}
	for id, n := range c.sent {
		if n != 1 {
			t.Errorf("%s sent %d times", id, n)
		}
	}
}

// TestLaneHeldMessagesStayQueued: on a direct route capped at 2 calls
// per lane, 8 messages of one lane whose calls answer slowly (held): only
// the 2 at the carrier are SENT_TO_NS; the 6 others stay QUEUED with no
// attempt spent, no stage deadline and nothing in their timeline but
// their creation, and explain says lane_concurrency, naming the 2 in
// flight. So they stay when the engine stops; started again, it sends
// them, each once, at attempt 1.
func TestLaneHeldMessagesStayQueued(t *testing.T) {
	c := newLaneGate("L")
	r := claimAheadRig(t, c, 2)
	var msgs []*herald.Message
	for range 8 {
		msgs = append(msgs, r.send(herald.SendRequest{Route: "dcu", Lane: "L", Text: "x"}))
	}
	r.start()
	eventually(t, func() bool { open, _, _ := c.state("L"); return open == 2 }, patience)
	time.Sleep(100 * time.Millisecond) // the dispatcher's next claims, which find nothing more to take
	if n := r.countStatus(herald.StatusSentToNS); n != 2 {
		t.Fatalf("%d messages SENT_TO_NS with 2 calls at the carrier, want 2", n)
	}
	inFlight := []string{msgs[0].ID, msgs[1].ID}
	for _, m := range msgs[2:] {
		got := r.get(m.ID)
		if got.Status != herald.StatusQueued || got.Attempt != 0 || !got.Deadline.IsZero() || len(got.Timeline) != 1 {
			t.Errorf("%s: %s attempt %d deadline %v, %d timeline entries; want QUEUED, attempt 0, none, its creation's only",
				m.ID, got.Status, got.Attempt, got.Deadline, len(got.Timeline))
		}
		x, err := r.eng.Explain(context.Background(), "acme", m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if x.Reason != "lane_concurrency" || !slices.Equal(x.BlockingIDs, inFlight) {
			t.Errorf("explain %s = %s %v (%s), want lane_concurrency %v", m.ID, x.Reason, x.BlockingIDs, x.Detail, inFlight)
		}
	}
	stopped := make(chan struct{})
	go func() { r.stop(); close(stopped) }()
	eventually(t, func() bool { return r.clock.Waiters() == 0 }, patience) // the loops are gone; Stop waits for the held calls
	for _, m := range msgs[2:] {
		if got := r.get(m.ID); got.Status != herald.StatusQueued || got.Attempt != 0 {
			t.Errorf("%s while the engine stops: %s attempt %d, want QUEUED attempt 0", m.ID, got.Status, got.Attempt)
		}
	}
	c.releaseAll()
	<-stopped
	r.start()
	r.settle()
	for _, m := range msgs {
		if got := r.get(m.ID); got.Status != herald.StatusDeliverySuccessful || got.Attempt != 1 || c.calls(m) != 1 {
			t.Errorf("%s: %s at attempt %d after %d calls, want DELIVERY_SUCCESSFUL at attempt 1 after 1", m.ID, got.Status, got.Attempt, c.calls(m))
		}
	}
}

// TestClaimAheadLanesShareTheBuffer: three lanes of 600 messages each,
// capped at 1 call whose calls do not end, would hold more claimed
// messages than the engine has room for (its pending tokens) if each
// claimed as far ahead as its ClaimAhead; their calls are slow, so none
// is claimed beyond its call (Claim.KeptAhead), and a fourth lane's one
// message is delivered while their calls are held.
func TestClaimAheadLanesShareTheBuffer(t *testing.T) {
	c := newLaneGate("A", "B", "C")
	r := claimAheadRig(t, c, 1)
	var reqs []herald.SendRequest
	for _, l := range []string{"A", "B", "C"} {
		for range 600 {
			reqs = append(reqs, herald.SendRequest{Route: "dcu", Lane: l, Text: "x"})
		}
	}
	sendAll(t, r, reqs)
	d := r.send(herald.SendRequest{Route: "dcu", Lane: "D", Text: "d"})
	r.start()
	eventually(t, func() bool { return r.get(d.ID).Status == herald.StatusDeliverySuccessful }, patience)
	// Each lane's first call starts in its own time, perhaps after D's.
	eventually(t, func() bool {
		for _, l := range []string{"A", "B", "C"} {
			if open, _, _ := c.state(l); open == 0 {
				return false
			}
		}
		return true
	}, patience)
	for _, l := range []string{"A", "B", "C"} {
		if open, _, done := c.state(l); open != 1 || done != 0 {
			t.Errorf("lane %s: %d calls in flight, %d ended; want its first held", l, open, done)
		}
	}
}

// TestClaimAheadSlowCallsLeaveRoom: with more send slots than claims
// reach ahead (Concurrency 20, ClaimBatch 2: 48 pending tokens), six
// lanes capped at 3 calls, whose calls do not end, hold their calls, not
// every token: a seventh lane's message is delivered while they are held.
// (Claim.KeptSent counts only answers on their way to the store, never
// calls in flight.)
func TestClaimAheadSlowCallsLeaveRoom(t *testing.T) {
	slow := []string{"A", "B", "C", "E", "F", "G"}
	c := newLaneGate(slow...)
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	p.Admission = herald.Admission{Concurrency: 3}
	r := newRigWith(t, func(cfg *herald.Config) { cfg.Concurrency, cfg.ClaimBatch = 20, 2 },
		[]herald.Route{{Name: "dcu", Carrier: c, Policy: p}})
	t.Cleanup(c.releaseAll)
	var reqs []herald.SendRequest
	for _, l := range slow {
		for range 40 {
			reqs = append(reqs, herald.SendRequest{Route: "dcu", Lane: l, Text: "x"})
		}
	}
	sendAll(t, r, reqs)
	r.start()
	// The claims have taken what they may: as many in flight for 200 ms.
	last, same := -1, 0
	eventually(t, func() bool {
		time.Sleep(10 * time.Millisecond)
		n := r.countStatus(herald.StatusSentToNS)
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
		return n >= 9 && same >= 20
	}, patience)
	d := r.send(herald.SendRequest{Route: "dcu", Lane: "D", Text: "d"})
	eventually(t, func() bool { return r.get(d.ID).Status == herald.StatusDeliverySuccessful }, patience)
}

// countStatus returns how many messages are in status st.
func (r *rig) countStatus(st herald.Status) int {
	r.t.Helper()
	counts, err := r.store.Counts(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, c := range counts {
		if c.Status == st {
			n += c.N
		}
	}
	return n
}
