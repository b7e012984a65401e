package herald_test

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/sim/webhooksink"
)

// TestActivityCountsEachMinute: sends, successes, retries and dead letters
// land in the minute of the engine's clock they happened in, with the
// latency of the successes, in their tenant's activity and everyone's,
// not in another tenant's; an hour later they are gone.
func TestActivityCountsEachMinute(t *testing.T) {
	flaky := httptest.NewServer(webhooksink.New(webhooksink.Config{FailFirst: 1}))
	defer flaky.Close()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad payload", http.StatusBadRequest)
	}))
	defer refusing.Close()
	r := newRig(t, []herald.Route{
		webhookRoute(t, "flaky", flaky.URL, herald.ProfileChannel),
		webhookRoute(t, "refusing", refusing.URL, herald.ProfileChannel),
	})
	r.start()

	// Minute 0: a send that fails for now (retried in 5 s), one refused for good.
	r.send(herald.SendRequest{Route: "flaky", Text: "a"})
	r.send(herald.SendRequest{Route: "refusing", Text: "b"})
	r.settle()
	// Minute 2: the retry succeeds, 2 min 5 s after its creation.
	r.advance(2*time.Minute + 5*time.Second)

	act := r.eng.Activity("acme")
	if all := r.eng.Activity(""); fmt.Sprint(all) != fmt.Sprint(act) {
		t.Errorf("every tenant's activity %v differs from acme's alone %v", all, act)
	}
	for _, m := range r.eng.Activity("other") {
		if m != (herald.ActivityMinute{Start: m.Start}) {
			t.Fatalf("another tenant's activity counts acme's: %+v", m)
		}
	}
	if len(act) != herald.ActivityMinutes {
		t.Fatalf("Activity = %d minutes, want %d", len(act), herald.ActivityMinutes)
	}
	last := act[len(act)-1]
	if want := t0.Add(2 * time.Minute); !last.Start.Equal(want) {
		t.Fatalf("the last minute starts at %v, want %v (the minute under way)", last.Start, want)
	}
	for i := 1; i < len(act); i++ {
		if d := act[i].Start.Sub(act[i-1].Start); d != time.Minute {
			t.Fatalf("minutes %d and %d are %v apart, want 1m", i-1, i, d)
		}
	}
	first, second := act[len(act)-3], act[len(act)-2]
	if first.Sent != 2 || first.Retried != 1 || first.Failed != 1 || first.Succeeded != 0 {
		t.Errorf("minute 0 = %+v, want 2 sent, 1 retried, 1 failed, none succeeded", first)
	}
	if second != (herald.ActivityMinute{Start: t0.Add(time.Minute)}) {
		t.Errorf("minute 1 = %+v, want nothing", second)
	}
	if last.Sent != 1 || last.Succeeded != 1 || last.Failed != 0 || last.Retried != 0 {
		t.Errorf("minute 2 = %+v, want 1 sent and 1 succeeded", last)
	}
	wantMS := float64((2*time.Minute + 5*time.Second) / time.Millisecond)
	for name, got := range map[string]float64{"p50": last.LatencyP50MS, "p90": last.LatencyP90MS, "p99": last.LatencyP99MS} {
		if math.Abs(got-wantMS)/wantMS > 0.10 {
			t.Errorf("minute 2's %s latency = %.0f ms, want %.0f ms within 10 %%", name, got, wantMS)
		}
	}
	if first.LatencyP50MS != 0 {
		t.Errorf("minute 0's p50 latency = %v, want 0: nothing succeeded", first.LatencyP50MS)
	}

	// An hour on, the ring has moved past all of it.
	r.advance(time.Hour)
	for _, m := range r.eng.Activity("acme") {
		if m.Sent+m.Succeeded+m.Failed+m.Retried != 0 || m.LatencyP99MS != 0 {
			t.Fatalf("an hour later, minute %v still counts %+v", m.Start, m)
		}
	}
}
