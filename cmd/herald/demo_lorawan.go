package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/client"
	cssim "github.com/heraldmq/herald/sim/chirpstack"
)

// The demo's LoRaWAN fleet: Class-C devices of one ChirpStack application,
// in its network server simulator.
var demoDevices = []string{"0004a30b001c0a01", "0004a30b001c0a02", "0004a30b001c0a03", "0004a30b001c0a04"}

// The environment variables of the demo's chirpstack route: the
// simulator's API token, and the secret its HTTP integration sends to
// herald's ingress.
const (
	demoChirpStackTokenEnv   = "HERALD_DEMO_CHIRPSTACK_TOKEN"
	demoChirpStackIngressEnv = "HERALD_DEMO_CHIRPSTACK_INGRESS"
	demoChirpStackToken      = "demo-chirpstack-api-token"
	demoChirpStackIngress    = "demo-chirpstack-ingress-secret"
)

// demoNackRate is the share of confirmed downlinks the simulated devices
// answer without the ACK bit: herald retries those.
const demoNackRate = 0.3

// demoSeed makes the simulated network's draws repeat from run to run.
const demoSeed = 7

// startDemoNetwork starts the ChirpStack simulator whose HTTP integration
// posts its events to herald's ingress at herald (host:port), and sets the
// demo route's environment. It runs until ctx ends.
func startDemoNetwork(ctx context.Context, herald string) (*cssim.Sim, error) {
	devices := make([]cssim.Device, len(demoDevices))
	for i, eui := range demoDevices {
		devices[i] = cssim.Device{DevEUI: eui, Class: cssim.ClassC, Name: fmt.Sprintf("display-%d", i+1)}
	}
	sim, err := cssim.New(cssim.Config{
		Tokens: []string{demoChirpStackToken}, Devices: devices,
		NackRate: demoNackRate, Seed: demoSeed,
		HTTP: &cssim.HTTPConfig{URL: "http://" + herald + "/v1/ingress/lora",
			Headers: map[string]string{"Authorization": "Bearer " + demoChirpStackIngress}},
	})
	if err != nil {
		return nil, err
	}
	if err := sim.Start(); err != nil {
		return nil, err
	}
	go func() {
		<-ctx.Done()
		_ = sim.Close()
	}()
	for env, v := range map[string]string{demoChirpStackTokenEnv: demoChirpStackToken, demoChirpStackIngressEnv: demoChirpStackIngress} {
		if err := os.Setenv(env, v); err != nil {
			return nil, err
		}
	}
	return sim, nil
}

// demoLoRaRoute is the demo's chirpstack route, to the simulator at addr.
// Its lane's spacing is 200 ms instead of the lorawan profile's 2 s flood
// lock, so that the demo does not take long.
func demoLoRaRoute(addr string) string {
	return fmt.Sprintf(`  - name: lora
    carrier: chirpstack
    server: %s
    token_env: %s
    ingress_secret_env: %s
    admission: {spacing: 200ms}
    policy:
      retry: {kind: exponential, base: 500ms, multiplier: 2, max: 4s, jitter: 0.2}
      max_attempts: 6
`, addr, demoChirpStackTokenEnv, demoChirpStackIngressEnv)
}

// demoDownlinks are the demo's LoRaWAN downlinks: one confirmed command to
// each device (a few of which the devices NACK, so herald retries them),
// an unconfirmed one, and one too big for the devices (the network drops
// it at transmission: it fails at once).
func demoDownlinks() []demoSend {
	var sends []demoSend
	for i, eui := range demoDevices {
		sends = append(sends, demoSend{route: "lora", target: eui, payload: []byte{0x01, byte(i + 1), 0x10},
			params: map[string]string{"f_port": "10"}})
	}
	sends = append(sends,
		demoSend{route: "lora", target: demoDevices[0], payload: []byte{0x02, 0x00},
			params: map[string]string{"f_port": "10", "confirmed": "false"}},
		demoSend{route: "lora", target: demoDevices[1], payload: bytes.Repeat([]byte{0xab}, 80),
			params: map[string]string{"f_port": "10"}})
	return sends
}

// printNetwork says what the simulated network did and what became of the
// downlinks.
func printNetwork(ctx context.Context, out io.Writer, api *client.Client, ids []string, sim *cssim.Sim) error {
	s := sim.Stats()
	fmt.Fprintf(out, "\nChirpStack: %d queue items enqueued over gRPC, %d transmitted, %d acknowledged by the devices, %d NACKed, %d dropped as too big; %d events posted to herald's ingress\n",
		s.Enqueued, s.Transmitted, s.Acked, s.Nacked, s.Oversize, s.Events)
	for i, id := range ids {
		v, err := api.Get(ctx, id)
		if err != nil {
			return err
		}
		attempts := 0
		for _, e := range v.Timeline {
			attempts = max(attempts, e.Attempt)
		}
		line := fmt.Sprintf("  #%-3d to %s  %s at attempt %d", i+1, v.Target, v.Status, attempts)
		switch {
		case v.Status == herald.StatusDeliveryFailed:
			line += ": " + v.LastError
		case attempts > 1:
			line += " (before: " + v.LastError + ")"
		}
		fmt.Fprintln(out, line)
	}
	return nil
}

// resolveListen returns listen with a free port in place of port 0: the
// simulator's integration must know herald's address before it starts.
func resolveListen(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port != "0" {
		return listen, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
