package calin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	calinsim "github.com/heraldmq/herald/sim/calin"
)

// fakeCreate counts its calls and answers what it is told, after gate
// closes when there is one.
type fakeCreate struct {
	n    atomic.Int64
	gate chan struct{}
	id   string
	err  error
}

func (f *fakeCreate) create(ctx context.Context) (string, error) {
	f.n.Add(1)
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return "", &doubtError{ctx.Err()}
		}
	}
	return f.id, f.err
}

var meterTask = task{command: CommandReading, meter: "47001"}

// TestCreatorMarksBeforeCreating: the creating mark is made durable before
// the call; when that fails, nothing is created.
func TestCreatorMarksBeforeCreating(t *testing.T) {
	cr := newCreator("calin-v1", time.Minute)
	defer cr.close()
	f := &fakeCreate{id: "7"}
	m := &herald.Message{ID: "a", Attempt: 3}
	var seen []string
	res, err := cr.send(context.Background(), m, meterTask, func(id string) error {
		if f.n.Load() != 0 {
			t.Error("the create call ran before its mark")
		}
		seen = append(seen, id)
		return nil
	}, f.create)
	if err != nil || res.ExternalID != "7" || len(seen) != 1 || seen[0] != "calin:creating:3" {
		t.Fatalf("send: %v, %q, marks %q", err, res.ExternalID, seen)
	}
	lost := errors.New("lease lost")
	if _, err := cr.send(context.Background(), &herald.Message{ID: "b", Attempt: 1}, meterTask,
		func(string) error { return lost }, f.create); !errors.Is(err, lost) || f.n.Load() != 1 {
		t.Fatalf("mark failed: %v with %d creates, want the mark's error and no create", err, f.n.Load())
	}
}

// TestCreatorRetryInDoubtCreatesNothing: a retry finding the creating mark
// of an earlier attempt this process has no record of fails permanently
// and creates nothing; a replay (attempts reset) creates.
func TestCreatorRetryInDoubtCreatesNothing(t *testing.T) {
	cr := newCreator("calin-v1", time.Minute)
	defer cr.close()
	f := &fakeCreate{id: "7"}
	retry := &herald.Message{ID: "a", Attempt: 2, ExternalID: "calin:creating:1"}
	_, err := cr.send(context.Background(), retry, meterTask, func(string) error { return nil }, f.create)
	if !isPermanent(err) || !strings.Contains(err.Error(), "may have created a task") || f.n.Load() != 0 {
		t.Fatalf("retry in doubt: %v with %d creates", err, f.n.Load())
	}
	replay := &herald.Message{ID: "a", Attempt: 1, ExternalID: "calin:creating:4"}
	if res, err := cr.send(context.Background(), replay, meterTask, func(string) error { return nil }, f.create); err != nil || res.ExternalID != "7" {
		t.Fatalf("replay: %v, %q", err, res.ExternalID)
	}
	for _, ext := range []string{"calin:not-created:1", "1005"} { // nothing created, or a task that failed
		if _, err := cr.send(context.Background(), &herald.Message{ID: "c" + ext, Attempt: 2, ExternalID: ext}, meterTask,
			func(string) error { return nil }, f.create); err != nil {
			t.Fatalf("retry after %q: %v", ext, err)
		}
	}
	if f.n.Load() != 3 {
		t.Errorf("%d creates, want 3", f.n.Load())
	}
}

