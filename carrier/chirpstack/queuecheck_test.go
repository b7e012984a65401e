package chirpstack

import (
	"context"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/mqtttest"
	csim "github.com/heraldmq/herald/sim/chirpstack"
)

// TestSendMQTTWithoutServerCarrierTimeoutEnds: a route with send: mqtt and
// no gRPC server (a valid configuration: the downlink goes by the MQTT
// integration) cannot ask ChirpStack's queue: every StillQueued answers
// errNoServer. A Class-A device that never uplinks leaves the downlink
// queued, with no txack. At the carrier timeout (15 min) the message must
// be retried or failed: a check that can never answer is not a passing
// outage, and extending it a minute at a time would keep it for ever (the
// lorawan profile has no max age).
func TestSendMQTTWithoutServerCarrierTimeoutEnds(t *testing.T) {
	broker := mqtttest.Start(t).URL()
	cfg := simConfig()
	cfg.MQTT = &csim.MQTTConfig{Server: broker, QoS: 1}
	cfg.AckDelay = -1 // the device sends no uplink
	s := startSim(t, cfg)
	c := newCarrier(t, Config{Send: SendMQTT,
		MQTT: &MQTTConfig{URL: broker, ApplicationID: csim.DefaultApplicationID, ClientID: "herald-node-a"}})
	subscribed := make(chan struct{}, 10)
	c.subscribed = func() { subscribed <- struct{}{} }
	r := newEngineRig(t, c)
	select {
	case <-subscribed:
	case <-time.After(timeout):
		t.Fatal("the route's listener did not subscribe")
	}
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
