package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/bench"
	"github.com/heraldmq/herald/carrier/chirpstack"
	"github.com/heraldmq/herald/httpapi"
	cssim "github.com/heraldmq/herald/sim/chirpstack"
)

// loraWorkload is a workload through a LoRaWAN network: confirmed
// downlinks to Class-C devices of the ChirpStack simulator, enqueued over
// real gRPC, their events posted back to herald's HTTP ingress. Its
// carrier and network are wired here, where the concrete carriers are, so
// it is not one of bench.Workloads.
type loraWorkload struct {
	Name        string
	N           int // messages, to the devices in turn
	Devices     int // Class-C devices
	Concurrency int // dispatch concurrency
	// Posters is how many events the simulator posts to the ingress at
	// once (its HTTPConfig.Workers): each device's events in order.
	Posters int
	// Stall bounds the wait without a delivery before the run stops and
	// counts what is left as lost.
	Stall time.Duration
}

// w8 is the standard LoRaWAN workload. Its route is ungated (no lorawan
// 2 s spacing per network) and the simulator's delays are 0: it measures
// herald's path, not the network's pace.
var w8 = loraWorkload{Name: "W8", N: 10000, Devices: 1000, Concurrency: 64, Posters: 64, Stall: time.Minute}

// findLoRaWorkload reports whether name is a LoRaWAN workload (W8).
func findLoRaWorkload(name string) (loraWorkload, bool) {
	if strings.EqualFold(strings.TrimSpace(name), w8.Name) {
		return w8, true
	}
	return loraWorkload{}, false
}

// The W8 network's credentials: the simulator's API token and the secret
// its HTTP integration sends to the ingress.
const (
	benchLoRaToken   = "bench-chirpstack-api-token"
	benchLoRaIngress = "bench-chirpstack-ingress-secret"
	benchLoRaRoute   = "lora"
	benchLoRaFirst   = 0x70b3d57ed0000000 // the first device's DevEUI
)

// runLoRaWorkload runs w on a fresh store of the kind storeURL names (see
// withBenchStore).
func runLoRaWorkload(cmd *cobra.Command, w loraWorkload, storeURL string) (bench.Result, error) {
	var res bench.Result
	err := withBenchStore(cmd, w.Name, storeURL, func(peer string, open func() (herald.Store, error)) (err error) {
		res, err = runLoRa(cmd.Context(), w, peer, open, cmd.ErrOrStderr())
		return err
	})
	return res, err
}

