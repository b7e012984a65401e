package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldmq/herald"
)

// runRoom runs a room workload (W9): one room of w.Subscriptions push
// subscriptions, their deliveries sent by the in-process carrier, which
// accepts at once; w.Producers publish w.N events of 256 bytes of data
// while the engine runs. EventsPerS is the events published per second
// (each durable, with its deliveries, on return); MsgsPerS the
// deliveries completed per second, from the first publish until the last
// delivery is DELIVERY_SUCCESSFUL; Lost the deliveries that are not, Dup
// the sends beyond one per delivery; cpu_us_per_msg is per delivery.
func runRoom(ctx context.Context, w Workload, peer string, newStore func() (herald.Store, error)) (Result, error) {
	res := Result{Peer: peer, Workload: w.Name, N: w.N, Producers: w.Producers}
	store, err := newStore()
	if err != nil {
		return res, err
	}
	defer store.Close()
	carrier := newCarrier(0, false)
	deliveries := w.N * w.Subscriptions
	done := &doneCounter{target: int64(deliveries), reached: make(chan struct{})}
	policy, err := herald.ProfilePolicy(herald.ProfileRoom)
	if err != nil {
		return res, err
	}
	eng, err := herald.New(herald.Config{
		Store:       store,
		Routes:      []herald.Route{{Name: herald.RoomRoutePrefix, Prefix: true, Carrier: carrier, Policy: policy}},
		Concurrency: w.Concurrency,
		Observer:    done,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return res, err
	}
	const tenant, room = "bench", "w9"
	if _, err := eng.CreateRoom(ctx, tenant, herald.RoomRequest{Name: room}); err != nil {
		return res, err
	}
	for range w.Subscriptions {
		sub := herald.SubscriptionRequest{Type: herald.SubscriptionPush, URL: "http://bench.invalid/"}
		if _, err := eng.CreateSubscription(ctx, tenant, room, sub); err != nil {
			return res, err
		}
	}
	data, err := json.Marshal(map[string]string{"payload": fmt.Sprintf("%0242d", 0)}) // 256 bytes
	if err != nil {
		return res, err
	}
	start, startCPU := time.Now(), cpuTime()
	if err := eng.Start(ctx); err != nil {
		return res, err
	}
	defer eng.Stop(context.WithoutCancel(ctx))
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, w.Producers)
	)
	for range w.Producers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(w.N); i = next.Add(1) {
				req := herald.PublishRequest{Type: "bench.event", Data: data, CorrelationID: fmt.Sprint("ev-", i)}
				if _, err := eng.Publish(ctx, tenant, room, req); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	published := time.Since(start)
	select {
	case <-done.reached:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	elapsed, cpu := time.Since(start), cpuTime()-startCPU
	if err := eng.Stop(ctx); err != nil {
		return res, err
	}
	if res.Lost, err = countNotDelivered(ctx, store, deliveries); err != nil {
		return res, err
	}
	res.Dup = carrier.duplicates()
	res.Seconds = round(elapsed.Seconds(), 3)
	res.EventsPerS = round(float64(w.N)/published.Seconds(), 0)
	res.MsgsPerS = round(float64(deliveries)/elapsed.Seconds(), 0)
	res.CPUPerMsg = round(float64(cpu.Microseconds())/float64(deliveries), 1)
	res.RSSMB = round(peakRSSMB(), 1)
	return res, nil
}
