package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestTransitionsAndProblems(t *testing.T) {
	m := New()
	m.Transitioned("hooks", "", herald.StatusQueued)
	m.Transitioned("hooks", herald.StatusQueued, herald.StatusSentToNS)
	m.Transitioned("hooks", herald.StatusQueued, herald.StatusSentToNS)
	m.Transitioned("lora", herald.StatusSentToNS, herald.StatusToRetry)
	m.Problem("store_error")
	m.Problem("store_error")
	m.Problem("event_dead")

	if got := testutil.ToFloat64(m.transitions.WithLabelValues("hooks", "QUEUED", "SENT_TO_NS")); got != 2 {
		t.Errorf("hooks QUEUED->SENT_TO_NS = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.transitions.WithLabelValues("hooks", "", "QUEUED")); got != 1 {
		t.Errorf("hooks creations = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(m.transitions, "herald_transitions_total"); got != 3 {
		t.Errorf("%d transition series, want 3", got)
	}
	want := `
# HELP herald_problems_total Things that went wrong, by kind (store_error, stale_completion, event_retry, event_dead, carrier_error, ...).
# TYPE herald_problems_total counter
herald_problems_total{kind="event_dead"} 1
herald_problems_total{kind="store_error"} 2
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "herald_problems_total"); err != nil {
		t.Error(err)
	}
}

func TestDeliveryLatencyBuckets(t *testing.T) {
	m := New()
	m.Delivered("hooks", 3*time.Millisecond)
	m.Delivered("hooks", 2*time.Second)
	m.Delivered("hooks", 2*time.Hour) // beyond the last bucket: only +Inf

	if LatencyBuckets[0] != 0.001 || LatencyBuckets[len(LatencyBuckets)-1] != 3600 {
		t.Errorf("buckets run %v..%v, want 0.001..3600", LatencyBuckets[0], LatencyBuckets[len(LatencyBuckets)-1])
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "herald_delivery_latency_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 3 {
			t.Errorf("count = %d, want 3", h.GetSampleCount())
		}
		cum := map[float64]uint64{}
		for _, b := range h.GetBucket() {
			cum[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		if cum[0.001] != 0 || cum[0.005] != 1 || cum[2.5] != 2 || cum[3600] != 2 {
			t.Errorf("cumulative buckets = %v", cum)
		}
		return
	}
	t.Fatal("herald_delivery_latency_seconds not gathered")
}

func TestMessagesGauge(t *testing.T) {
	m := New()
	// Without WatchCounts there is no gauge at all.
	if n, _ := testutil.GatherAndCount(m.Registry(), "herald_messages"); n != 0 {
		t.Errorf("%d herald_messages series before WatchCounts", n)
	}
	calls := 0
	m.WatchCounts(func(ctx context.Context) ([]herald.Count, error) {
		calls++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("counts called without a deadline")
		}
		return []herald.Count{
			{Tenant: "a", Route: "hooks", Status: herald.StatusQueued, N: 3},
			{Tenant: "b", Route: "hooks", Status: herald.StatusQueued, N: 4},
			{Tenant: "a", Route: "hooks", Status: herald.StatusDeliveryFailed, N: 1},
			{Tenant: "a", Route: "lora", Status: herald.StatusToRetry, N: 2},
		}, nil
	})
	var want strings.Builder
	want.WriteString("# HELP herald_messages Messages kept, by route and status (queue depth for QUEUED and TO_RETRY).\n# TYPE herald_messages gauge\n")
	values := map[string]map[herald.Status]int{
		"hooks": {herald.StatusQueued: 7, herald.StatusDeliveryFailed: 1},
		"lora":  {herald.StatusToRetry: 2},
	}
	for _, route := range []string{"hooks", "lora"} {
		for _, st := range herald.Statuses {
			want.WriteString("herald_messages{route=\"" + route + "\",status=\"" + string(st) + "\"} " + strconv.Itoa(values[route][st]) + "\n")
		}
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want.String()), "herald_messages"); err != nil {
		t.Error(err)
	}
	if calls != 1 {
		t.Errorf("counts called %d times for one scrape", calls)
	}
}

func TestHandlerServesTextAndSurvivesCountsError(t *testing.T) {
	m := New()
	m.Transitioned("hooks", herald.StatusQueued, herald.StatusSentToNS)
	m.WatchCounts(func(context.Context) ([]herald.Count, error) {
		return nil, errors.New("store down")
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	for _, w := range []string{
		`herald_transitions_total{from="QUEUED",route="hooks",to="SENT_TO_NS"} 1`,
		"go_goroutines",
		"process_",
	} {
		if !strings.Contains(string(body), w) {
			t.Errorf("metrics lack %q", w)
		}
	}
	if strings.Contains(string(body), "herald_messages{") {
		t.Error("herald_messages served although the counts failed")
	}
	if got := testutil.ToFloat64(m.problems.WithLabelValues(countsProblem)); got != 1 {
		t.Errorf("counts_error problems = %v, want 1", got)
	}
}

func TestEachMetricsHasItsOwnRegistry(t *testing.T) {
	a, b := New(), New()
	a.Problem("x")
	if n := testutil.CollectAndCount(b.problems); n != 0 {
		t.Errorf("b sees %d problem series from a", n)
	}
}

// TestRoomRoutesAreOneLabel: the routes of rooms, whose names tenants
// choose, are all the label "room:", in the counters and in the gauge of
// the messages kept.
func TestRoomRoutesAreOneLabel(t *testing.T) {
	m := New()
	m.Transitioned("room:acme-secret-project", "", herald.StatusQueued)
	m.Transitioned("room:orders", "", herald.StatusQueued)
	m.Delivered("room:orders", time.Second)
	m.Throttled("room:orders", "backpressure", true)
	m.Inbound("room:orders", "up", "stored")
	m.WatchCounts(func(context.Context) ([]herald.Count, error) {
		return []herald.Count{{Tenant: "acme", Route: "room:a", Status: herald.StatusQueued, N: 2},
			{Tenant: "other", Route: "room:b", Status: herald.StatusQueued, N: 3}}, nil
	})
	if got := testutil.ToFloat64(m.transitions.WithLabelValues("room:", "", "QUEUED")); got != 2 {
		t.Errorf("room: creations = %v, want 2", got)
	}
	var text strings.Builder
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text.WriteString(rec.Body.String())
	for _, secret := range []string{"acme-secret-project", "orders", `route="room:a"`, `route="room:b"`} {
		if strings.Contains(text.String(), secret) {
			t.Errorf("/metrics carries %q", secret)
		}
	}
	if !strings.Contains(text.String(), `herald_messages{route="room:",status="QUEUED"} 5`) {
		t.Errorf("the rooms' messages are not summed under room:")
	}
}

// TestHeld: the orphaned messages by route and the operator's pauses are
// gauges; a route no longer orphaned loses its series.
func TestHeld(t *testing.T) {
	m := New()
	m.Held(map[string]int{"lora": 5, "old": 2}, 3)
	m.Held(map[string]int{"lora": 4}, 1)
	want := `
# HELP herald_operator_paused_lanes Lanes and routes an operator paused (POST /v1/lanes/pause), in force.
# TYPE herald_operator_paused_lanes gauge
herald_operator_paused_lanes 1
# HELP herald_orphaned_messages Pending messages of a route missing from the configuration, held (not sent, not failed) until it is back, as last counted.
# TYPE herald_orphaned_messages gauge
herald_orphaned_messages{route="lora"} 4
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "herald_orphaned_messages", "herald_operator_paused_lanes"); err != nil {
		t.Error(err)
	}
}
