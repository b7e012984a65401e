package metrics

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	"github.com/heraldmq/herald/store/sqlite"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// pushCarrier accepts every message and never confirms it: an accepted
// message stays in flight (DELIVERED_TO_NS).
type pushCarrier struct{}

func (pushCarrier) Path() herald.Path              { return herald.PathPush }
func (pushCarrier) Validate(*herald.Message) error { return nil }
func (pushCarrier) Send(context.Context, *herald.Message) (herald.SendResult, error) {
	return herald.SendResult{}, nil
}

// TestLaneGaugesOfAGatedRoute: on a real store, the lane gauges show the
// queued and in-flight messages of the busiest lanes of a gated route,
// only the top N of them, and nothing of an ungated route; each lane by a
// pseudonym, unless names are shown.
func TestLaneGaugesOfAGatedRoute(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	policy, err := herald.ProfilePolicy(herald.ProfileChannel)
	if err != nil {
		t.Fatal(err)
	}
	gated := policy
	gated.Admission = herald.Admission{Concurrency: 1}
	m := New()
	e, err := herald.New(herald.Config{
		Store: st, Clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), Observer: m,
		Routes: []herald.Route{
			{Name: "gw", Carrier: pushCarrier{}, Policy: gated},
			{Name: "hooks", Carrier: pushCarrier{}, Policy: policy},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Start(ctx); err != nil { // the store learns the admission at Start
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the store closes
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	send := func(route, lane string, n int) {
		for range n {
			if _, _, err := e.Send(ctx, "acme", herald.SendRequest{Route: route, Lane: lane, Text: "x"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 8 { // 8 quiet lanes of one message each
		send("gw", fmt.Sprintf("quiet-%d", i), 1)
	}
	send("gw", "busy-4", 4)
	send("gw", "busy-6", 6)
	send("gw", "busy-5", 5)
	send("hooks", "", 9)
	// One message of each gated lane goes, and stays in flight: wait until
	// the engine, on its fake clock, has done all it would.
	for deadline := time.Now().Add(10 * time.Second); !e.Idle(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the engine is not idle after 10s")
		}
	}

	m.WatchLanes(st.Lanes, 3)
	pseudonyms := map[string]bool{}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "herald_lane_") {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "lane" {
					pseudonyms[l.GetValue()] = true
				}
			}
		}
	}
	if len(pseudonyms) != 3 {
		t.Errorf("lane labels %v, want 3 pseudonyms", pseudonyms)
	}
	for p := range pseudonyms {
		if !strings.HasPrefix(p, "h-") || len(p) != 14 || strings.Contains(p, "busy") {
			t.Errorf("lane label %q is not a pseudonym", p)
		}
	}
	m.ShowLaneNames()
	want := `
# HELP herald_lane_in_flight Messages in flight (SENT_TO_NS, DELIVERED_TO_NS, SENT_TO_DEVICE) of a lane of a gated route, for the busiest lanes only; lane is a pseudonym unless names are shown.
# TYPE herald_lane_in_flight gauge
herald_lane_in_flight{lane="busy-4",route="gw"} 1
herald_lane_in_flight{lane="busy-5",route="gw"} 1
herald_lane_in_flight{lane="busy-6",route="gw"} 1
# HELP herald_lane_waiting QUEUED messages of a lane of a gated route, for the busiest lanes only (see herald_messages for every route's total); lane is a pseudonym unless names are shown.
# TYPE herald_lane_waiting gauge
herald_lane_waiting{lane="busy-4",route="gw"} 3
herald_lane_waiting{lane="busy-5",route="gw"} 4
herald_lane_waiting{lane="busy-6",route="gw"} 5
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "herald_lane_waiting", "herald_lane_in_flight"); err != nil {
		t.Error(err)
	}

	m.WatchLanes(st.Lanes, 0) // the default: TopLanes, more than there are
	if n, err := testutil.GatherAndCount(m.Registry(), "herald_lane_waiting"); err != nil || n != 11 {
		t.Errorf("%d herald_lane_waiting series with the default top, %v; want the 11 lanes of gw", n, err)
	}
}

// TestLaneGaugesAreBoundedAndCached: the collector asks for the top N
// lanes only, keeps no more than N even when given more, reads the lanes
// at most once per interval, and counts a failed read as a problem
// without serving stale lanes.
func TestLaneGaugesAreBoundedAndCached(t *testing.T) {
	m := New()
	if n, _ := testutil.GatherAndCount(m.Registry(), "herald_lane_waiting"); n != 0 {
		t.Errorf("%d herald_lane_waiting series before WatchLanes", n)
	}
	var (
		calls  int
		limits []int
		fail   error
	)
	m.WatchLanes(func(ctx context.Context, q herald.LaneQuery) ([]herald.LaneState, error) {
		calls++
		limits = append(limits, q.Limit)
		if _, ok := ctx.Deadline(); !ok || q.Route != "" || q.Tenant != "" {
			t.Errorf("lanes called with %+v, deadline set %v; want every route and tenant, and a deadline", q, ok)
		}
		if fail != nil {
			return nil, fail
		}
		var lanes []herald.LaneState
		for i := range 50 { // more than asked for
			lanes = append(lanes, herald.LaneState{Route: "gw", Lane: fmt.Sprintf("lane-%02d", i), Queued: 100 - i, InFlight: []string{"a", "b"}})
		}
		return lanes, nil
	}, 5)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m.lanes.now = func() time.Time { return now }

	for _, name := range []string{"herald_lane_waiting", "herald_lane_in_flight"} {
		if n, err := testutil.GatherAndCount(m.Registry(), name); err != nil || n != 5 {
			t.Errorf("%d %s series, %v; want the top 5", n, name, err)
		}
	}
	if calls != 1 || limits[0] != 5 {
		t.Errorf("lanes read %d times with limits %v for two scrapes within the interval; want once, limit 5", calls, limits)
	}
	now = now.Add(LanesInterval)
	if _, err := m.Registry().Gather(); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("lanes read %d times after the interval, want 2", calls)
	}

	fail = errors.New("store down")
	now = now.Add(LanesInterval)
	mfs, _ := m.Registry().Gather()
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "herald_lane_") {
			t.Errorf("%s served although the lanes failed", mf.GetName())
		}
	}
	if got := testutil.ToFloat64(m.problems.WithLabelValues(lanesProblem)); got != 1 {
		t.Errorf("lanes_error problems = %v, want 1", got)
	}
	fail = nil
	if n, _ := testutil.GatherAndCount(m.Registry(), "herald_lane_waiting"); n != 5 || calls != 4 {
		t.Errorf("after a failed read: %d series, %d reads; want 5 series read anew at once", n, calls)
	}
}

func TestThrottledAndLanePauses(t *testing.T) {
	m := New()
	m.Throttled("gw", "backpressure", true)
	m.Throttled("gw", "backpressure", true)
	m.Throttled("hooks", "backpressure", false)
	want := `
# HELP herald_lane_pauses_total Pauses of a gated route's lane, by route and reason (backpressure).
# TYPE herald_lane_pauses_total counter
herald_lane_pauses_total{reason="backpressure",route="gw"} 2
# HELP herald_throttled_total Messages the engine held back, by route and reason (backpressure: the carrier asked to wait).
# TYPE herald_throttled_total counter
herald_throttled_total{reason="backpressure",route="gw"} 2
herald_throttled_total{reason="backpressure",route="hooks"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "herald_throttled_total", "herald_lane_pauses_total"); err != nil {
		t.Error(err)
	}
}
