package calin

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	calinsim "github.com/heraldmq/herald/sim/calin"
)

// e2e is an engine with one taskpoll route, "meters", whose carrier talks
// over real HTTP to a simulator of the API version, on one of the stores.
type e2e struct {
	*rig
	sim    *calinsim.Sim
	params map[string]string // a credit reading
}

// eachAPIAndStore runs f for V1 and V2 on each store, with a simulator
// configured by cfg (its API set) and wrapped by wrap.
func eachAPIAndStore(t *testing.T, cfg calinsim.Config, wrap func(http.Handler) http.Handler, f func(t *testing.T, e *e2e)) {
	eachAPIAndStoreRetrying(t, cfg, wrap, false, f)
}

// eachAPIAndStoreRetrying is eachAPIAndStore with carriers whose
// RetryFailedTasks is retry.
func eachAPIAndStoreRetrying(t *testing.T, cfg calinsim.Config, wrap func(http.Handler) http.Handler, retry bool, f func(t *testing.T, e *e2e)) {
	for _, version := range []calinsim.API{calinsim.V1, calinsim.V2} {
		t.Run(string(version), func(t *testing.T) {
			eachStore(t, func(t *testing.T, open func(*testing.T) herald.Store) {
				clk := clock.NewFake(t0)
				c := cfg
				c.API = version
				s, url := startSim(t, c, clk, wrap)
				carrier, params := simCarrierRetrying(t, version, url, clk, retry)
				e := &e2e{rig: newRig(t, open(t), clk, taskRoute(t, "meters", carrier)), sim: s, params: params}
				f(t, e)
			})
		})
	}
}

// token returns the params of a token delivery for the version.
func (e *e2e) token() map[string]string {
	return map[string]string{ParamCommand: CommandToken, ParamToken: "12345678901234567890"}
}

// pollTimes returns the times of the simulator's polls, since t0.
func (e *e2e) pollTimes() []time.Duration {
	var out []time.Duration
	for _, c := range e.sim.Calls() {
		if p := strings.ToLower(c.Path); strings.HasSuffix(p, "task") && !strings.Contains(p, "/create") {
			out = append(out, c.At.Sub(t0))
		}
	}
	return out
}

// TestEndToEndSuccessOnTheLadder: a reading is accepted with the task id
// as its external id, polled on the ladder (10 s after acceptance, then
// 10 s under 20 s of age, 15 s under 50 s, 20 s under 90 s, 30 s after)
// while pending, and delivered when the task is done.
func TestEndToEndSuccessOnTheLadder(t *testing.T) {
	eachAPIAndStore(t, calinsim.Config{Latency: 200 * time.Second}, nil, func(t *testing.T, e *e2e) {
		e.start()
		m := e.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: e.params})
		e.settle()
		got := e.want(m.ID, herald.StatusDeliveredToNS, 1)
		tasks := e.sim.Tasks()
		if len(tasks) != 1 || got.ExternalID != tasks[0].ID || !got.DueAt.Equal(t0.Add(10*time.Second)) {
			t.Fatalf("accepted: external id %q (tasks %+v), first poll at %v", got.ExternalID, tasks, got.DueAt.Sub(t0))
		}
		want := []time.Duration{10, 20, 35, 50, 70, 90, 120, 150, 180, 210}
		for i, at := range want {
			prev := time.Duration(0)
			if i > 0 {
				prev = want[i-1]
			}
			e.advance((at - prev) * time.Second)
		}
		e.want(m.ID, herald.StatusDeliverySuccessful, 1)
		polls := e.pollTimes()
		if len(polls) != len(want) {
			t.Fatalf("polls at %v, want at %v s", polls, want)
		}
		for i := range want {
			if polls[i] != want[i]*time.Second {
				t.Fatalf("polls at %v, want at %v s", polls, want)
			}
		}
	})
}

