package calin

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	"github.com/heraldmq/herald/internal/redistest"
	calinsim "github.com/heraldmq/herald/sim/calin"
	"github.com/heraldmq/herald/store/redis"
)

// sharedRedis returns n stores on one private redis-server under one key
// prefix: n nodes of one herald deployment.
func sharedRedis(t *testing.T, n int) []herald.Store {
	t.Helper()
	srv := redistest.Start(t)
	prefix := redisPrefixes.Add(1)
	var out []herald.Store
	for range n {
		st, err := redis.Open(fmt.Sprintf("%s?prefix=calin%d&lane_clock=caller", srv.URL(), prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out = append(out, st)
	}
	return out
}

// TestSlowCreateOnTwoNodesOneTaskDeliveredOnce: two nodes share one Redis.
// Node A sends a message whose create call outlives the accept timeout;
// the vendor creates the task and answers A's call a little later. Node
// B, running beside it, must not retry the message meanwhile: the one
// task is the message's, delivered once.
func TestSlowCreateOnTwoNodesOneTaskDeliveredOnce(t *testing.T) {
	for _, version := range []calinsim.API{calinsim.V1, calinsim.V2} {
		t.Run(string(version), func(t *testing.T) {
			clk := clock.NewFake(t0)
			s, url := startSim(t, calinsim.Config{API: version, Latency: 5 * time.Second, SlowCreate: 400 * time.Millisecond}, clk, nil)
			stores := sharedRedis(t, 2)
			accept := func(p *herald.Policy) { p.Timeouts.Accept = 100 * time.Millisecond }
			ca, params := simCarrier(t, version, url, clk)
			cb, _ := simCarrier(t, version, url, clk)
			a := newRig(t, stores[0], clk, taskRoute(t, "meters", ca, accept))
			b := newRig(t, stores[1], clk, taskRoute(t, "meters", cb, accept))
			a.start() // B starts once A has claimed the message
			m := a.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: params})
			waitCreated(t, s)
			a.settle()
			b.start()
			b.settle()
			// Node A's dispatcher is taken out of the race for the retry
			// (its engine stops; the process and its carrier live on):
			// with both running, either node may claim it.
			a.stop()
			b.advance(2 * time.Second) // the retry's backoff, on node B
			got := b.get(m.ID)
			if got.Status == herald.StatusDeliveryFailed {
				t.Fatalf("the vendor holds %d task(s) for the message (node A's create succeeded), yet node B moved it to %s (last error %q)",
					len(s.Tasks()), got.Status, got.LastError)
			}
			b.advance(15 * time.Second)
			got = b.get(m.ID)
			if tasks := s.Tasks(); got.Status != herald.StatusDeliverySuccessful || len(tasks) != 1 || got.ExternalID != tasks[0].ID {
				t.Fatalf("message %s, external id %q, %d tasks; want DELIVERY_SUCCESSFUL with the one task", got.Status, got.ExternalID, len(tasks))
			}
		})
	}
}

// TestSlowCreateAnsweredBeforeARestartIsKept: a create call outlives the
// accept timeout; the vendor answers it with the task id a moment later,
// while herald runs, and herald is then restarted (gracefully). The task
// id herald was given must be the message's, durably: after the restart
// the message is delivered, not failed "in doubt".
func TestSlowCreateAnsweredBeforeARestartIsKept(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) herald.Store) {
		clk := clock.NewFake(t0)
		s, url := startSim(t, calinsim.Config{API: calinsim.V1, Latency: 5 * time.Second, SlowCreate: 400 * time.Millisecond}, clk, nil)
		st := open(t)
		accept := func(p *herald.Policy) { p.Timeouts.Accept = 100 * time.Millisecond }
		a, params := simCarrier(t, calinsim.V1, url, clk)
		first := newRig(t, st, clk, taskRoute(t, "meters", a, accept))
		first.start()
		m := first.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: params})
		waitCreated(t, s)
		first.settle()
		first.stop() // a graceful restart: no send in flight
		a.Close()

		b, _ := simCarrier(t, calinsim.V1, url, clk)
		second := newRig(t, st, clk, taskRoute(t, "meters", b, accept))
		second.start()
		second.advance(2 * time.Second) // the retry's backoff
		got := second.get(m.ID)
		if got.Status == herald.StatusDeliveryFailed {
			t.Fatalf("herald got task %s's id before the restart, yet after it the message is %s: %q",
				s.Tasks()[0].ID, got.Status, got.LastError)
		}
		second.advance(15 * time.Second)
		got = second.get(m.ID)
		if tasks := s.Tasks(); got.Status != herald.StatusDeliverySuccessful || len(tasks) != 1 || got.ExternalID != tasks[0].ID {
			t.Fatalf("message %s, external id %q, %d tasks; want DELIVERY_SUCCESSFUL with the one task", got.Status, got.ExternalID, len(tasks))
		}
	})
}

