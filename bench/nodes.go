package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"time"

	"github.com/heraldmq/herald"
)

// RunNodes runs a dispatch workload whose carrier accepts at once (W3)
// with its dispatch spread over nodes processes sharing one store: it
// preloads the messages, starts the nodes with startNode (each runs
// ServeNode), times them until every message is delivered, and counts
// duplicates from what the nodes report. Its
// rss_mb is the largest node's peak, its cpu_us_per_msg the nodes' CPU
// time in all.
func RunNodes(ctx context.Context, w Workload, peer string, nodes int, newStore func() (herald.Store, error), startNode func() *exec.Cmd) (Result, error) {
	res := Result{Peer: peer, Workload: w.Name, N: w.N, Nodes: nodes}
	store, err := newStore()
	if err != nil {
		return res, err
	}
	defer store.Close()
	eng, err := newEngine(store, newCarrier(0, false), 1, herald.Admission{}, nil)
	if err != nil {
		return res, err
	}
	if err := produce(ctx, eng, w, preloaders, payload256()); err != nil {
		return res, err
	}

	type node struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Scanner
	}
	var started []node
	defer func() {
		for _, n := range started {
			_ = n.cmd.Process.Kill()
			_ = n.cmd.Wait()
		}
	}()
	for range nodes {
		cmd := startNode()
		in, _ := cmd.StdinPipe()
		outPipe, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			return res, err
		}
		n := node{cmd: cmd, in: in, out: bufio.NewScanner(outPipe)}
		started = append(started, n)
		if !n.out.Scan() || n.out.Text() != "ready" {
			return res, fmt.Errorf("node did not start: %q", n.out.Text())
		}
	}
	start := time.Now()
	for _, n := range started {
		fmt.Fprintln(n.in, "go")
	}
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		lost, err := countNotDelivered(ctx, store, w.N)
		if err != nil {
			return res, err
		}
		if lost == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-poll.C:
		}
	}
	elapsed := time.Since(start)
	sends, cpuMicros := 0, int64(0)
	for _, n := range started {
		n.in.Close() // stop
		var report struct {
			Sends int
			RSSMB float64 `json:"rss_mb"`
			CPU   int64   `json:"cpu_us"`
		}
		if n.out.Scan() {
			_ = json.Unmarshal(n.out.Bytes(), &report)
		}
		sends += report.Sends
		cpuMicros += report.CPU
		res.RSSMB = max(res.RSSMB, report.RSSMB)
	}
	res.Dup = max(sends-w.N, 0)
	res.Seconds = round(elapsed.Seconds(), 3)
	res.MsgsPerS = round(float64(w.N)/elapsed.Seconds(), 0)
	res.CPUPerMsg = round(float64(cpuMicros)/float64(w.N), 1)
	return res, nil
}

// ServeNode is one node of RunNodes: it prints "ready", starts dispatching
// from store with the in-process carrier when a line arrives on in, stops
// when in closes, and prints {"sends":N,"rss_mb":peak,"cpu_us":C}, C its
// CPU time while dispatching.
func ServeNode(ctx context.Context, store herald.Store, concurrency int, in io.Reader, out io.Writer) error {
	carrier := newCarrier(0, false)
	eng, err := newEngine(store, carrier, concurrency, herald.Admission{}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	sc := bufio.NewScanner(in)
	if !sc.Scan() {
		return nil
	}
	startCPU := cpuTime()
	if err := eng.Start(ctx); err != nil {
		return err
	}
	for sc.Scan() {
	}
	if err := eng.Stop(ctx); err != nil {
		return err
	}
	cpu := cpuTime() - startCPU
	return json.NewEncoder(out).Encode(map[string]any{"sends": carrier.total(), "rss_mb": round(peakRSSMB(), 1), "cpu_us": cpu.Microseconds()})
}

// newEngine makes the workloads' engine: one route "bench" on carrier, retry
// at once, three attempts, admission as given.
func newEngine(store herald.Store, carrier herald.Carrier, concurrency int, admission herald.Admission, obs herald.Observer) (*herald.Engine, error) {
	policy, _ := herald.ProfilePolicy(herald.ProfileChannel)
	policy.Retry = herald.RetryPolicy{Kind: herald.RetryConstant, Base: 0}
	policy.MaxAttempts = 3
	policy.Admission = admission
	return herald.New(herald.Config{
		Store:       store,
		Routes:      []herald.Route{{Name: "bench", Carrier: carrier, Policy: policy}},
		Concurrency: max(concurrency, 1),
		Observer:    obs,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tracer:      Tracer,
	})
}

func payload256() []byte {
	p := make([]byte, 256)
	for i := range p {
		p[i] = byte(i)
	}
	return p
}
