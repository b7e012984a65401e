package herald_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// taskCarrier is a pull carrier whose polls answer what it is told.
type taskCarrier struct {
	sends  atomic.Int64
	mu     sync.Mutex
	res    herald.PollResult
	result map[string]string
	err    error
}

var (
	_ herald.Poller = (*taskCarrier)(nil)
	_ herald.Poller = (*slowTaskCarrier)(nil)
	_ herald.Poller = (*scripted)(nil)
	_ herald.Poller = (*spanCarrier)(nil)
)

func (c *taskCarrier) Path() herald.Path              { return herald.PathPull }
func (c *taskCarrier) Validate(*herald.Message) error { return nil }
func (c *taskCarrier) Send(context.Context, *herald.Message) (herald.SendResult, error) {
	return herald.SendResult{ExternalID: "task-" + string(rune('0'+c.sends.Add(1)))}, nil
}
func (c *taskCarrier) Poll(context.Context, *herald.Message) (herald.PollResult, map[string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.res, c.result, c.err
}

func (c *taskCarrier) answer(res herald.PollResult, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res, c.err = res, err
}

// pullRig is a rig with one taskpoll route, "meters", of c.
func pullRig(t *testing.T, c *taskCarrier, adjust func(*herald.Config)) *rig {
	t.Helper()
	p, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
	if adjust == nil {
		adjust = func(*herald.Config) {}
	}
	return newRigWith(t, adjust, []herald.Route{{Name: "meters", Carrier: c, Policy: p}})
}

// TestFailedTaskRetriesWithTheCarriersReason: PollFailed with a reason
// sends the message to TO_RETRY with that reason; the retry sends a new
// task.
func TestFailedTaskRetriesWithTheCarriersReason(t *testing.T) {
	c := &taskCarrier{}
	r := pullRig(t, c, nil)
	r.start()
	m := r.send(herald.SendRequest{Route: "meters", Target: "m1", Text: "reading"})
	c.answer(herald.PollFailed, errors.New("meter offline"))
	r.advance(10 * time.Second)
	got := r.get(m.ID)
	if got.Status != herald.StatusToRetry || got.LastError != "meter offline" || !got.DueAt.Equal(r.clock.Now().Add(2*time.Second)) {
		t.Fatalf("failed task: %s, last error %q, due %v", got.Status, got.LastError, got.DueAt)
	}
	c.answer(herald.PollPending, nil)
	r.advance(2 * time.Second)
	if got := r.get(m.ID); got.Status != herald.StatusDeliveredToNS || got.Attempt != 2 || got.ExternalID != "task-2" {
		t.Fatalf("retry: %s at attempt %d, task %q", got.Status, got.Attempt, got.ExternalID)
	}
}

// TestPermanentTaskFailureFailsAtOnce: PollFailed with a permanent reason
// (a rejected token) fails the message without retry; so does PollFailed
// on the last attempt.
func TestPermanentTaskFailureFailsAtOnce(t *testing.T) {
	c := &taskCarrier{}
	r := pullRig(t, c, nil)
	r.start()
	m := r.send(herald.SendRequest{Route: "meters", Target: "m1", Text: "token"})
	c.answer(herald.PollFailed, herald.Permanent(errors.New("token rejected")))
	r.advance(10 * time.Second)
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveryFailed || got.LastError != "token rejected" || c.sends.Load() != 1 {
		t.Fatalf("rejected token: %s, last error %q, %d sends", got.Status, got.LastError, c.sends.Load())
	}
	r.advance(time.Hour)
	if c.sends.Load() != 1 {
		t.Fatalf("%d sends after a permanent failure", c.sends.Load())
	}
}

// TestTaskResultIsKept: what a poll reports beyond the task's end is the
// message's result, in its view and in the timeline entry that ends it.
func TestTaskResultIsKept(t *testing.T) {
	c := &taskCarrier{}
	r := pullRig(t, c, nil)
	r.start()
	m := r.send(herald.SendRequest{Route: "meters", Target: "m1", Text: "control"})
	c.mu.Lock()
	c.res, c.result = herald.PollSucceeded, map[string]string{"execution": "failure", "reason": "relay stuck"}
	c.mu.Unlock()
	r.advance(10 * time.Second)
	got := r.get(m.ID)
	last := got.Timeline[len(got.Timeline)-1]
	if got.Status != herald.StatusDeliverySuccessful || got.View().Result["execution"] != "failure" ||
		last.Reason != "task completed (execution: failure; reason: relay stuck)" {
		t.Fatalf("task ended with a result: %s, result %v, last entry %q", got.Status, got.Result, last.Reason)
	}
}

// TestPollErrorPollsAgainOnTheLadder: a poll that errs keeps the message
// DELIVERED_TO_NS with the error, and the next poll comes at its time.
func TestPollErrorPollsAgainOnTheLadder(t *testing.T) {
	c := &taskCarrier{}
	r := pullRig(t, c, nil)
	r.start()
	m := r.send(herald.SendRequest{Route: "meters", Target: "m1", Text: "reading"})
	c.answer(herald.PollPending, herald.Permanent(errors.New("vendor down")))
	r.advance(10 * time.Second)
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveredToNS || got.LastError != "vendor down" || !got.DueAt.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("poll error: %s, last error %q, next poll %v", got.Status, got.LastError, got.DueAt.Sub(t0))
	}
	c.answer(herald.PollSucceeded, nil)
	r.advance(10 * time.Second)
	if got := r.get(m.ID); got.Status != herald.StatusDeliverySuccessful {
		t.Fatalf("after the error: %s", got.Status)
	}
}

