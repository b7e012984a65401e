package herald_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
)

// gatedPolls is a pull carrier whose polls wait until release is closed,
// counting how many run at once.
type gatedPolls struct {
	release chan struct{}
	sends   atomic.Int64

	mu            sync.Mutex
	running, most int
	polled        map[string]bool
}

func (c *gatedPolls) Path() herald.Path              { return herald.PathPull }
func (c *gatedPolls) Validate(*herald.Message) error { return nil }
func (c *gatedPolls) Send(context.Context, *herald.Message) (herald.SendResult, error) {
	return herald.SendResult{ExternalID: "task-" + string(rune('a'+c.sends.Add(1)))}, nil
}
func (c *gatedPolls) Poll(ctx context.Context, m *herald.Message) (herald.PollResult, map[string]string, error) {
	c.mu.Lock()
	c.running++
	c.most = max(c.most, c.running)
	c.polled[m.ID] = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.running--
		c.mu.Unlock()
	}()
	select {
	case <-c.release:
		return herald.PollSucceeded, nil, nil
	case <-ctx.Done():
		return herald.PollPending, nil, ctx.Err()
	}
}

// TestPollsRunApartFromTheReaperAndBounded: polls run apart from the
// reaper, at most the route's poll_concurrency at once: while 4 polls
// hang, the others wait, and the reaper retries another route's message
// whose accept timeout passed; once the polls answer, every task is
// polled.
func TestPollsRunApartFromTheReaperAndBounded(t *testing.T) {
	c := &gatedPolls{release: make(chan struct{}), polled: map[string]bool{}}
	p, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
	p.PollConcurrency = 4
	other, _ := herald.ProfilePolicy(herald.ProfileChannel)
	r := newRig(t, []herald.Route{{Name: "meters", Carrier: c, Policy: p}, {Name: "hooks", Carrier: &logCarrier{}, Policy: other}})
	abandoned := r.send(herald.SendRequest{Route: "hooks", Text: "claimed by a node that died"})
	if claimed, err := r.store.Claim(context.Background(), herald.Claim{Now: r.clock.Now(), Limit: 1, DefaultAccept: 20 * time.Second}); err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	var tasks []*herald.Message
	for i := range 12 {
		tasks = append(tasks, r.send(herald.SendRequest{Route: "meters", Target: "m", Lane: string(rune('a' + i%3)), Text: "reading"}))
	}
	r.start()
	r.settle()
	r.clock.Advance(21 * time.Second) // every first poll due; the abandoned claim's deadline (20 s) passed
	eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.running == 4
	}, patience)
	eventually(t, func() bool { return r.get(abandoned.ID).Status == herald.StatusToRetry }, patience)
	time.Sleep(50 * time.Millisecond) // would a fifth poll start?
	c.mu.Lock()
	most := c.most
	c.mu.Unlock()
	if most != 4 {
		t.Fatalf("%d polls at once, want poll_concurrency's 4", most)
	}
	close(c.release)
	for _, m := range tasks {
		eventually(t, func() bool { return r.get(m.ID).Status == herald.StatusDeliverySuccessful }, patience)
	}
	if c.most != 4 || len(c.polled) != len(tasks) {
		t.Errorf("%d polls at once at most, %d tasks polled; want 4 and %d", c.most, len(c.polled), len(tasks))
	}
}

// TestOrphanPollsDoNotStarveOthers: tasks of a route missing from the
// configuration, their polls due ahead of another route's and more than a
// node's poll slots, wait without holding back that route's polls.
func TestOrphanPollsDoNotStarveOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	fc := clock.NewFake(t0)
	p, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
	p.PollConcurrency = 2
	gone := &gatedPolls{release: make(chan struct{}), polled: map[string]bool{}}
	close(gone.release)
	kept := &gatedPolls{release: make(chan struct{}), polled: map[string]bool{}}
	close(kept.release)
	both := []herald.Route{{Name: "gone", Carrier: gone, Policy: p}, {Name: "meters", Carrier: kept, Policy: p}}

	r := rigAt(t, path, fc, both...)
	var orphans []*herald.Message
	for i := range 10 {
		orphans = append(orphans, r.send(herald.SendRequest{Route: "gone", Target: "m", Lane: string(rune('a' + i)), Text: "reading"}))
	}
	r.start()
	r.settle()
	for _, m := range orphans {
		if got := r.get(m.ID).Status; got != herald.StatusDeliveredToNS {
			t.Fatalf("task %s is %s, want DELIVERED_TO_NS", m.ID, got)
		}
	}
	r.shutDown() // the tasks accepted, their first polls not yet due

	r = rigAt(t, path, fc, both[1]) // "gone" removed
	fc.Advance(5 * time.Second)     // the orphans' polls are due first
	task := r.send(herald.SendRequest{Route: "meters", Target: "m", Text: "reading"})
	r.start()
	r.settle()
	for range 10 {
		r.advance(10 * time.Second)
	}
	if m := r.get(task.ID); m.Status != herald.StatusDeliverySuccessful {
		t.Errorf("the kept route's task is %s, want DELIVERY_SUCCESSFUL: its poll waited behind the orphans'", m.Status)
	}
	for _, m := range orphans {
		if got := r.get(m.ID); got.Status != herald.StatusDeliveredToNS || !got.DueAt.After(fc.Now()) {
			t.Errorf("orphan task %s: %s, next poll %v; want DELIVERED_TO_NS, polled later", m.ID, got.Status, got.DueAt)
		}
	}
}
