package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/mqtttest"
	"github.com/heraldmq/herald/internal/redistest"
	cssim "github.com/heraldmq/herald/sim/chirpstack"
)

// The ChirpStack API token and ingress secret of the LoRaWAN tests.
const (
	loraToken   = "lora-test-token"
	loraIngress = "lora-test-ingress"
)

// loraDevices returns n Class-C devices.
func loraDevices(n int) []cssim.Device {
	devs := make([]cssim.Device, n)
	for i := range devs {
		devs[i] = cssim.Device{DevEUI: fmt.Sprintf("70b3d57ed00000%02x", i+1), Class: cssim.ClassC}
	}
	return devs
}

// startNetwork starts a ChirpStack simulator with cfg's devices and
// integrations, and the test's token.
func startNetwork(t *testing.T, cfg cssim.Config) *cssim.Sim {
	t.Helper()
	cfg.Tokens, cfg.Seed = []string{loraToken}, 1
	sim, err := cssim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return sim
}

// loraConfig is a herald config with one chirpstack route "lora" to the
// simulator at server, its events by MQTT when broker is set (the session
// clientID) and by the HTTP ingress always.
func loraConfig(listen, store, server, send, broker, clientID string) string {
	cfg := fmt.Sprintf(`listen: %s
store: %s
api_keys:
  - {key_env: HERALD_TEST_KEY, tenant: test}
routes:
  - name: lora
    carrier: chirpstack
    server: %s
    token_env: HERALD_TEST_LORA_TOKEN
    ingress_secret_env: HERALD_TEST_LORA_INGRESS
    send: %s
    admission: {}
    policy: {retry: {kind: constant, base: 100ms}}
`, listen, store, server, send)
	if broker != "" {
		cfg += fmt.Sprintf("    mqtt: {url: %s, application_id: %s, client_id: %s}\n", broker, cssim.DefaultApplicationID, clientID)
	}
	return cfg
}

// setLoRaEnv sets the variables the route names.
func setLoRaEnv(t *testing.T) {
	t.Setenv("HERALD_TEST_KEY", "crash-key")
	t.Setenv("HERALD_TEST_LORA_TOKEN", loraToken)
	t.Setenv("HERALD_TEST_LORA_INGRESS", loraIngress)
}

// sendDownlinks sends n confirmed downlinks through node, to devs in turn,
// and returns their ids.
func sendDownlinks(t *testing.T, node *serverProc, devs []cssim.Device, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		var view struct{ ID string }
		body := map[string]any{"route": "lora", "target": devs[i%len(devs)].DevEUI, "payload": []byte{byte(i)}, "params": map[string]string{"f_port": "5"}}
		if code, err := node.call("POST", "/v1/messages", body, &view); err != nil || code != http.StatusAccepted {
			t.Fatalf("send: %d %v", code, err)
		}
		ids[i] = view.ID
	}
	return ids
}

