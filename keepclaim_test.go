package herald_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// slowCallCarrier is a direct carrier whose calls wait until release is
// closed (or their context ends, unless they hang), bound by callTimeout
// (herald.SlowCaller).
type slowCallCarrier struct {
	release     chan struct{}
	callTimeout time.Duration
	hang        bool // its calls outlive their context
	calls       atomic.Int64
}

func (c *slowCallCarrier) Path() herald.Path              { return herald.PathDirect }
func (c *slowCallCarrier) CallTimeout() time.Duration     { return c.callTimeout }
func (c *slowCallCarrier) Validate(*herald.Message) error { return nil }
func (c *slowCallCarrier) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	c.calls.Add(1)
	done := ctx.Done()
	if c.hang {
		done = nil
	}
	select {
	case <-c.release:
		return herald.SendResult{}, nil
	case <-done:
		return herald.SendResult{}, ctx.Err()
	}
}

// slowRoute is route "slow", with an accept timeout of 1 s, on carrier c.
func slowRoute(t *testing.T, c herald.Carrier) herald.Route {
	t.Helper()
	p, err := herald.ProfilePolicy(herald.ProfileTaskPoll)
	if err != nil {
		t.Fatal(err)
	}
	p.Timeouts.Accept = time.Second
	return herald.Route{Name: "slow", Carrier: c, Policy: p}
}

// slowCallRig starts an engine whose route is slowRoute on c, and sends it
// one message, whose call it waits for.
func slowCallRig(t *testing.T, c *slowCallCarrier) (*rig, *herald.Message) {
	t.Helper()
	r := newRig(t, []herald.Route{slowRoute(t, c)})
	t.Cleanup(func() { close(c.release) }) // before the rig stops
	r.start()
	m := r.send(herald.SendRequest{Route: "slow", Target: "meter-1", Text: "read"})
	eventually(t, func() bool { return c.calls.Load() == 1 }, patience)
	return r, m
}

// stepPastDeadlines moves the clock on by d in steps of 10 ms while the
// message's call runs, waiting after each for the keeper or the reaper:
// the message is then still SENT_TO_NS at attempt 1 with a deadline ahead,
// or the test fails, unless keep is false, when it stops waiting once the
// message has left SENT_TO_NS.
func stepPastDeadlines(t *testing.T, r *rig, id string, d time.Duration, keep bool) {
	t.Helper()
	for end := r.clock.Now().Add(d); r.clock.Now().Before(end); {
		r.clock.Advance(10 * time.Millisecond)
		// The reaper may have been scanning when the clock moved, and then
		// sleeps a millisecond of the fake clock: move it by one while the
		// deadline is not ahead.
		tick := 0
		eventually(t, func() bool {
			m := r.get(id)
			if m.Status != herald.StatusSentToNS || m.Deadline.After(r.clock.Now()) {
				return true
			}
			if tick++; tick%20 == 0 {
				r.clock.Advance(time.Millisecond)
			}
			return false
		}, patience)
		got := r.get(id)
		if keep && (got.Status != herald.StatusSentToNS || got.Attempt != 1) {
			t.Fatalf("at %v, its call still running and its node alive: %s at attempt %d (%q); want SENT_TO_NS at attempt 1, its claim kept",
				r.clock.Now().Sub(t0), got.Status, got.Attempt, got.LastError)
		}
		if !keep && got.Status != herald.StatusSentToNS {
			return
		}
	}
}

// TestClaimKeptAliveWhileTheCallRuns: a carrier call that outlives the
// accept timeout keeps the message's claim: its deadline moves on with the
// call, no reaper retries it, the carrier is called once, and its answer
// is the message's outcome, at the first attempt (issue 12: exactly one
// task per message, whatever the accept timeout).
func TestClaimKeptAliveWhileTheCallRuns(t *testing.T) {
	c := &slowCallCarrier{release: make(chan struct{}), callTimeout: time.Hour}
	r, m := slowCallRig(t, c)
	stepPastDeadlines(t, r, m.ID, 5*time.Second, true)
	c.release <- struct{}{} // the call answers
	eventually(t, func() bool { return r.get(m.ID).Status == herald.StatusDeliverySuccessful }, patience)
	if got := r.get(m.ID); got.Attempt != 1 || c.calls.Load() != 1 {
		t.Fatalf("after the slow call: attempt %d, %d calls; want 1 and 1", got.Attempt, c.calls.Load())
	}
}

// TestClaimKeptNoLongerThanTheCallsBound: the claim is kept alive up to the
// call's bound (its CallTimeout) and no longer, so a call that hangs past
// it, or a node that died, leaves the message to the reaper's retry.
func TestClaimKeptNoLongerThanTheCallsBound(t *testing.T) {
	c := &slowCallCarrier{release: make(chan struct{}), callTimeout: 2 * time.Second, hang: true}
	r, m := slowCallRig(t, c)
	stepPastDeadlines(t, r, m.ID, 4*time.Second, false)
	got := r.get(m.ID)
	if got.Status != herald.StatusToRetry || got.LastError != herald.AcceptTimeoutError ||
		!strings.HasPrefix(got.LastError, "Timed out waiting for Network Server to accept message (") {
		t.Fatalf("past the call's bound: %s (%q); want TO_RETRY, %q", got.Status, got.LastError, herald.AcceptTimeoutError)
	}
	if at := got.Timeline[len(got.Timeline)-1].At.Sub(t0); at < 2*time.Second || at > 2500*time.Millisecond {
		t.Errorf("retried at %v; want once the deadline at the call's bound (2 s) passed", at)
	}
}
