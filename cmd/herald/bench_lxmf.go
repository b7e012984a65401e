package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/bench"
	lxmfcarrier "github.com/heraldmq/herald/carrier/lxmf"
	simr "github.com/heraldmq/herald/sim/reticulum"
)

// meshWorkload is a workload over LXMF: direct messages to the
// recipients of the Reticulum simulator, through its transport node over
// TCP, each proved back through the carrier's events and herald's inbox.
// Its carrier and network are wired here, where the concrete carriers
// are, so it is not one of bench.Workloads.
type meshWorkload struct {
	Name       string
	N          int // messages, to the recipients in turn
	Recipients int
	// Stall bounds the wait without a delivery before the run stops and
	// counts what is left as lost.
	Stall time.Duration
}

// The LXMF workloads: one recipient (its lane takes one message at a
// time, the lxmf profile's), and 100.
var (
	w10 = meshWorkload{Name: "W10", N: 1000, Recipients: 1, Stall: time.Minute}
	w11 = meshWorkload{Name: "W11", N: 5000, Recipients: 100, Stall: time.Minute}
)

// findMeshWorkload reports whether name is an LXMF workload (W10, W11).
func findMeshWorkload(name string) (meshWorkload, bool) {
	for _, w := range []meshWorkload{w10, w11} {
		if strings.EqualFold(strings.TrimSpace(name), w.Name) {
			return w, true
		}
	}
	return meshWorkload{}, false
}

// benchMeshRoute is the LXMF workloads' route.
const benchMeshRoute = "mesh"

// runMeshWorkload runs w on a fresh store of the kind storeURL names (see
// withBenchStore).
func runMeshWorkload(cmd *cobra.Command, w meshWorkload, storeURL string) (bench.Result, error) {
	var res bench.Result
	err := withBenchStore(cmd, w.Name, storeURL, func(peer string, open func() (herald.Store, error)) (err error) {
		res, err = runMesh(cmd.Context(), w, peer, open, cmd.ErrOrStderr())
		return err
	})
	return res, err
}

// runMesh runs w on a store opened by newStore and reports it under peer:
// it starts the simulator and herald's endpoint, learns every recipient's
// path, preloads the messages, then times the engine from its start until
// every message is DELIVERY_SUCCESSFUL (or none has been for w.Stall).
// Lost counts the messages that are not; dup the copies a recipient got
// beyond one a message.
func runMesh(ctx context.Context, w meshWorkload, peer string, newStore func() (herald.Store, error), warn io.Writer) (bench.Result, error) {
	res := bench.Result{Peer: peer, Workload: w.Name, N: w.N}
	store, err := newStore()
	if err != nil {
		return res, err
	}
	defer store.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sim, err := simr.Start(simr.Config{Listen: "127.0.0.1:0", Seed: 10})
	if err != nil {
		return res, err
	}
	defer sim.Close()
	peers := make([]*simr.Peer, w.Recipients)
	for i := range peers {
		if peers[i], err = sim.AddPeer(simr.PeerConfig{Name: fmt.Sprintf("r%d", i)}); err != nil {
			return res, err
		}
	}
	dir, err := os.MkdirTemp("", "herald-bench-lxmf-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	ep, err := lxmfcarrier.NewEndpoint(lxmfcarrier.EndpointConfig{TCP: sim.Addr(), IdentityFile: filepath.Join(dir, "identity"), Logger: quiet})
	if err != nil {
		return res, err
	}
	carrier, err := lxmfcarrier.New(lxmfcarrier.Config{Endpoint: ep})
	if err != nil {
		return res, err
	}
	defer carrier.Close()
	pathCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, p := range peers {
		if err := ep.AwaitPath(pathCtx, p.Address()); err != nil {
			return res, fmt.Errorf("no path to recipient %s: %w", p.Name(), err)
		}
	}
	policy, err := herald.ProfilePolicy(herald.ProfileLXMF)
	if err != nil {
		return res, err
	}
	done := newDeliveredCounter()
	eng, err := herald.New(herald.Config{Store: store, Routes: []herald.Route{{Name: benchMeshRoute, Carrier: carrier, Policy: policy}},
		Observer: done, Logger: quiet})
	if err != nil {
		return res, err
	}
	if err := bench.Send(ctx, eng, w.N, 8, func(i int64) herald.SendRequest {
		return herald.SendRequest{Route: benchMeshRoute, Target: peers[(i-1)%int64(len(peers))].Address().String(),
			Text: fmt.Sprintf("message %d: %s", i, strings.Repeat("x", 64))}
	}); err != nil {
		return res, err
	}
	start, startCPU := time.Now(), bench.CPUTime()
	if err := eng.Start(ctx); err != nil {
		return res, err
	}
	switch err := done.wait(ctx, int64(w.N), w.Stall); {
	case errors.Is(err, errStalled):
		fmt.Fprintf(warn, "%s: no message delivered for %v: stopped, the rest counted as lost\n", w.Name, w.Stall)
	case err != nil:
		_ = eng.Stop(context.WithoutCancel(ctx))
		return res, err
	}
	elapsed, cpu := time.Since(start), bench.CPUTime()-startCPU
	if err := eng.Stop(ctx); err != nil {
		return res, err
	}
	res.Complete(elapsed, cpu)
	if res.Lost, err = bench.NotDelivered(ctx, store, w.N); err != nil {
		return res, err
	}
	for _, p := range peers {
		res.Dup += p.Repeats()
	}
	return res, nil
}
