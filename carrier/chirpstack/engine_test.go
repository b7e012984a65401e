package chirpstack

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chirpstack/chirpstack/api/go/v4/api"
	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	"github.com/heraldmq/herald/internal/mqtttest"
	csim "github.com/heraldmq/herald/sim/chirpstack"
	"github.com/heraldmq/herald/store/sqlite"
)

// engineRig is a herald engine on a fresh SQLite store and a fake clock,
// with one lorawan route "lora" on carrier c.
type engineRig struct {
	t     *testing.T
	clock *clock.Fake
	eng   *herald.Engine
}

func newEngineRig(t *testing.T, c *Carrier, adjust ...func(*herald.Policy)) *engineRig {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := herald.ProfilePolicy(herald.ProfileLoRaWAN)
	if err != nil {
		t.Fatal(err)
	}
	p.Admission = herald.Admission{}
	for _, f := range adjust {
		f(&p)
	}
	fc := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	eng, err := herald.New(herald.Config{
		Store: st, Routes: []herald.Route{{Name: "lora", Carrier: c, Policy: p}}, Clock: fc,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Random: func() float64 { return 0 },
		PollInterval: time.Millisecond, ReapInterval: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := eng.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return &engineRig{t: t, clock: fc, eng: eng}
}

// newMQTTEngineRig is newEngineRig on a carrier that sends by MQTT
// (send: mqtt) to the simulator, through a private broker, and asks its
// gRPC server for the queue when withServer is set; adjust changes the
// simulator's config. It returns once the route's listener subscribed.
func newMQTTEngineRig(t *testing.T, withServer bool, adjust func(*csim.Config)) (*engineRig, *csim.Sim) {
	t.Helper()
	broker := mqtttest.Start(t).URL()
	cfg := simConfig()
	cfg.MQTT = &csim.MQTTConfig{Server: broker, QoS: 1}
	adjust(&cfg)
	s := startSim(t, cfg)
	cc := Config{Send: SendMQTT, MQTT: &MQTTConfig{URL: broker, ApplicationID: csim.DefaultApplicationID, ClientID: "herald-node-a"}}
	if withServer {
		cc.Server, cc.Token = s.Addr(), token
	}
	c := newCarrier(t, cc)
	subscribed := make(chan struct{}, 10)
	c.subscribed = func() { subscribed <- struct{}{} }
	r := newEngineRig(t, c)
	select {
	case <-subscribed:
	case <-time.After(timeout):
		t.Fatal("the route's listener did not subscribe")
	}
	return r, s
}

func (r *engineRig) get(id string) *herald.Message {
	r.t.Helper()
	m, err := r.eng.Get(context.Background(), "acme", id)
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

// waitFor waits, in real time, until message id is in status want at
// attempt attempt.
func (r *engineRig) waitFor(id string, want herald.Status, attempt int) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m := r.get(id)
		if m.Status == want && m.Attempt == attempt {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("message is %s at attempt %d; want %s at attempt %d (last error %q)", m.Status, m.Attempt, want, attempt, m.LastError)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *engineRig) advance(d time.Duration) {
	r.t.Helper()
	waitUntil(r.t, "engine idle", r.eng.Idle)
	r.clock.Advance(d)
	waitUntil(r.t, "engine idle", r.eng.Idle)
}

// TestSendMQTTLateCopyOfAnAttemptsNackLeavesTheRetryAlone: with send: mqtt
// the queue item id is the message id at every attempt. Attempt 1 of a
// confirmed downlink is not acknowledged (ChirpStack's ack with
// acknowledged=false); herald retries, and attempt 2 is queued in
// ChirpStack. A second herald node, each with its own MQTT session as
// docs/CONFIG.md asks, gets its copy of that ack only now (it was restarting and
// the broker kept the event for its session; or it was just slower). The
// copy is the event already applied: it must not fail attempt 2, which
// ChirpStack still holds and may transmit.
func TestSendMQTTLateCopyOfAnAttemptsNackLeavesTheRetryAlone(t *testing.T) {
	r, s := newMQTTEngineRig(t, true, func(cfg *csim.Config) {
		cfg.Loss = 1      // the device hears nothing: ChirpStack nacks at its next uplink
		cfg.AckDelay = -1 // the device sends only the uplinks the test asks for
	})

	m, _, err := r.eng.Send(context.Background(), "acme", herald.SendRequest{Route: "lora", Target: devA, Payload: []byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor(m.ID, herald.StatusDeliveredToNS, 1)
	waitUntil(t, "attempt 1 queued in ChirpStack", func() bool { q, _ := s.Queue(devA); return len(q) == 1 })
	if _, err := s.Uplink(devA, 1, []byte{9}); err != nil { // the Class-A device's receive window: item transmitted, lost
		t.Fatal(err)
	}
	r.waitFor(m.ID, herald.StatusSentToDevice, 1)
	if _, err := s.Uplink(devA, 1, []byte{9}); err != nil { // no ACK bit: ChirpStack sends ack acknowledged=false
		t.Fatal(err)
	}
	r.waitFor(m.ID, herald.StatusToRetry, 1)
	nack := waitEvent(t, s, func(e csim.Event) bool { return e.Type == "ack" })
	body, err := csim.Marshal(nack.Message, csim.JSON)
	if err != nil {
		t.Fatal(err)
	}

	r.advance(time.Minute) // the retry's backoff
	r.waitFor(m.ID, herald.StatusDeliveredToNS, 2)
	waitUntil(t, "attempt 2 queued in ChirpStack", func() bool { q, _ := s.Queue(devA); return len(q) == 1 })

	// Node B's copy of attempt 1's nack (the same bytes from the broker).
	if err := r.eng.Ingest(context.Background(), "lora", "ack", ContentTypeJSON, body); err != nil {
		t.Fatal(err)
	}
	r.advance(time.Millisecond)
	if got := r.get(m.ID); got.Status != herald.StatusDeliveredToNS || got.Attempt != 2 {
		t.Fatalf("attempt 2, queued in ChirpStack, is %s at attempt %d (%q) after a late copy of attempt 1's nack; want DELIVERED_TO_NS at attempt 2",
			got.Status, got.Attempt, got.Timeline[len(got.Timeline)-1].Reason)
	}
}

// failGetQueues fails the next n GetQueue calls as a ChirpStack that is
// briefly unreachable does (Unavailable).
type failGetQueues struct {
	api.DeviceServiceClient
	n atomic.Int32
}

func (f *failGetQueues) GetQueue(ctx context.Context, in *api.GetDeviceQueueItemsRequest, opts ...grpc.CallOption) (*api.GetDeviceQueueItemsResponse, error) {
	if f.n.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "connection refused")
	}
	return f.DeviceServiceClient.GetQueue(ctx, in, opts...)
}

// TestCarrierTimeoutGetQueueErrorIsNotGone: at the carrier timeout herald
// asks ChirpStack's queue (GetQueue): item still queued -> extend, gone with
// no txack -> retry (issue 11). When that one call fails (ChirpStack's API
// restarting: Unavailable), herald knows neither: the message must wait
// for the next check, neither retried (ChirpStack still holds its item and
// will transmit it) nor, at its last attempt, failed.
func TestCarrierTimeoutGetQueueErrorIsNotGone(t *testing.T) {
	for _, last := range []bool{false, true} {
		name := "retry"
		if last {
			name = "last attempt"
		}
		t.Run(name, func(t *testing.T) {
			s := startSim(t, simConfig())
			c := newCarrier(t, Config{Server: s.Addr(), Token: token})
			flaky := &failGetQueues{DeviceServiceClient: c.devices}
			c.devices = flaky
			r := newEngineRig(t, c, func(p *herald.Policy) {
				if last {
					p.MaxAttempts = 1
				}
			})
			m, _, err := r.eng.Send(context.Background(), "acme", herald.SendRequest{Route: "lora", Target: devA, Payload: []byte{1}})
			if err != nil {
				t.Fatal(err)
			}
			r.waitFor(m.ID, herald.StatusDeliveredToNS, 1)
			item := r.get(m.ID).ExternalID

			flaky.n.Store(1)
			r.advance(15 * time.Minute) // the carrier timeout: GetQueue answers Unavailable
			q, _ := s.Queue(devA)
			if len(q) != 1 || q[0].ID != item {
				t.Fatalf("ChirpStack's queue %+v; want the item %s still there", q, item)
			}
			if got := r.get(m.ID); got.Status != herald.StatusDeliveredToNS || got.Attempt != 1 {
				t.Fatalf("with its item %s still queued in ChirpStack (GetQueue failed once): %s at attempt %d (%q); want DELIVERED_TO_NS at attempt 1, checked again",
					item, got.Status, got.Attempt, got.Timeline[len(got.Timeline)-1].Reason)
			}
		})
	}
}

// TestCarrierTimeoutGetQueueFailingLongEnds: GetQueue keeps failing (its
// errors transient). The reaper checks again a minute at a time, but not
// for ever: once the stage is twice the carrier timeout old, the message
// is retried as if its item were gone.
func TestCarrierTimeoutGetQueueFailingLongEnds(t *testing.T) {
	s := startSim(t, simConfig())
	c := newCarrier(t, Config{Server: s.Addr(), Token: token})
	flaky := &failGetQueues{DeviceServiceClient: c.devices}
	c.devices = flaky
	r := newEngineRig(t, c)
	m, _, err := r.eng.Send(context.Background(), "acme", herald.SendRequest{Route: "lora", Target: devA, Payload: []byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor(m.ID, herald.StatusDeliveredToNS, 1)
	flaky.n.Store(1 << 20)
	r.advance(15 * time.Minute) // the carrier timeout: checked again a minute later
	for range 14 {
		r.advance(time.Minute)
		if got := r.get(m.ID); got.Status != herald.StatusDeliveredToNS {
			t.Fatalf("%v after acceptance, GetQueue failing: %s; want DELIVERED_TO_NS until 30 min", r.clock.Now().Sub(got.Timeline[1].At), got.Status)
		}
	}
	r.advance(time.Minute) // 30 min: twice the carrier timeout
	if got := r.get(m.ID); got.Status != herald.StatusToRetry || !strings.HasPrefix(got.LastError, herald.RelayTimeoutReason+" (") {
		t.Fatalf("at twice the carrier timeout, GetQueue failing: %s (%q); want TO_RETRY, the carrier timeout", got.Status, got.LastError)
	}
}

// TestSendMQTTWithoutServerCarrierTimeoutEnds: a route with send: mqtt and
// no gRPC server (a valid configuration: the downlink goes by the MQTT
// integration) cannot ask ChirpStack's queue: every StillQueued answers
// errNoServer. A Class-A device that never uplinks leaves the downlink
// queued, with no txack. At the carrier timeout (15 min) the message must
// be retried or failed: a check that can never answer is not a passing
// outage, and extending it a minute at a time would keep it for ever (the
// lorawan profile has no max age).
func TestSendMQTTWithoutServerCarrierTimeoutEnds(t *testing.T) {
	r, s := newMQTTEngineRig(t, false, func(cfg *csim.Config) {
		cfg.AckDelay = -1 // the device sends no uplink
	})
	m, _, err := r.eng.Send(context.Background(), "acme", herald.SendRequest{Route: "lora", Target: devA, Payload: []byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor(m.ID, herald.StatusDeliveredToNS, 1)
	waitUntil(t, "the downlink queued in ChirpStack", func() bool { q, _ := s.Queue(devA); return len(q) == 1 })

	r.advance(15 * time.Minute) // the carrier timeout
	for range 6 * 60 {          // six hours, a minute at a time
		r.advance(time.Minute)
	}
	if got := r.get(m.ID); got.Status == herald.StatusDeliveredToNS && got.Attempt == 1 {
		t.Fatalf("6 h past its 15 min carrier timeout, with no gRPC server to check ChirpStack's queue: still %s at attempt 1, deadline %v ahead, %d timeline entries; want it retried or failed",
			got.Status, got.Deadline.Sub(r.clock.Now()), len(got.Timeline))
	}
}

// TestLateAckAfterTheDeviceTimeoutIsAdopted: a confirmed downlink to a
// Class-A device is transmitted (txack); the device's answer rides on its
// next uplink, which comes only after herald's device timeout (12 s) moved
// the message to TO_RETRY, and before its retry (2 s later) is sent. The
// ack and its uplink are a late answer of attempt 1: the message ends
// DELIVERY_SUCCESSFUL, and ChirpStack got one downlink command, not two.
func TestLateAckAfterTheDeviceTimeoutIsAdopted(t *testing.T) {
	r, s := newMQTTEngineRig(t, true, func(cfg *csim.Config) {
		cfg.AckDelay = -1 // the device answers on the uplink the test asks for
	})
	m, _, err := r.eng.Send(context.Background(), "acme", herald.SendRequest{Route: "lora", Target: devA, Payload: []byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor(m.ID, herald.StatusDeliveredToNS, 1)
	waitUntil(t, "the downlink queued in ChirpStack", func() bool { q, _ := s.Queue(devA); return len(q) == 1 })
	if _, err := s.Uplink(devA, 1, []byte{9}); err != nil { // the receive window: the downlink goes out
		t.Fatal(err)
	}
	r.waitFor(m.ID, herald.StatusSentToDevice, 1)
	r.advance(12 * time.Second) // the device timeout
	r.waitFor(m.ID, herald.StatusToRetry, 1)
	r.advance(1500 * time.Millisecond)                      // its retry is due at 2 s
	if _, err := s.Uplink(devA, 1, []byte{9}); err != nil { // the device's answer, with the ACK bit
		t.Fatal(err)
	}
	r.waitFor(m.ID, herald.StatusDeliverySuccessful, 1)
	got := r.get(m.ID)
	if last := got.Timeline[len(got.Timeline)-1]; last.From != herald.StatusToRetry || last.Reason != "late answer of attempt 1 adopted: acknowledged by the device" {
		t.Errorf("last timeline entry %s -> %s %q, want from TO_RETRY, the late ack adopted", last.From, last.To, last.Reason)
	}
	r.advance(time.Minute) // past the retry's time
	if n := len(s.Commands()); n != 1 {
		t.Errorf("ChirpStack got %d downlink commands, want 1", n)
	}
}
