package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// Benchmark measures a store. newStore must return a new, empty store each
// time it is called; the benchmark closes it.
//
//   - Create: b.N Creates from 8 goroutines per CPU (16 on 2 cores),
//     reported as creates/s.
//   - ClaimTransition: b.N stored messages claimed 50 at a time by 4
//     dispatchers, each message then moved to DELIVERY_SUCCESSFUL under its
//     lease by a goroutine of its own, as the engine does; reported as
//     msgs/s.
//   - ClaimTransitionLanes: the same through lanes, as herald bench's W6
//     lays them out: the messages in turn over b.N/10 lanes of a route
//     whose lanes take 2 at a time, with the ClaimAhead that the engine
//     gives a direct carrier's route (lanesAhead), claimed by one node.
//     Beside ClaimTransition it shows what the lanes cost the store, apart
//     from the engine.
func Benchmark(b *testing.B, newStore func(b *testing.B) herald.Store) {
	b.Run("Create", func(b *testing.B) {
		s := newStore(b)
		defer s.Close()
		b.ReportAllocs()
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := s.Create(b.Context(), benchMessage(), herald.CreateOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
	})

	b.Run("ClaimTransition", func(b *testing.B) {
		s := newStore(b)
		defer s.Close()
		msgs := make([]*herald.Message, b.N)
		for i := range msgs {
			msgs[i] = benchMessage()
		}
		if err := createAll(b.Context(), s, msgs); err != nil {
			b.Fatal(err)
		}
		dispatchAll(b, s)
	})

	b.Run("ClaimTransitionLanes", func(b *testing.B) {
		s := newStore(b)
		defer s.Close()
		rules := map[string]herald.Admission{"lanes": {Concurrency: 2, ClaimAhead: lanesAhead}}
		if err := s.SetAdmission(b.Context(), rules); err != nil {
			b.Fatal(err)
		}
		lanes := max(1, b.N/10)
		msgs := make([]*herald.Message, b.N)
		for i := range msgs {
			msgs[i] = benchMessage()
			msgs[i].Route, msgs[i].Lane = "lanes", fmt.Sprintf("lane-%05d", i%lanes)
		}
		if err := createAll(b.Context(), s, msgs); err != nil {
			b.Fatal(err)
		}
		dispatchAll(b, s)
	})
}

// lanesAhead is the ClaimAhead of ClaimTransitionLanes' route: the
// engine's for a concurrency of 2 and its default ClaimBatch, 256 (its
// Concurrency plus two batches).
const lanesAhead = 2 + 2*256

// dispatchAll times 4 dispatchers that claim and complete every stored
// message (dispatch), and reports msgs/s.
func dispatchAll(b *testing.B, s herald.Store) {
	b.ReportAllocs()
	b.ResetTimer()
	var dispatchers sync.WaitGroup
	for range 4 {
		dispatchers.Go(func() { dispatch(b, s) })
	}
	dispatchers.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// dispatch claims messages 50 at a time, of any route, until none is left
// and moves each to DELIVERY_SUCCESSFUL from a goroutine of its own.
func dispatch(b *testing.B, s herald.Store) {
	for {
		claimed, err := s.Claim(b.Context(), herald.Claim{Now: t0, Limit: 50, GatedLimit: 50, Node: "bench",
			DefaultAccept: time.Minute})
		if err != nil {
			b.Error(err)
			return
		}
		if len(claimed) == 0 {
			return
		}
		var senders sync.WaitGroup
		for _, m := range claimed {
			senders.Go(func() {
				err := s.Transition(b.Context(), herald.Transition{
					ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful,
					Lease: m.Lease, At: t0.Add(time.Second), Reason: "accepted", ExternalID: "ext-" + m.ID,
				})
				if err != nil {
					b.Error(err)
				}
			})
		}
		senders.Wait()
	}
}

// benchMessage returns a message of a typical size.
func benchMessage() *herald.Message {
	m := newMessage("bench")
	m.Text = "temperature alert: sensor 42 reads 81.5C, threshold 80C"
	m.Params = map[string]string{"port": "10", "confirmed": "true"}
	m.CorrelationID = "corr-" + m.ID
	return m
}
