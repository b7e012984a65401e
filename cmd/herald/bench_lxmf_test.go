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

// TestMeshWorkload runs W11 scaled down on a temporary SQLite database:
// every message goes through the Reticulum simulator to its recipient and
// is proved, once. It checks the report, not the speed.
func TestMeshWorkload(t *testing.T) {
	w := w11
	w.N, w.Recipients = 60, 6
	path := filepath.Join(t.TempDir(), "bench.db")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var warn bytes.Buffer
	res, err := runMesh(ctx, w, "test", func() (herald.Store, error) { return sqlite.Open(path) }, &warn)
	if err != nil {
		t.Fatal(err)
	}
	if res.Workload != "W11" || res.N != w.N || res.Lost != 0 || res.Dup != 0 || res.MsgsPerS <= 0 || res.CPUPerMsg <= 0 {
		t.Fatalf("result %+v: want all %d delivered once", res, w.N)
	}
	if warn.Len() > 0 {
		t.Errorf("warnings: %s", warn.String())
	}
}
