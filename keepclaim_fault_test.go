package herald_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// keeperFaultStore wraps a real store. It fails the next failKeeps moves
// of a claim's deadline (a SENT_TO_NS -> SENT_TO_NS transition with no
// external id: the claim keeper's) as a store that is briefly unreachable
// does, and, while gate is not nil, holds each progress write (the same
// transition with an external id) until gate is closed, telling held when
// one waits.
type keeperFaultStore struct {
	herald.Store
	failKeeps atomic.Int32
	gate      chan struct{}
	held      chan struct{}
}

func (s *keeperFaultStore) Transition(ctx context.Context, t herald.Transition) error {
	if t.From == herald.StatusSentToNS && t.To == herald.StatusSentToNS {
		if t.ExternalID == "" && s.failKeeps.Add(-1) >= 0 {
			return herald.ErrStoreUnavailable
		}
		if t.ExternalID != "" && s.gate != nil {
			s.held <- struct{}{}
			<-s.gate
		}
	}
	return s.Store.Transition(ctx, t)
}

// slowResumable is a direct Resumer (a chat carrier sending its parts)
// and a SlowCaller: it records its first part through progress, then waits
// until release is closed or its context ends.
type slowResumable struct {
	release chan struct{}
	calls   atomic.Int64
}

func (c *slowResumable) Path() herald.Path              { return herald.PathDirect }
func (c *slowResumable) CallTimeout() time.Duration     { return time.Hour }
func (c *slowResumable) Validate(*herald.Message) error { return nil }
func (c *slowResumable) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	return c.SendResumable(ctx, m, func(string) error { return nil })
}
func (c *slowResumable) SendResumable(ctx context.Context, m *herald.Message, progress func(string) error) (herald.SendResult, error) {
	c.calls.Add(1)
	if err := progress("part-1"); err != nil {
		return herald.SendResult{}, err
	}
	select {
	case <-c.release:
		return herald.SendResult{}, nil
	case <-ctx.Done():
		return herald.SendResult{}, ctx.Err()
	}
}

// keeperRig is an engine whose route is slowRoute on c, on a
// keeperFaultStore.
func keeperRig(t *testing.T, c herald.Carrier, st *keeperFaultStore) *rig {
	t.Helper()
	return newRigWith(t, func(cfg *herald.Config) {
		st.Store = cfg.Store
		cfg.Store = st
	}, []herald.Route{slowRoute(t, c)})
}

// TestClaimKeptAliveThroughOneStoreError: the store fails one move of the
// claim's deadline (a Redis failover, a busy SQLite writer); the node is
// alive and its call still runs. The keeper must try again and keep the
// claim: were the reaper to retry the message while its call may still
// succeed, a vendor would get a second task, or the retry would fail "in
// doubt".
func TestClaimKeptAliveThroughOneStoreError(t *testing.T) {
	c := &slowCallCarrier{release: make(chan struct{}), callTimeout: time.Hour}
	st := &keeperFaultStore{}
	st.failKeeps.Store(1)
	r := keeperRig(t, c, st)
	t.Cleanup(func() { close(c.release) })
	r.start()
	m := r.send(herald.SendRequest{Route: "slow", Target: "meter-1", Text: "read"})
	eventually(t, func() bool { return c.calls.Load() == 1 }, patience)
	stepPastDeadlines(t, r, m.ID, 5*time.Second, true)
}

// TestProgressDoesNotMoveTheKeptDeadlineBack: a Resumer's progress write
// is under way when the keeper's time to move the deadline comes. The
// progress must not put an older deadline back over the keeper's move: the
// keeper, believing the later one, would not move it again in time, and
// the reaper would retry the message while its call runs.
func TestProgressDoesNotMoveTheKeptDeadlineBack(t *testing.T) {
	c := &slowResumable{release: make(chan struct{})}
	st := &keeperFaultStore{gate: make(chan struct{}), held: make(chan struct{}, 1)}
	r := keeperRig(t, c, st)
	var open sync.Once
	release := func() { open.Do(func() { close(st.gate) }) }
	t.Cleanup(func() { close(c.release) })
	t.Cleanup(release) // first: the rig stops once the held write is let go
	r.start()
	m := r.send(herald.SendRequest{Route: "slow", Target: "chat-1", Text: "a long text"})
	select {
	case <-st.held: // the progress write waits on the store
	case <-time.After(patience):
		t.Fatal("no progress write")
	}
	r.clock.Advance(750 * time.Millisecond) // the keeper's time to move the deadline (t0+1 s) on
	time.Sleep(20 * time.Millisecond)       // let a keeper that does not wait write
	release()                               // the progress write lands
	tick := 0
	eventually(t, func() bool {
		got := r.get(m.ID)
		if got.ExternalID == "part-1" && got.Deadline.After(t0.Add(time.Second)) {
			return true
		}
		if tick++; tick%20 == 0 { // a keeper that waited for the write tries again
			r.clock.Advance(10 * time.Millisecond)
		}
		return false
	}, patience)
	stepPastDeadlines(t, r, m.ID, 3*time.Second, true)
}
