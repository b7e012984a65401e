package herald_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// pathless is a push carrier, as LXMF's is, whose recipients have no path
// until reachable says otherwise: it asks for one and waits 7 s, the
// attempt counted when counted is set. (A push carrier's lane counts its
// flights in the store: no message of a paused lane was claimed ahead.)
type pathless struct {
	mu        sync.Mutex
	counted   bool
	reachable bool
	sends     []time.Time
	now       func() time.Time
}

func (c *pathless) Path() herald.Path              { return herald.PathPush }
func (c *pathless) Validate(*herald.Message) error { return nil }
func (c *pathless) Send(context.Context, *herald.Message) (herald.SendResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sends = append(c.sends, c.now())
	if c.reachable {
		return herald.SendResult{}, nil
	}
	return herald.SendResult{}, herald.WaitFor(7*time.Second, herald.ReasonPathRequested, c.counted, errors.New("no path to the recipient: path requested"))
}

func (c *pathless) set(f func(*pathless)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

func pathlessRig(t *testing.T, counted bool) (*rig, *pathless) {
	t.Helper()
	c := &pathless{counted: counted}
	p, err := herald.ProfilePolicy(herald.ProfileLXMF)
	if err != nil {
		t.Fatal(err)
	}
	p.Admission = herald.Admission{Concurrency: 1}
	obs := &throttles{}
	r := newRigWith(t, func(cfg *herald.Config) { cfg.Observer = obs }, []herald.Route{{Name: "mesh", Carrier: c, Policy: p}})
	c.now = r.clock.Now
	return r, c
}

func (r *rig) explain(id string) herald.Explanation {
	r.t.Helper()
	x, err := r.eng.Explain(context.Background(), "acme", id)
	if err != nil {
		r.t.Fatal(err)
	}
	return x
}

// TestCountedWaitIsTheCarriersScheduleAndFailsOnTheLastAttempt: a
// carrier's counted wait (an LXMF attempt that found no path and asked
// for one) spends the attempt and brings the next one exactly its wait
// later, not the route's retry policy (10 s) later; explain says what the
// message waits for; the fifth such answer fails the message at once,
// 28 s after the first, with the wait's reason kept.
func TestCountedWaitIsTheCarriersScheduleAndFailsOnTheLastAttempt(t *testing.T) {
	r, c := pathlessRig(t, true)
	r.start()
	m := r.send(herald.SendRequest{Route: "mesh", Target: "far", Text: "hi"})
	r.settle()
	for a := 1; a < 5; a++ {
		got := r.get(m.ID)
		if got.Status != herald.StatusToRetry || got.Attempt != a || got.DueAt.Sub(r.clock.Now()) != 7*time.Second {
			t.Fatalf("after attempt %d: %s at attempt %d, due in %v; want TO_RETRY at %d, due in 7s", a, got.Status, got.Attempt, got.DueAt.Sub(r.clock.Now()), a)
		}
		if last := got.Timeline[len(got.Timeline)-1]; last.Reason != herald.ReasonPathRequested {
			t.Errorf("timeline reason %q, want %q", last.Reason, herald.ReasonPathRequested)
		}
		if x := r.explain(m.ID); x.Reason != "path_requested" || x.Until == nil || !x.Until.Equal(got.DueAt) {
			t.Errorf("explain after attempt %d = %+v, want path_requested until the next attempt", a, x)
		}
		r.advance(7 * time.Second)
	}
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveryFailed || got.Attempt != 5 || got.UpdatedAt.Sub(t0) != 28*time.Second {
		t.Fatalf("ended %s at attempt %d after %v; want DELIVERY_FAILED at attempt 5 after 28s", got.Status, got.Attempt, got.UpdatedAt.Sub(t0))
	}
	if last := got.Timeline[len(got.Timeline)-1]; last.Reason != "path_requested; 5 of 5 attempts used" || got.LastError != "no path to the recipient: path requested" {
		t.Errorf("last entry %q, last error %q", last.Reason, got.LastError)
	}
	if len(c.sends) != 5 {
		t.Errorf("%d sends, want 5", len(c.sends))
	}
}

// TestUncountedWaitPausesTheLaneUntilTheCarrierCanSend: a wait that does
// not count (a message that may wait for its recipient's path) undoes its
// attempt and pauses the message's lane for the wait, so that its lane's
// other messages are not claimed only to wait too; explain says
// path_requested for both. Once the carrier can send, the first goes.
func TestUncountedWaitPausesTheLaneUntilTheCarrierCanSend(t *testing.T) {
	r, c := pathlessRig(t, false)
	r.start()
	first := r.send(herald.SendRequest{Route: "mesh", Target: "far", Lane: "far", Text: "1"})
	r.settle()
	second := r.send(herald.SendRequest{Route: "mesh", Target: "far", Lane: "far", Text: "2"})
	r.settle()
	for i := 0; i < 20; i++ { // much longer than five attempts
		r.advance(7 * time.Second)
	}
	if got := r.get(first.ID); got.Status != herald.StatusToRetry || got.Attempt != 0 {
		t.Fatalf("first: %s at attempt %d, want TO_RETRY with no attempt spent", got.Status, got.Attempt)
	}
	if got := r.get(second.ID); got.Status != herald.StatusQueued || got.Attempt != 0 {
		t.Fatalf("second: %s at attempt %d, want QUEUED behind the paused lane", got.Status, got.Attempt)
	}
	if n := len(c.sends); n != 21 {
		t.Errorf("%d sends in 140 s, want 21: one every 7 s, of the first message only", n)
	}
	for _, id := range []string{first.ID, second.ID} {
		if x := r.explain(id); x.Reason != "path_requested" {
			t.Errorf("explain %s = %+v, want path_requested", id, x)
		}
	}
	lane, err := r.store.Lane(context.Background(), "mesh", "far", "acme")
	if err != nil || lane.PauseReason != herald.ReasonPathRequested {
		t.Errorf("lane = %+v, %v; want paused for path_requested", lane, err)
	}
	c.set(func(c *pathless) { c.reachable = true })
	r.advance(7 * time.Second)
	if got := r.get(first.ID); got.Status != herald.StatusDeliveredToNS || got.Attempt != 1 {
		t.Errorf("first: %s at attempt %d, want handed over at attempt 1", got.Status, got.Attempt)
	}
	if got := r.get(second.ID); got.Status != herald.StatusQueued {
		t.Errorf("second: %s, want QUEUED behind the first, which is in flight", got.Status)
	}
}