// TestCreatorSlowCallIsTakenByTheRetry: a call outliving its send (herald
// stopping) goes on; the retry waits for it and takes its task, creating
// none.
func TestCreatorSlowCallIsTakenByTheRetry(t *testing.T) {
	cr := newCreator("calin-v1", time.Minute)
	defer cr.close()
	f := &fakeCreate{id: "9", gate: make(chan struct{})}
	m := &herald.Message{ID: "a", Attempt: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := cr.send(ctx, m, meterTask, func(id string) error { m.ExternalID = id; return nil }, f.create)
	if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "the send ended before the create-task call answered") {
		t.Fatalf("send cut short: %v, want a transient error", err)
	}
	m.Attempt = 2
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := cr.send(ctx2, m, meterTask, func(string) error { t.Error("a mark while the call runs"); return nil }, f.create); err == nil || isPermanent(err) {
		t.Fatalf("retry while the call runs: %v, want a transient wait", err)
	}
	close(f.gate)
	m.Attempt = 3
	res, err := cr.send(context.Background(), m, meterTask, func(string) error { t.Error("a mark for a taken task"); return nil }, f.create)
	if err != nil || res.ExternalID != "9" || f.n.Load() != 1 {
		t.Fatalf("retry after the call: %v, %q, %d creates; want the task 9 and one create", err, res.ExternalID, f.n.Load())
	}
}

// TestCreatorCallInDoubtFailsAtOnce: a call that ends in doubt fails the
// message permanently, and so does its retry.
func TestCreatorCallInDoubtFailsAtOnce(t *testing.T) {
	cr := newCreator("calin-v1", time.Minute)
	defer cr.close()
	f := &fakeCreate{err: &doubtError{errors.New("connection reset")}}
	m := &herald.Message{ID: "a", Attempt: 1}
	_, err := cr.send(context.Background(), m, meterTask, func(id string) error { m.ExternalID = id; return nil }, f.create)
	if !isPermanent(err) || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("call in doubt: %v", err)
	}
	m.Attempt = 2
	if _, err := cr.send(context.Background(), m, meterTask, func(string) error { return nil }, f.create); !isPermanent(err) || f.n.Load() != 1 {
		t.Fatalf("its retry: %v with %d creates", err, f.n.Load())
	}
}

// TestSlowCreateOneTaskDeliveredOnce: over real HTTP, the simulator
// answers create calls after longer than the route's accept timeout. The
// send waits for the call, bound by the create timeout and not by the
// accept timeout, and takes its task: the simulator holds one task, and
// the message is delivered once, at its first attempt.
func TestSlowCreateOneTaskDeliveredOnce(t *testing.T) {
	for _, version := range []calinsim.API{calinsim.V1, calinsim.V2} {
		t.Run(string(version), func(t *testing.T) {
			clk := clock.NewFake(t0)
			s, url := startSim(t, calinsim.Config{API: version, Latency: 5 * time.Second, SlowCreate: 400 * time.Millisecond}, clk, nil)
			c, params := simCarrier(t, version, url, clk)
			r := newRig(t, stores()[0].open(t), clk, taskRoute(t, "meters", c, func(p *herald.Policy) { p.Timeouts.Accept = 100 * time.Millisecond }))
			r.start()
			m := r.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: params})
			waitCreated(t, s)
			r.settle()
			got := r.want(m.ID, herald.StatusDeliveredToNS, 1)
			if tasks := s.Tasks(); len(tasks) != 1 || got.ExternalID != tasks[0].ID {
				t.Fatalf("external id %q, tasks %+v: want the one task", got.ExternalID, tasks)
			}
			r.advance(10 * time.Second) // the first poll; the task is done
			r.want(m.ID, herald.StatusDeliverySuccessful, 1)
			if n := len(s.Tasks()); n != 1 || len(createCalls(s)) != 1 {
				t.Fatalf("%d tasks, %d create calls; want 1 and 1", n, len(createCalls(s)))
			}
		})
	}
}

