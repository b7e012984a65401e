package calin

import (
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	calinsim "github.com/heraldmq/herald/sim/calin"
)

// TestTwoNodesPollATaskOnce: two nodes share one Redis and one task is due
// a poll at a time. One node polls it each time (issue 12: "one node polls
// a task"): the vendor gets each due poll once, not once per node.
func TestTwoNodesPollATaskOnce(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V1, Latency: time.Hour}, clk, slowPolls(200*time.Millisecond))
	stores := sharedRedis(t, 2)
	ca, params := simCarrier(t, calinsim.V1, url, clk)
	cb, _ := simCarrier(t, calinsim.V1, url, clk)
	a := newRig(t, stores[0], clk, taskRoute(t, "meters", ca))
	b := newRig(t, stores[1], clk, taskRoute(t, "meters", cb))
	a.start()
	m := a.send(herald.SendRequest{Route: "meters", Target: "47001", Lane: "dcu-1", Params: params})
	a.settle()
	a.want(m.ID, herald.StatusDeliveredToNS, 1)
	b.start()
	b.settle()
	for range 3 { // the polls at 10, 20 and 35 s
		due := a.get(m.ID).DueAt
		clk.Advance(due.Sub(clk.Now()))
		a.settle()
		b.settle()
	}
	if n := len(calls(s, "RemoteReadingTask")); n != 3 {
		t.Fatalf("the vendor was polled %d times for 3 due polls of one task; want one node to poll each", n)
	}
}