// runLoRa runs w on a store opened by newStore and reports it under peer:
// it starts the simulator and herald's HTTP API on loopback ports,
// preloads the messages, then times the engine from its start until every
// message is DELIVERY_SUCCESSFUL (or none has been for w.Stall). Lost
// counts the messages that are not; dup the transmissions beyond one per
// message; events_per_s the events the ingress answered 204 while timed.
// Events refused or not posted are reported to warn.
func runLoRa(ctx context.Context, w loraWorkload, peer string, newStore func() (herald.Store, error), warn io.Writer) (bench.Result, error) {
	res := bench.Result{Peer: peer, Workload: w.Name, N: w.N}
	store, err := newStore()
	if err != nil {
		return res, err
	}
	defer store.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	// herald's listener first: the simulator's integration posts to it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	defer ln.Close()
	devices := cssim.SequentialDevices(w.Devices, benchLoRaFirst, cssim.ClassC, 0)
	sim, err := cssim.New(cssim.Config{
		Tokens:  []string{benchLoRaToken},
		Devices: devices,
		HTTP: &cssim.HTTPConfig{
			URL:     "http://" + ln.Addr().String() + "/v1/ingress/" + benchLoRaRoute,
			Headers: map[string]string{"Authorization": "Bearer " + benchLoRaIngress},
			Workers: w.Posters,
		},
		DisableRecords: true,
		Seed:           8,
	})
	if err != nil {
		return res, err
	}
	if err := sim.Start(); err != nil {
		return res, err
	}
	defer sim.Close()

	carrier, err := chirpstack.New(chirpstack.Config{Server: sim.Addr(), Token: benchLoRaToken, IngressSecret: benchLoRaIngress, Logger: quiet})
	if err != nil {
		return res, err
	}
	defer carrier.Close()
	policy, err := herald.ProfilePolicy(herald.ProfileLoRaWAN)
	if err != nil {
		return res, err
	}
	policy.Admission = herald.Admission{} // ungated: the path, not the flood lock
	done := newDeliveredCounter()
	eng, err := herald.New(herald.Config{
		Store:       store,
		Routes:      []herald.Route{{Name: benchLoRaRoute, Carrier: carrier, Policy: policy}},
		Concurrency: max(w.Concurrency, 1),
		Observer:    done,
		Logger:      quiet,
	})
	if err != nil {
		return res, err
	}
	ingress := &ingressCounter{next: httpapi.New(httpapi.Config{Engine: eng, Logger: quiet})}
	srv := &http.Server{Handler: ingress, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		_ = srv.Close()
		<-served
	}()

	if err := preloadLoRa(ctx, eng, w, devices); err != nil {
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
	events := ingress.ok.Load()
	if err := eng.Stop(ctx); err != nil {
		return res, err
	}
	res.Complete(elapsed, cpu)
	res.EventsPerS = bench.Rate(int(events), elapsed)
	if res.Lost, err = bench.NotDelivered(ctx, store, w.N); err != nil {
		return res, err
	}
	res.Dup = max(sim.Stats().Transmitted-w.N, 0)
	if failed := ingress.failed.Load(); failed > 0 {
		fmt.Fprintf(warn, "%s: the ingress refused %d of %d events\n", w.Name, failed, failed+ingress.ok.Load())
	}
	if stats := sim.Stats(); stats.EventsFailed > 0 {
		fmt.Fprintf(warn, "%s: the simulator failed to post %d of %d events\n", w.Name, stats.EventsFailed, stats.Events)
	}
	return res, nil
}

// preloadLoRa stores w's messages, confirmed downlinks of a few bytes to
// the devices in turn, from a few goroutines.
func preloadLoRa(ctx context.Context, eng *herald.Engine, w loraWorkload, devices []cssim.Device) error {
	return bench.Send(ctx, eng, w.N, 8, func(i int64) herald.SendRequest {
		i-- // from 0
		return herald.SendRequest{
			Route:   benchLoRaRoute,
			Target:  devices[i%int64(len(devices))].DevEUI,
			Payload: []byte{0x01, byte(i >> 8), byte(i)},
			Params:  map[string]string{chirpstack.ParamFPort: "10", chirpstack.ParamConfirmed: "true"},
		}
	})
}

// ingressCounter counts the answers of the ingress: 204 (the event is
// durable) and any other.
type ingressCounter struct {
	next       http.Handler
	ok, failed atomic.Int64
}

func (c *ingressCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/v1/ingress/") {
		c.next.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	c.next.ServeHTTP(sw, r)
	if sw.status == http.StatusNoContent {
		c.ok.Add(1)
	} else {
		c.failed.Add(1)
	}
}

// statusWriter notes the status a handler answers.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// errStalled: no message was delivered for the stall bound.
var errStalled = errors.New("no delivery for a while")

// deliveredCounter is an Observer that counts the messages delivered.
type deliveredCounter struct {
	n       atomic.Int64
	changed chan struct{} // a token after each delivery
}

func newDeliveredCounter() *deliveredCounter {
	return &deliveredCounter{changed: make(chan struct{}, 1)}
}

func (d *deliveredCounter) Transitioned(string, herald.Status, herald.Status) {}
func (d *deliveredCounter) Problem(string)                                    {}
func (d *deliveredCounter) Throttled(string, string, bool)                    {}
func (d *deliveredCounter) Inbound(string, string, string)                    {}
func (d *deliveredCounter) Refused(string, string)                            {}
func (d *deliveredCounter) Delivered(string, time.Duration) {
	d.n.Add(1)
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// wait waits until target messages are delivered; errStalled when none is
// for stall.
func (d *deliveredCounter) wait(ctx context.Context, target int64, stall time.Duration) error {
	timer := time.NewTimer(stall)
	defer timer.Stop()
	for d.n.Load() < target {
		select {
		case <-d.changed:
			timer.Reset(stall)
		case <-timer.C:
			return errStalled
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
