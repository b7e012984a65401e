// Package bench runs herald's standard workloads (W1–W7, W9) against a store
// with an in-process carrier, and reports each as one JSON line.
package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldmq/herald"
)

// Result is one workload's report.
type Result struct {
	Peer      string  `json:"peer"`
	Workload  string  `json:"workload"`
	N         int     `json:"n"`
	Seconds   float64 `json:"seconds"`
	MsgsPerS  float64 `json:"msgs_per_s"`
	Lost      int     `json:"lost"`
	Dup       int     `json:"dup"`
	RSSMB     float64 `json:"rss_mb"`
	CPUPerMsg float64 `json:"cpu_us_per_msg"`       // process CPU time (user and system) per message while timed, µs
	IdealPct  float64 `json:"ideal_pct,omitempty"`  // W4: share of the ideal throughput
	CarrierMS float64 `json:"carrier_ms,omitempty"` // W4: the carrier's mean time per send, as measured
	Producers int     `json:"producers,omitempty"`
	Nodes     int     `json:"nodes,omitempty"` // herald processes sharing the store (RunNodes)
	// EventsPerS (W8) is the carrier events per second herald's HTTP
	// ingress answered 204, each after its commit, over the timed run;
	// (W9) the room events published per second.
	EventsPerS float64 `json:"events_per_s,omitempty"`
}

// Workload is one of the standard workloads.
type Workload struct {
	Name        string
	N           int           // messages
	Producers   int           // W1, W2: concurrent senders; 0 preloads instead (dispatch workloads)
	Concurrency int           // dispatch concurrency
	Latency     time.Duration // the carrier's time per send
	FailFirst   bool          // every message fails its first attempt (transient)
	// Lanes spreads the messages over this many lanes, "lane-0001" on, in
	// turn; 0 leaves them on the route's own lane.
	Lanes int
	// Admission is the route's admission (W6, W7: its lanes' concurrency);
	// zero leaves the route ungated.
	Admission herald.Admission
	// Subscriptions makes it a room workload (W9): N events published by
	// Producers to one room of this many push subscriptions (see runRoom).
	Subscriptions int
}

// Workloads are the standard workloads, by name.
var Workloads = []Workload{
	{Name: "W1", N: 20000, Producers: 1},
	{Name: "W2", N: 50000, Producers: 16},
	{Name: "W3", N: 50000, Concurrency: 10},
	{Name: "W4", N: 5000, Concurrency: 100, Latency: 20 * time.Millisecond},
	{Name: "W5", N: 2000, Concurrency: 10, FailFirst: true},
	{Name: "W6", N: 50000, Concurrency: 10, Lanes: 5000, Admission: herald.Admission{Concurrency: 2}},
	{Name: "W7", N: 50000, Concurrency: 10, Lanes: 1, Admission: herald.Admission{Concurrency: 10}},
	{Name: "W9", N: 10000, Producers: 16, Subscriptions: 10},
}

// Find returns the workload named name.
func Find(name string) (Workload, bool) {
	for _, w := range Workloads {
		if strings.EqualFold(w.Name, name) {
			return w, true
		}
	}
	return Workload{}, false
}