// TestKilledDuringSlowCreateFailsInDoubt: the node sending a message dies
// while the simulator holds the create call (the task exists). Another
// node retries it after the accept deadline: it cannot know whether a
// task exists, so the message fails, saying so, and no second task is
// made. A replay then creates the task afresh and delivers it.
func TestKilledDuringSlowCreateFailsInDoubt(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) herald.Store) {
		clk := clock.NewFake(t0)
		created := make(chan calinsim.Task, 4)
		var hold atomic.Bool
		hold.Store(true)
		s, url := startSim(t, calinsim.Config{API: calinsim.V1, Latency: 5 * time.Second,
			OnCreate: func(tk calinsim.Task) { created <- tk }}, clk, holdCreates(&hold))
		st := open(t)
		a, params := simCarrier(t, calinsim.V1, url, clk)
		first := newRig(t, st, clk, taskRoute(t, "meters", a))
		first.start()
		m := first.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: params})
		select {
		case <-created:
		case <-time.After(patience):
			t.Fatal("no task created")
		}
		first.kill()
		a.Close() // the process is gone: its call with it
		first.want(m.ID, herald.StatusSentToNS, 1)

		b, _ := simCarrier(t, calinsim.V1, url, clk)
		second := newRig(t, st, clk, taskRoute(t, "meters", b))
		second.start()
		second.advance(20 * time.Second) // the accept deadline: retried after 2 s
		second.advance(2 * time.Second)
		got := second.want(m.ID, herald.StatusDeliveryFailed, 2)
		if !strings.Contains(got.LastError, "may have created a task") || got.ExternalID != "calin:creating:1" {
			t.Fatalf("last error %q, external id %q", got.LastError, got.ExternalID)
		}
		if n := len(s.Tasks()); n != 1 {
			t.Fatalf("%d tasks, want 1", n)
		}

		hold.Store(false) // the replay's create answers at once
		if _, err := second.eng.Replay(context.Background(), "acme", m.ID); err != nil {
			t.Fatal(err)
		}
		second.settle()
		second.want(m.ID, herald.StatusDeliveredToNS, 1)
		second.advance(10 * time.Second)
		second.want(m.ID, herald.StatusDeliverySuccessful, 1)
		if n := len(s.Tasks()); n != 2 {
			t.Fatalf("%d tasks after the replay, want 2", n)
		}
	})
}

// simCarrier returns a carrier of version for the simulator at url, and
// the params of a credit reading.
func simCarrier(t *testing.T, version calinsim.API, url string, clk *clock.Fake) (interface {
	herald.Carrier
	Close() error
}, map[string]string) {
	t.Helper()
	return simCarrierRetrying(t, version, url, clk, false)
}

// simCarrierRetrying is simCarrier with RetryFailedTasks set to retry.
func simCarrierRetrying(t *testing.T, version calinsim.API, url string, clk *clock.Fake, retry bool) (interface {
	herald.Carrier
	Close() error
}, map[string]string) {
	t.Helper()
	if version == calinsim.V1 {
		return newV1(t, url, clk, func(c *V1Config) { c.RetryFailedTasks = retry }),
			map[string]string{ParamCommand: CommandReading, ParamDataItem: "Current Credit Register"}
	}
	return newV2(t, url, clk, func(c *V2Config) { c.RetryFailedTasks = retry }),
		map[string]string{ParamCommand: CommandReading, ParamProtocolID: "39"}
}

// createCalls returns the simulator's create calls.
// waitCreated waits until the simulator has answered one create call, 200.
func waitCreated(t *testing.T, s *calinsim.Sim) {
	t.Helper()
	eventually(t, "the slow create answered", func() bool {
		cs := createCalls(s)
		return len(cs) == 1 && cs[0].Status == 200
	})
}

func createCalls(s *calinsim.Sim) []calinsim.Call {
	var out []calinsim.Call
	for _, c := range s.Calls() {
		p := strings.ToLower(c.Path)
		if strings.Contains(p, "/create") || (strings.HasPrefix(p, "/comm_remote") && !strings.HasSuffix(p, "task")) {
			out = append(out, c)
		}
	}
	return out
}

// holdCreates wraps a simulator: while hold is set, a create call's answer
// is held, after the simulator made the task, until its client goes away.
func holdCreates(hold *atomic.Bool) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := strings.ToLower(r.URL.Path)
			isCreate := strings.Contains(p, "/create") || (strings.HasPrefix(p, "/comm_remote") && !strings.HasSuffix(p, "task"))
			if !isCreate || !hold.Load() {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			<-r.Context().Done()
		})
	}
}
