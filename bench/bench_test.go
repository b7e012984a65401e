package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/redistest"
	"github.com/heraldmq/herald/store/redis"
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

// scaledDown returns the standard workload name with a hundredth of its
// messages and of its lanes (at least one), so that each lane holds as
// many messages as in the full workload.
func scaledDown(t *testing.T, name string) Workload {
	t.Helper()
	w, ok := Find(name)
	if !ok {
		t.Fatalf("no workload %s", name)
	}
	w.N /= 100
	w.Lanes = max(w.Lanes/100, 1)
	return w
}

// TestLaneWorkloads runs W6 and W7 scaled down on SQLite, and on Redis
// when redis-server is installed: every message goes through its lane's
// admission and is delivered exactly once.
func TestLaneWorkloads(t *testing.T) {
	for _, kind := range []string{"sqlite", "redis"} {
		for _, name := range []string{"W6", "W7"} {
			t.Run(kind+"/"+name, func(t *testing.T) {
				var newStore func() (herald.Store, error)
				switch kind {
				case "sqlite":
					path := filepath.Join(t.TempDir(), "bench.db")
					newStore = func() (herald.Store, error) { return sqlite.Open(path) }
				case "redis":
					url := redistest.Start(t).URL() + "?prefix=bench"
					newStore = func() (herald.Store, error) { return redis.Open(url) }
				}
				w := scaledDown(t, name)
				res, err := Run(context.Background(), w, "test", newStore)
				if errors.Is(err, errors.ErrUnsupported) {
					t.Skipf("the %s store does not keep lane admission yet: %v", kind, err)
				}
				if err != nil {
					t.Fatal(err)
				}
				if res.N != w.N || res.Lost != 0 || res.Dup != 0 || res.MsgsPerS <= 0 {
					t.Fatalf("result %+v: want all %d delivered once", res, w.N)
				}
			})
		}
	}
}

// refusingStore is a store that keeps no lane admission, as the Redis
// store did at first.
type refusingStore struct{ herald.Store }

func (refusingStore) SetAdmission(context.Context, map[string]herald.Admission) error {
	return fmt.Errorf("test store: lane admission: %w", errors.ErrUnsupported)
}

// TestLaneWorkloadUnsupported runs W6 on a store that keeps no lane
// admission: it fails with an error that says so and wraps the store's,
// before anything is preloaded.
func TestLaneWorkloadUnsupported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.db")
	_, err := Run(context.Background(), scaledDown(t, "W6"), "test", func() (herald.Store, error) {
		s, err := sqlite.Open(path)
		return refusingStore{s}, err
	})
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "does not keep lane admission") {
		t.Fatalf("err = %v, want the store's refusal of lane admission", err)
	}
	store, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, stored, err := countStored(context.Background(), store, 0); err != nil || stored != 0 {
		t.Fatalf("stored %d messages (err %v), want none preloaded", stored, err)
	}
}