// Run runs w on a store opened by newStore and reports it under peer. A
// store that cannot keep w's admission (a gated route) fails it with an
// error that wraps the store's, errors.ErrUnsupported, before anything is
// preloaded.
func Run(ctx context.Context, w Workload, peer string, newStore func() (herald.Store, error)) (Result, error) {
	if w.Subscriptions > 0 {
		return runRoom(ctx, w, peer, newStore)
	}
	store, err := newStore()
	if err != nil {
		return Result{}, err
	}
	defer store.Close()
	carrier := newCarrier(w.Latency, w.FailFirst)
	defer carrier.close()
	done := &doneCounter{target: int64(w.N), reached: make(chan struct{})}
	eng, err := newEngine(store, carrier, w.Concurrency, w.Admission, done)
	if err != nil {
		return Result{}, err
	}
	res := Result{Peer: peer, Workload: w.Name, N: w.N, Producers: w.Producers}
	if err := setAdmission(ctx, eng, w); err != nil {
		return res, err
	}
	payload := payload256()
	var elapsed, cpu time.Duration
	if w.Producers > 0 {
		start, startCPU := time.Now(), cpuTime()
		if err := produce(ctx, eng, w, w.Producers, payload); err != nil {
			return res, err
		}
		elapsed, cpu = time.Since(start), cpuTime()-startCPU
		res.Lost, res.Dup, err = countStored(ctx, store, w.N)
	} else {
		if err := produce(ctx, eng, w, preloaders, payload); err != nil {
			return res, err
		}
		start, startCPU := time.Now(), cpuTime()
		if err := eng.Start(ctx); err != nil {
			return res, err
		}
		select {
		case <-done.reached:
		case <-ctx.Done():
			return res, ctx.Err()
		}
		elapsed, cpu = time.Since(start), cpuTime()-startCPU
		if err := eng.Stop(ctx); err != nil {
			return res, err
		}
		res.Lost, err = countNotDelivered(ctx, store, w.N)
		res.Dup = carrier.duplicates()
	}
	if err != nil {
		return res, err
	}
	res.Seconds = round(elapsed.Seconds(), 3)
	res.MsgsPerS = round(float64(w.N)/elapsed.Seconds(), 0)
	res.CPUPerMsg = round(float64(cpu.Microseconds())/float64(w.N), 1)
	res.RSSMB = round(peakRSSMB(), 1)
	if w.Latency > 0 {
		ideal := float64(w.Concurrency) / w.Latency.Seconds()
		res.IdealPct = round(100*res.MsgsPerS/ideal, 1)
		res.CarrierMS = round(float64(carrier.meanLatency().Microseconds())/1000, 2)
	}
	return res, nil
}

// setAdmission has eng give the store the admission of w's route, when
// it is gated, as it does when it starts: a store that cannot keep it
// refuses before the preload, and the preloaded messages are stored as a
// running engine's are (on SQLite, through their lanes).
func setAdmission(ctx context.Context, eng *herald.Engine, w Workload) error {
	if !w.Admission.Gated() {
		return nil
	}
	err := eng.Prepare(ctx)
	if errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("the store does not keep lane admission, which this workload needs: %w", err)
	}
	return err
}

// preloaders is how many goroutines preload a dispatch workload's messages.
const preloaders = 8

// produce sends w.N messages over w's lanes from producers goroutines.
func produce(ctx context.Context, eng *herald.Engine, w Workload, producers int, payload []byte) error {
	return Send(ctx, eng, w.N, producers, func(i int64) herald.SendRequest {
		return herald.SendRequest{Route: "bench", Target: "t", Lane: w.lane(i), Payload: payload}
	})
}

// Send sends n messages, the i-th (from 1) made by req, from producers
// goroutines as tenant "bench", and returns the first error.
func Send(ctx context.Context, eng *herald.Engine, n, producers int, req func(i int64) herald.SendRequest) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if _, _, err := eng.Send(ctx, "bench", req(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// lane returns the lane of w's i-th message (from 1): its lanes in turn,
// or "" (the route's own) when w has none.
func (w Workload) lane(i int64) string {
	if w.Lanes == 0 {
		return ""
	}
	return fmt.Sprintf("lane-%04d", (i-1)%int64(w.Lanes)+1)
}

func countStored(ctx context.Context, s herald.Store, n int) (lost, dup int, err error) {
	counts, err := s.Counts(ctx)
	if err != nil {
		return 0, 0, err
	}
	total := 0
	for _, c := range counts {
		total += c.N
	}
	return max(n-total, 0), max(total-n, 0), nil
}

func countNotDelivered(ctx context.Context, s herald.Store, n int) (int, error) {
	counts, err := s.Counts(ctx)
	if err != nil {
		return 0, err
	}
	ok := 0
	for _, c := range counts {
		if c.Status == herald.StatusDeliverySuccessful {
			ok += c.N
		}
	}
	return n - ok, nil
}

// doneCounter is an Observer that closes reached when target messages are delivered.
type doneCounter struct {
	n       atomic.Int64
	target  int64
	reached chan struct{}
}

func (d *doneCounter) Transitioned(string, herald.Status, herald.Status) {}
func (d *doneCounter) Problem(string)                                    {}
func (d *doneCounter) Throttled(string, string, bool)                    {}
func (d *doneCounter) Inbound(string, string, string)                    {}
func (d *doneCounter) Refused(string, string)                            {}
func (d *doneCounter) Delivered(string, time.Duration) {
	if d.n.Add(1) == d.target {
		close(d.reached)
	}
}

// peakRSSMB reads the process's peak resident set size (VmHWM).
func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

func round(v float64, places int) float64 {
	p, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', places, 64), 64)
	return p
}