// TestPollsOfTasksAcceptedTogetherAreSpread: tasks accepted at one instant
// get first polls spread over 10–12 s (jitter), not one burst.
func TestPollsOfTasksAcceptedTogetherAreSpread(t *testing.T) {
	var n atomic.Int64
	c := &taskCarrier{}
	r := pullRig(t, c, func(cfg *herald.Config) {
		cfg.Random = func() float64 { return float64(n.Add(1)%10) / 10 }
	})
	var ids []string
	for i := range 10 {
		ids = append(ids, r.send(herald.SendRequest{Route: "meters", Target: "m", Text: "reading", Lane: string(rune('a' + i))}).ID)
	}
	r.start()
	r.settle()
	due := map[time.Time]bool{}
	for _, id := range ids {
		got := r.get(id)
		if got.Status != herald.StatusDeliveredToNS {
			t.Fatalf("%s: %s", id, got.Status)
		}
		if d := got.DueAt.Sub(t0); d < 10*time.Second || d >= 12*time.Second {
			t.Fatalf("first poll at %v, want within [10s, 12s)", d)
		}
		due[got.DueAt] = true
	}
	if len(due) < 8 {
		t.Errorf("10 tasks' first polls at %d distinct times: not spread", len(due))
	}
}

// TestExpiredTaskSaysItTimedOut: a pull task still running when its
// message expires fails "expired" with the reason it timed out.
func TestExpiredTaskSaysItTimedOut(t *testing.T) {
	c := &taskCarrier{}
	r := pullRig(t, c, nil)
	r.start()
	m := r.send(herald.SendRequest{Route: "meters", Target: "m1", Text: "reading"})
	for range 48 {
		r.advance(time.Hour)
	}
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveryFailed || !strings.HasPrefix(got.LastError, herald.TaskTimeoutReason+" (") {
		t.Fatalf("after 48 h: %s, last error %q", got.Status, got.LastError)
	}
	if last := got.Timeline[len(got.Timeline)-1]; last.Reason != "expired" || last.From != herald.StatusDeliveredToNS {
		t.Errorf("last timeline entry %+v, want DELIVERED_TO_NS -> failed, expired", last)
	}
}

// slowTaskCarrier is a taskCarrier whose polls of target "slow" wait
// until release is closed.
type slowTaskCarrier struct {
	taskCarrier
	release chan struct{}
	slow    atomic.Int64 // polls of "slow" started
}

func (c *slowTaskCarrier) Poll(ctx context.Context, m *herald.Message) (herald.PollResult, map[string]string, error) {
	if m.Target == "slow" {
		c.slow.Add(1)
		select {
		case <-c.release:
		case <-ctx.Done():
			return herald.PollPending, nil, ctx.Err()
		}
	}
	return c.taskCarrier.Poll(ctx, m)
}

// TestSlowPollHoldsBackNoOtherTask: while the vendor takes its time to
// answer one task's poll, the reaper polls the other tasks due, and they
// complete, rather than waiting behind it.
func TestSlowPollHoldsBackNoOtherTask(t *testing.T) {
	c := &slowTaskCarrier{release: make(chan struct{})}
	c.answer(herald.PollSucceeded, nil)
	p, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
	r := newRigWith(t, func(cfg *herald.Config) { cfg.Random = func() float64 { return 0 } },
		[]herald.Route{{Name: "meters", Carrier: c, Policy: p}})
	defer close(c.release)
	r.start()
	slow := r.send(herald.SendRequest{Route: "meters", Target: "slow", Text: "reading"})
	r.advance(time.Millisecond) // the slow task's poll is due first
	var others []*herald.Message
	for i := range 4 { // with the slow one, the lane's 5 (taskpoll's concurrency)
		others = append(others, r.send(herald.SendRequest{Route: "meters", Target: "m" + string(rune('0'+i)), Text: "reading"}))
	}
	r.settle()
	r.clock.Advance(20 * time.Second)
	eventually(t, func() bool { return c.slow.Load() > 0 }, patience)
	for _, m := range others {
		eventually(t, func() bool { return r.get(m.ID).Status == herald.StatusDeliverySuccessful }, patience)
	}
	if got := r.get(slow.ID); got.Status != herald.StatusDeliveredToNS {
		t.Errorf("the slow task, its poll unanswered: %s, want DELIVERED_TO_NS", got.Status)
	}
}