// TestEndToEndPollLadderBoundariesInMilliseconds: the first poll is 10 s
// after acceptance; the next waits 10 s at an age of 19,999 ms and 15 s at
// 20,000 ms.
func TestEndToEndPollLadderBoundariesInMilliseconds(t *testing.T) {
	for _, c := range []struct {
		accepted time.Duration   // the message waited this long before it was sent
		polls    []time.Duration // since creation
	}{
		{9_999 * time.Millisecond, []time.Duration{19_999 * time.Millisecond, 29_999 * time.Millisecond, 44_999 * time.Millisecond}},
		{10_000 * time.Millisecond, []time.Duration{20_000 * time.Millisecond, 35_000 * time.Millisecond, 50_000 * time.Millisecond}},
		{39_999 * time.Millisecond, []time.Duration{49_999 * time.Millisecond, 64_999 * time.Millisecond, 84_999 * time.Millisecond}},
		{80_000 * time.Millisecond, []time.Duration{90_000 * time.Millisecond, 120_000 * time.Millisecond}},
	} {
		t.Run(c.accepted.String(), func(t *testing.T) {
			clk := clock.NewFake(t0)
			s, url := startSim(t, calinsim.Config{API: calinsim.V1, Latency: time.Hour}, clk, nil)
			carrier, params := simCarrier(t, calinsim.V1, url, clk)
			r := newRig(t, stores()[0].open(t), clk, taskRoute(t, "meters", carrier))
			r.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: params})
			clk.Advance(c.accepted)
			r.start()
			r.settle()
			at := c.accepted
			for _, p := range c.polls {
				r.advance(p - at)
				at = p
			}
			e := &e2e{rig: r, sim: s}
			got := e.pollTimes()
			if len(got) != len(c.polls) {
				t.Fatalf("polls at %v, want %v", got, c.polls)
			}
			for i := range got {
				if got[i] != c.polls[i] {
					t.Fatalf("polls at %v, want %v", got, c.polls)
				}
			}
		})
	}
}

// TestEndToEndFailedExecutionIsDelivered: a task that ends with the
// meter's failure to carry the command out (V1 Result.Status False, V2
// status 2) delivers the message, with the execution's failure in its
// result, its timeline and its outcome; one task, no retry.
func TestEndToEndFailedExecutionIsDelivered(t *testing.T) {
	eachAPIAndStore(t, calinsim.Config{FailRate: 1, Latency: 5 * time.Second}, nil, func(t *testing.T, e *e2e) {
		e.start()
		m := e.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: e.params})
		e.advance(10 * time.Second)
		got := e.want(m.ID, herald.StatusDeliverySuccessful, 1)
		last := got.Timeline[len(got.Timeline)-1]
		if v := got.View(); v.Result[ResultExecution] != ExecFailure || v.Result[ResultReason] != reasonExecutionFailed ||
			!strings.Contains(last.Reason, "execution: failure") {
			t.Fatalf("result %v, last timeline entry %q; want the execution's failure", v.Result, last.Reason)
		}
		e.advance(time.Hour)
		if n := len(e.sim.Tasks()); n != 1 {
			t.Fatalf("%d tasks, want exactly 1", n)
		}
	})
}

// TestEndToEndSucceededExecution: a task done delivers its message with
// the execution's success as its result.
func TestEndToEndSucceededExecution(t *testing.T) {
	eachAPIAndStore(t, calinsim.Config{Latency: 5 * time.Second}, nil, func(t *testing.T, e *e2e) {
		e.start()
		m := e.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: e.params})
		e.advance(10 * time.Second)
		if got := e.want(m.ID, herald.StatusDeliverySuccessful, 1); got.Result[ResultExecution] != ExecSuccess {
			t.Fatalf("result %v, want the execution's success", got.Result)
		}
	})
}

// TestEndToEndRetryFailedTasks: with RetryFailedTasks, a task that fails
// sends the message to TO_RETRY with the vendor's reason; the retry
// creates a new task.
func TestEndToEndRetryFailedTasks(t *testing.T) {
	eachAPIAndStoreRetrying(t, calinsim.Config{FailRate: 1, Latency: 5 * time.Second}, nil, true, func(t *testing.T, e *e2e) {
		e.start()
		m := e.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: e.params})
		e.advance(10 * time.Second)
		got := e.want(m.ID, herald.StatusToRetry, 1)
		if !strings.Contains(got.LastError, "the task failed") || !strings.Contains(got.LastError, got.ExternalID) {
			t.Fatalf("last error %q, external id %q", got.LastError, got.ExternalID)
		}
		e.advance(2 * time.Second) // the first backoff
		got = e.want(m.ID, herald.StatusDeliveredToNS, 2)
		if tasks := e.sim.Tasks(); len(tasks) != 2 || got.ExternalID != tasks[1].ID {
			t.Fatalf("tasks %+v, external id %q: want a second task", tasks, got.ExternalID)
		}
	})
}

