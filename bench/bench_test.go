package bench

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/store/sqlite"
)

// TestWorkloadsCountEveryMessage runs small versions of a producer and a
// dispatch workload and checks the harness's loss and duplicate counts.
func TestWorkloadsCountEveryMessage(t *testing.T) {
	for _, w := range []Workload{
		{Name: "produce", N: 300, Producers: 4},
		{Name: "dispatch", N: 300, Concurrency: 5, FailFirst: true},
	} {
		t.Run(w.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bench.db")
			res, err := Run(context.Background(), w, "test", func() (herald.Store, error) { return sqlite.Open(path) })
			if err != nil {
				t.Fatal(err)
			}
			if res.N != w.N || res.Lost != 0 || res.Dup != 0 || res.MsgsPerS <= 0 {
				t.Fatalf("result %+v: want all %d counted, none lost or duplicated", res, w.N)
			}
		})
	}
}
