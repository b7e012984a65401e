package chirpstack

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	csim "github.com/heraldmq/herald/sim/chirpstack"
)

const (
	token   = "test-token"
	devA    = "0102030405060701" // Class A: receives only after its uplinks
	devC    = "0102030405060702" // Class C: receives at once
	timeout = 10 * time.Second
	// msgID is a herald message id (UUIDv7-shaped).
	msgID = "01980c3e-5b2a-7c41-8d2e-3f4a5b6c7d8e"
)

// simConfig is a perfect network with one Class-A and one Class-C device.
func simConfig() csim.Config {
	return csim.Config{
		Tokens:  []string{token},
		Devices: []csim.Device{{DevEUI: devA, Class: csim.ClassA}, {DevEUI: devC, Class: csim.ClassC}},
		Seed:    1,
	}
}

// startSim runs a simulator for the test on a free loopback port.
func startSim(t *testing.T, cfg csim.Config) *csim.Sim {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	s, err := csim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newCarrier makes a carrier for the test and closes it after.
func newCarrier(t *testing.T, cfg Config) *Carrier {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testLogger logs to the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// message is a valid message to dev.
func message(dev string, payload []byte, params map[string]string) *herald.Message {
	return &herald.Message{ID: msgID, Route: "lora", Target: dev, Payload: payload, Params: params}
}

// ctxT is a context bounded by timeout, cancelled when the test ends.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

func isPermanent(err error) bool {
	var pe *herald.PermanentError
	return errors.As(err, &pe)
}

// waitEvent waits for the simulator's first event matching match.
func waitEvent(t *testing.T, s *csim.Sim, match func(csim.Event) bool) csim.Event {
	t.Helper()
	e, err := s.WaitFor(ctxT(t), match)
	if err != nil {
		t.Fatalf("waiting for an event: %v", err)
	}
	return e
}

// waitUntil polls cond until it holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hook is one request of the simulator's HTTP integration.
type hook struct {
	Event, ContentType string
	Body               []byte
}

// receiver is an HTTP integration endpoint that hands each request to the
// test.
func receiver(t *testing.T) (string, chan hook) {
	t.Helper()
	ch := make(chan hook, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- hook{Event: r.URL.Query().Get("event"), ContentType: r.Header.Get("Content-Type"), Body: b}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/ingress/lora", ch
}

// nextHook returns the next request, which must be of event type want.
func nextHook(t *testing.T, ch chan hook, want string) hook {
	t.Helper()
	select {
	case h := <-ch:
		if h.Event != want {
			t.Fatalf("next event is %q (%s); want %q", h.Event, h.Body, want)
		}
		return h
	case <-time.After(timeout):
		t.Fatalf("no %q event within %v", want, timeout)
	}
	return hook{}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