// TestEndToEndRejectedToken: a token the meter rejects on V1 (ResultCode
// 99, no task) ends DELIVERY_FAILED at its first poll, without retry, in
// both modes; on V2 (status 3) it is the execution's failure, delivered,
// unless failed tasks are retried: then it fails at once too.
func TestEndToEndRejectedToken(t *testing.T) {
	for _, retry := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "retry_failed_tasks"}[retry], func(t *testing.T) {
			eachAPIAndStoreRetrying(t, calinsim.Config{TokenRejectRate: 1}, nil, retry, func(t *testing.T, e *e2e) {
				e.start()
				m := e.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: e.token()})
				e.advance(10 * time.Second)
				if e.sim.API() == calinsim.V2 && !retry {
					if got := e.want(m.ID, herald.StatusDeliverySuccessful, 1); got.Result[ResultReason] != reasonTokenRejected {
						t.Fatalf("result %v, want the token's rejection", got.Result)
					}
				} else if got := e.want(m.ID, herald.StatusDeliveryFailed, 1); !strings.Contains(got.LastError, "rejected") {
					t.Fatalf("last error %q", got.LastError)
				}
				e.advance(time.Hour)
				if n := len(e.sim.Tasks()); n != 1 {
					t.Fatalf("%d tasks, want 1", n)
				}
			})
		})
	}
}

// TestEndToEndLostTaskFailsAtOnce: a poll answered that the task does not
// exist fails the message at once with the vendor's text, instead of
// polling it for 48 h; a replay creates the task afresh.
func TestEndToEndLostTaskFailsAtOnce(t *testing.T) {
	eachAPIAndStore(t, calinsim.Config{Latency: 5 * time.Second}, nil, func(t *testing.T, e *e2e) {
		e.start()
		m := e.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: e.params})
		e.settle()
		got := e.want(m.ID, herald.StatusDeliveredToNS, 1)
		if !e.sim.Forget(got.ExternalID) {
			t.Fatalf("the simulator has no task %q", got.ExternalID)
		}
		e.advance(10 * time.Second)
		got = e.want(m.ID, herald.StatusDeliveryFailed, 1)
		if want := "task " + got.ExternalID + " does not exist"; !strings.Contains(got.LastError, want) {
			t.Fatalf("last error %q, want the vendor's %q", got.LastError, want)
		}
		e.advance(time.Hour)
		if n := len(e.sim.Tasks()); n != 1 || len(e.pollTimes()) != 1 {
			t.Fatalf("%d tasks, %d polls; want 1 and 1", n, len(e.pollTimes()))
		}
		if _, err := e.eng.Replay(context.Background(), "acme", m.ID); err != nil {
			t.Fatal(err)
		}
		e.advance(10 * time.Second)
		if got := e.want(m.ID, herald.StatusDeliverySuccessful, 1); len(e.sim.Tasks()) != 2 {
			t.Fatalf("after a replay: %s with %d tasks, want a second task", got.Status, len(e.sim.Tasks()))
		}
	})
}

// TestEndToEndPollErrorMovesTheScheduleOn: a poll answered 500 leaves the
// message DELIVERED_TO_NS with the error and the next poll scheduled; the
// next poll finds the task done.
func TestEndToEndPollErrorMovesTheScheduleOn(t *testing.T) {
	var failPolls atomic.Int64
	failPolls.Store(1)
	wrap := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := strings.ToLower(r.URL.Path)
			if strings.HasSuffix(p, "task") && !strings.Contains(p, "/create") && failPolls.Add(-1) >= 0 {
				http.Error(w, "<html><body>500 upstream exploded</body></html>", http.StatusInternalServerError)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	eachAPIAndStore(t, calinsim.Config{Latency: 5 * time.Second}, wrap, func(t *testing.T, e *e2e) {
		failPolls.Store(1)
		e.start()
		m := e.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: e.params})
		e.advance(10 * time.Second)
		got := e.want(m.ID, herald.StatusDeliveredToNS, 1)
		if !strings.Contains(got.LastError, "500 Internal Server Error") || !got.DueAt.Equal(t0.Add(20*time.Second)) {
			t.Fatalf("after a failed poll: last error %q, next poll at %v", got.LastError, got.DueAt.Sub(t0))
		}
		e.advance(10 * time.Second)
		e.want(m.ID, herald.StatusDeliverySuccessful, 1)
	})
}

