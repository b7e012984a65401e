// Package bench runs herald's standard workloads (W1–W5) against a store
// with an in-process carrier, and reports each as one JSON line.
package bench

import (
	"bufio"
	"context"
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
}

// Workload is one of the standard workloads.
type Workload struct {
	Name        string
	N           int           // messages
	Producers   int           // W1, W2: concurrent senders; 0 preloads instead (dispatch workloads)
	Concurrency int           // dispatch concurrency
	Latency     time.Duration // the carrier's time per send
	FailFirst   bool          // every message fails its first attempt (transient)
}

// Workloads are the standard workloads, by name.
var Workloads = []Workload{
	{Name: "W1", N: 20000, Producers: 1},
	{Name: "W2", N: 50000, Producers: 16},
	{Name: "W3", N: 50000, Concurrency: 10},
	{Name: "W4", N: 5000, Concurrency: 100, Latency: 20 * time.Millisecond},
	{Name: "W5", N: 2000, Concurrency: 10, FailFirst: true},
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

// Run runs w on a store opened by newStore and reports it under peer.
func Run(ctx context.Context, w Workload, peer string, newStore func() (herald.Store, error)) (Result, error) {
	store, err := newStore()
	if err != nil {
		return Result{}, err
	}
	defer store.Close()
	carrier := newCarrier(w.Latency, w.FailFirst)
	defer carrier.close()
	done := &doneCounter{target: int64(w.N), reached: make(chan struct{})}
	eng, err := newEngine(store, carrier, w.Concurrency, done)
	if err != nil {
		return Result{}, err
	}
	res := Result{Peer: peer, Workload: w.Name, N: w.N, Producers: w.Producers}
	payload := payload256()
	var elapsed, cpu time.Duration
	if w.Producers > 0 {
		start, startCPU := time.Now(), cpuTime()
		if err := produce(ctx, eng, w, payload); err != nil {
			return res, err
		}
		elapsed, cpu = time.Since(start), cpuTime()-startCPU
		res.Lost, res.Dup, err = countStored(ctx, store, w.N)
	} else {
		if err := produce(ctx, eng, Workload{N: w.N, Producers: 8}, payload); err != nil {
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

// produce sends w.N messages from w.Producers goroutines.
func produce(ctx context.Context, eng *herald.Engine, w Workload, payload []byte) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, w.Producers)
	for range w.Producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(w.N) {
				if _, _, err := eng.Send(ctx, "bench", herald.SendRequest{Route: "bench", Target: "t", Payload: payload}); err != nil {
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