// waitStatus waits until every message of ids has status want, as node
// reads them, and returns their views.
func waitStatus(t *testing.T, node *serverProc, ids []string, want herald.Status, within time.Duration) []herald.MessageView {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		views := make([]herald.MessageView, len(ids))
		done := 0
		for i, id := range ids {
			if _, err := node.call("GET", "/v1/messages/"+id, nil, &views[i]); err == nil && views[i].Status == want {
				done++
			}
		}
		if done == len(ids) {
			return views
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages %s after %v; one: %+v\nserver log:\n%s", done, len(ids), want, within, views[0], node.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkFourStages fails unless v went through every stage of the push path
// once, in order.
func checkFourStages(t *testing.T, v herald.MessageView) {
	t.Helper()
	want := []herald.Status{herald.StatusQueued, herald.StatusSentToNS, herald.StatusDeliveredToNS, herald.StatusSentToDevice, herald.StatusDeliverySuccessful}
	if len(v.Timeline) != len(want) {
		t.Fatalf("message %s timeline has %d entries, want %d: %+v", v.ID, len(v.Timeline), len(want), v.Timeline)
	}
	for i, e := range v.Timeline {
		if e.To != want[i] {
			t.Fatalf("message %s timeline[%d] -> %s, want %s", v.ID, i, e.To, want[i])
		}
	}
}

// TestPushPathOverGRPCAndMQTT sends confirmed downlinks to a ChirpStack
// simulator over real gRPC, or over a real MQTT broker's command topic,
// and takes the network's events from that broker: every message goes
// through all four stages.
func TestPushPathOverGRPCAndMQTT(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	broker := mqtttest.Start(t)
	for _, send := range []string{"grpc", "mqtt"} {
		t.Run(send, func(t *testing.T) {
			setLoRaEnv(t)
			devs := loraDevices(4)
			sim := startNetwork(t, cssim.Config{Devices: devs,
				MQTT: &cssim.MQTTConfig{Server: broker.URL(), QoS: 1}})
			addr := freeAddr(t)
			node := startProc(t, t.TempDir(), loraConfig(addr, "sqlite:herald.db", sim.Addr(), send, broker.URL(), "herald-test-"+send))
			node.waitReady("http://" + addr)
			ids := sendDownlinks(t, node, devs, 12)
			for _, v := range waitStatus(t, node, ids, herald.StatusDeliverySuccessful, 30*time.Second) {
				checkFourStages(t, v)
			}
			if s := sim.Stats(); s.Enqueued != 12 {
				t.Errorf("the network queued %d items, want 12 (one per message)", s.Enqueued)
			}
		})
	}
}

// TestPushKilledBetweenTxackAndAck kills herald (SIGKILL) once its
// messages are SENT_TO_DEVICE; the devices' acks are published to the MQTT
// broker while it is down, wait in its persistent session, and reach it
// once restarted: every message ends DELIVERY_SUCCESSFUL, once.
func TestPushKilledBetweenTxackAndAck(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	setLoRaEnv(t)
	broker := mqtttest.Start(t)
	devs := loraDevices(3)
	sim := startNetwork(t, cssim.Config{Devices: devs, AckDelay: 3 * time.Second,
		MQTT: &cssim.MQTTConfig{Server: broker.URL(), QoS: 1}})
	dir, addr := t.TempDir(), freeAddr(t)
	cfg := loraConfig(addr, "sqlite:"+filepath.Join(dir, "herald.db"), sim.Addr(), "grpc", broker.URL(), "herald-crash")
	node := startProc(t, dir, cfg)
	node.waitReady("http://" + addr)
	ids := sendDownlinks(t, node, devs, 3)
	waitStatus(t, node, ids, herald.StatusSentToDevice, 10*time.Second)
	node.kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range ids { // the acks reach the broker while herald is down
		if _, err := sim.WaitFor(ctx, func(e cssim.Event) bool { return e.Type == "ack" }); err != nil {
			t.Fatalf("no ack from the network: %v", err)
		}
	}
	node = startProc(t, dir, cfg)
	node.waitReady("http://" + addr)
	for _, v := range waitStatus(t, node, ids, herald.StatusDeliverySuccessful, 20*time.Second) {
		checkFourStages(t, v)
	}
}

// TestPushAckReachesASecondNode runs two herald processes on one Redis; the
// network's HTTP integration posts to the first until it is killed (once
// its messages are SENT_TO_DEVICE), then to the second, which pairs the
// acks with their uplinks from the store and delivers the messages.
func TestPushAckReachesASecondNode(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	setLoRaEnv(t)
	rs := redistest.Start(t)
	var target atomic.Pointer[url.URL]
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target.Load())
	}})
	defer proxy.Close()
	devs := loraDevices(3)
	sim := startNetwork(t, cssim.Config{Devices: devs, AckDelay: 3 * time.Second,
		HTTP: &cssim.HTTPConfig{URL: proxy.URL + "/v1/ingress/lora", Headers: map[string]string{"Authorization": "Bearer " + loraIngress}}})
	var nodes []*serverProc
	for range 2 {
		addr := freeAddr(t)
		node := startProc(t, t.TempDir(), loraConfig(addr, rs.URL(), sim.Addr(), "grpc", "", ""))
		node.waitReady("http://" + addr)
		nodes = append(nodes, node)
	}
	first, _ := url.Parse(nodes[0].base)
	second, _ := url.Parse(nodes[1].base)
	target.Store(first)
	ids := sendDownlinks(t, nodes[0], devs, 3)
	waitStatus(t, nodes[1], ids, herald.StatusSentToDevice, 10*time.Second)
	nodes[0].kill()
	target.Store(second)
	for _, v := range waitStatus(t, nodes[1], ids, herald.StatusDeliverySuccessful, 20*time.Second) {
		checkFourStages(t, v)
	}
}