// TestEndToEndTaskTimesOutAt48Hours: a task still pending at 48 h of age
// fails "Timed out waiting for remote task completion", without retry.
func TestEndToEndTaskTimesOutAt48Hours(t *testing.T) {
	eachAPIAndStore(t, calinsim.Config{Latency: 100 * time.Hour}, nil, func(t *testing.T, e *e2e) {
		e.start()
		m := e.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: e.params})
		e.settle()
		for range 47 {
			e.advance(time.Hour)
		}
		e.want(m.ID, herald.StatusDeliveredToNS, 1)
		e.advance(time.Hour)
		got := e.want(m.ID, herald.StatusDeliveryFailed, 1)
		if !strings.HasPrefix(got.LastError, herald.TaskTimeoutReason) {
			t.Fatalf("last error %q", got.LastError)
		}
		e.advance(time.Hour)
		if n := len(e.sim.Tasks()); n != 1 {
			t.Fatalf("%d tasks, want 1", n)
		}
	})
}

// TestEndToEndFivePerDCU: six tasks for one DCU: five run at once, the
// sixth waits and says why (lane_concurrency); another DCU is not held up.
func TestEndToEndFivePerDCU(t *testing.T) {
	eachAPIAndStore(t, calinsim.Config{Latency: 15 * time.Second}, nil, func(t *testing.T, e *e2e) {
		e.start()
		var ms []*herald.Message
		for i := range 6 {
			ms = append(ms, e.send(herald.SendRequest{Route: "meters", Target: "4700" + string(rune('1'+i)), Lane: "dcu-1", Params: e.params}))
		}
		other := e.send(herald.SendRequest{Route: "meters", Target: "48001", Lane: "dcu-2", Params: e.params})
		e.settle()
		for _, m := range ms[:5] {
			e.want(m.ID, herald.StatusDeliveredToNS, 1)
		}
		e.want(other.ID, herald.StatusDeliveredToNS, 1)
		e.want(ms[5].ID, herald.StatusQueued, 0)
		ex, err := e.eng.Explain(context.Background(), "acme", ms[5].ID)
		if err != nil || ex.Reason != "lane_concurrency" {
			t.Fatalf("explain the sixth: %+v, %v; want lane_concurrency", ex, err)
		}
		e.advance(10 * time.Second) // first polls: pending (done at 15 s)
		e.want(ms[5].ID, herald.StatusQueued, 0)
		e.advance(10 * time.Second) // done
		for _, m := range ms[:5] {
			e.want(m.ID, herald.StatusDeliverySuccessful, 1)
		}
		e.advance(time.Second) // the reaper's next turn wakes the dispatcher: the sixth goes
		e.want(ms[5].ID, herald.StatusDeliveredToNS, 1)
	})
}

// TestLaneIsRequiredUnlessTheRouteHasOne: a calin message must name its
// DCU as its lane (400 naming lane, nothing stored), unless its route
// has a default lane, which it then takes.
func TestLaneIsRequiredUnlessTheRouteHasOne(t *testing.T) {
	for _, version := range []calinsim.API{calinsim.V1, calinsim.V2} {
		t.Run(string(version), func(t *testing.T) {
			clk := clock.NewFake(t0)
			_, url := startSim(t, calinsim.Config{API: version}, clk, nil)
			carrier, params := simCarrier(t, version, url, clk)
			withLane := taskRoute(t, "dcu-route", carrier)
			withLane.Lane = "dcu-7"
			r := newRig(t, stores()[0].open(t), clk, taskRoute(t, "meters", carrier), withLane)
			_, _, err := r.eng.Send(context.Background(), "acme", herald.SendRequest{Route: "meters", Target: "47001", Text: "x", Params: params})
			var invalid *herald.InvalidError
			if !errors.As(err, &invalid) || invalid.Field != "lane" || !strings.Contains(err.Error(), "DCU") {
				t.Fatalf("a message without a lane: %v, want an invalid lane naming the DCU", err)
			}
			if msgs, _, err := r.eng.List(context.Background(), "acme", herald.Query{}); err != nil || len(msgs) != 0 {
				t.Fatalf("stored %v, %v; want nothing", msgs, err)
			}
			if m := r.send(herald.SendRequest{Route: "dcu-route", Target: "47001", Params: params}); m.Lane != "dcu-7" {
				t.Fatalf("lane %q, want the route's dcu-7", m.Lane)
			}
		})
	}
}
