package bench

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/redistest"
	"github.com/heraldmq/herald/store/redis"
	"github.com/heraldmq/herald/store/sqlite"
)

// TestRoomWorkload runs W9 scaled down on SQLite and on Redis: every
// event's ten deliveries are delivered once, and both rates are reported.
func TestRoomWorkload(t *testing.T) {
	for _, kind := range []string{"sqlite", "redis"} {
		t.Run(kind, func(t *testing.T) {
			newStore := func() (herald.Store, error) { return sqlite.Open(filepath.Join(t.TempDir(), "bench.db")) }
			if kind == "redis" {
				url := redistest.Start(t).URL() + "?prefix=bench"
				newStore = func() (herald.Store, error) { return redis.Open(url) }
			}
			w := scaledDown(t, "W9")
			res, err := Run(context.Background(), w, "test", newStore)
			if err != nil {
				t.Fatal(err)
			}
			if res.N != w.N || res.Lost != 0 || res.Dup != 0 || res.EventsPerS <= 0 || res.MsgsPerS <= 0 {
				t.Fatalf("result %+v: want %d events, their %d deliveries each delivered once", res, w.N, w.Subscriptions)
			}
		})
	}
}
