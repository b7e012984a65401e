package herald_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/redistest"
	"github.com/heraldmq/herald/store/redis"
)

// TestPruneForgetsEverySettledInboundID: the inbox remembers a settled
// event's id "until the pruner's cut passes its arrival". A ChirpStack
// application settles an event per uplink, txack and ack; here 2,500
// events came before the retention's cut. One run of the pruner (every
// 5 min) must forget them all, as it deletes every message past the cut,
// or an application settling more than a store call's batch per run would
// grow inbox_done (SQLite) or indone (Redis) without bound.
func TestPruneForgetsEverySettledInboundID(t *testing.T) {
	stores := map[string]func(*testing.T, *herald.Config){
		"sqlite": func(*testing.T, *herald.Config) {},
		"redis": func(t *testing.T, cfg *herald.Config) {
			st, err := redis.Open(redistest.Start(t).URL() + "?prefix=prune&lane_clock=caller")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			cfg.Store = st
		},
	}
	for name, use := range stores {
		t.Run(name, func(t *testing.T) {
			var st herald.Store
			p, err := herald.ProfilePolicy(herald.ProfileChannel)
			if err != nil {
				t.Fatal(err)
			}
			c := &slowCallCarrier{release: make(chan struct{}), callTimeout: time.Second}
			r := newRigWith(t, func(cfg *herald.Config) { use(t, cfg); st = cfg.Store },
				[]herald.Route{{Name: "lora", Carrier: c, Policy: p}})
			ctx := context.Background()
			const n = 2500
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("ev-%05d", i)
				ev := herald.Inbound{ID: ids[i], Route: "lora", Kind: herald.InboundTransmitted, ExternalID: "q-" + ids[i], At: t0, DueAt: t0}
				if err := st.AddInbound(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := st.ClaimInbound(ctx, t0, n, t0.Add(time.Minute)); err != nil || len(got) != n {
				t.Fatalf("claim: %d, %v", len(got), err)
			}
			if err := st.SettleInbound(ctx, herald.InboundSettle{Done: ids}); err != nil {
				t.Fatal(err)
			}

			r.clock.Advance(8 * 24 * time.Hour) // past the 7-day retention
			if _, err := r.eng.Prune(ctx); err != nil {
				t.Fatal(err)
			}
			now := r.clock.Now()
			for _, id := range ids { // the same ids, new events: stored only when forgotten
				ev := herald.Inbound{ID: id, Route: "lora", Kind: herald.InboundTransmitted, ExternalID: "q-" + id, At: now, DueAt: now}
				if err := st.AddInbound(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
			got, err := st.ClaimInbound(ctx, now, n, now.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("after the pruner ran past their arrival, %d of %d settled ids are still remembered; want none", n-len(got), n)
			}
		})
	}
}