// TestLastAttemptSlowCreateIsNotForgotten: a route allows one attempt; its
// create call outlives the accept timeout, and the vendor creates the
// task. That attempt must end with the task, delivered: failing it would
// leave the meter running a command herald says failed, and a replay
// would create a second task.
func TestLastAttemptSlowCreateIsNotForgotten(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V1, Latency: 5 * time.Second, SlowCreate: 400 * time.Millisecond}, clk, nil)
	c, params := simCarrier(t, calinsim.V1, url, clk)
	r := newRig(t, stores()[0].open(t), clk, taskRoute(t, "meters", c, func(p *herald.Policy) {
		p.Timeouts.Accept = 100 * time.Millisecond
		p.MaxAttempts = 1
	}))
	r.start()
	m := r.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: params})
	waitCreated(t, s)
	r.settle()
	got := r.get(m.ID)
	if got.Status == herald.StatusDeliveryFailed {
		t.Errorf("the vendor created task %s and will run it, yet the message is %s: last error %q",
			s.Tasks()[0].ID, got.Status, got.LastError)
		if _, err := r.eng.Replay(context.Background(), "acme", m.ID); err != nil {
			t.Fatal(err)
		}
		r.settle()
		r.advance(10 * time.Second)
	}
	r.advance(15 * time.Second)
	got = r.get(m.ID)
	if n := len(s.MeterTasks("47001", "")); n != 1 || got.Status != herald.StatusDeliverySuccessful {
		t.Fatalf("%d tasks for meter 47001, message %s; want one task and DELIVERY_SUCCESSFUL", n, got.Status)
	}
}

// slowPolls wraps a simulator so that each poll takes d of wall time.
func slowPolls(d time.Duration) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := strings.ToLower(r.URL.Path)
			if strings.HasSuffix(p, "task") && !strings.Contains(p, "/create") {
				time.Sleep(d)
			}
			h.ServeHTTP(w, r)
		})
	}
}

// TestSlowCreatesKeepTheDCUAtFive: six messages for one DCU, whose create
// calls outlive the accept timeout. A send whose create call still runs
// holds its DCU slot, so the DCU never has more than the taskpoll
// profile's five tasks at a time (a DCU carries out at most 5 tasks at
// once).
func TestSlowCreatesKeepTheDCUAtFive(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V1, Latency: time.Hour, SlowCreate: 400 * time.Millisecond}, clk, nil)
	c, params := simCarrier(t, calinsim.V1, url, clk)
	r := newRig(t, stores()[0].open(t), clk, taskRoute(t, "meters", c, func(p *herald.Policy) { p.Timeouts.Accept = 100 * time.Millisecond }))
	r.start()
	for i := range 6 {
		r.send(herald.SendRequest{Route: "meters", Target: fmt.Sprintf("4700%d", i+1), Lane: "dcu-1", Params: params})
	}
	time.Sleep(time.Second) // every create call answered
	r.settle()
	if n := len(s.Tasks()); n > 5 {
		t.Fatalf("%d tasks running on DCU dcu-1 at once (none has ended: latency 1 h); want at most 5", n)
	}
}
