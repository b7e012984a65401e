package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/store/sqlite"
)

// TestLoRaWorkload runs W8 scaled down on a temporary SQLite database:
// every downlink goes over gRPC to the simulator, its events come back
// through the HTTP ingress, and all are delivered once. It checks the
// report, not the speed.
func TestLoRaWorkload(t *testing.T) {
	w := w8
	w.N, w.Devices, w.Posters = 200, 20, 8
	path := filepath.Join(t.TempDir(), "bench.db")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var warn bytes.Buffer
	res, err := runLoRa(ctx, w, "test", func() (herald.Store, error) { return sqlite.Open(path) }, &warn)
	if err != nil {
		t.Fatal(err)
	}
	if res.Workload != "W8" || res.N != w.N || res.Lost != 0 || res.Dup != 0 || res.MsgsPerS <= 0 || res.EventsPerS <= 0 {
		t.Fatalf("result %+v: want all %d delivered once, and both rates", res, w.N)
	}
	if warn.Len() > 0 {
		t.Errorf("warnings: %s", warn.String())
	}
	// Each confirmed downlink makes three events: txack, up and ack.
	if least := 3 * float64(w.N) / res.Seconds * 0.9; res.EventsPerS < least {
		t.Errorf("events_per_s %v; want about three events a message (at least %.0f)", res.EventsPerS, least)
	}
}
