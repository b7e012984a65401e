package chirpstack

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/mqtttest"
	csim "github.com/heraldmq/herald/sim/chirpstack"
)

// mqttSim runs a simulator whose MQTT integration uses broker at QoS 1.
func mqttSim(t *testing.T, broker *mqtttest.Server, enc csim.Encoding) *csim.Sim {
	t.Helper()
	cfg := simConfig()
	cfg.MQTT = &csim.MQTTConfig{Server: broker.URL(), QoS: 1, Encoding: enc}
	return startSim(t, cfg)
}

// waitCommands waits until the simulator took n downlink commands.
func waitCommands(t *testing.T, s *csim.Sim, n int) []csim.Command {
	t.Helper()
	var cmds []csim.Command
	waitUntil(t, "downlink commands", func() bool { cmds = s.Commands(); return len(cmds) >= n })
	return cmds
}

// TestSendMQTT publishes downlink commands with herald's id as the queue
// item id: a second send of the message makes no second item.
func TestSendMQTT(t *testing.T) {
	broker := mqtttest.Start(t)
	for _, enc := range []csim.Encoding{csim.JSON, csim.Protobuf} {
		t.Run(string(enc), func(t *testing.T) {
			s := mqttSim(t, broker, enc)
			c := newCarrier(t, Config{Server: s.Addr(), Token: token, Send: SendMQTT,
				MQTT: &MQTTConfig{URL: broker.URL(), ApplicationID: csim.DefaultApplicationID, Protobuf: enc == csim.Protobuf}})
			m := message(strings.ToUpper(devA), []byte{7, 7}, map[string]string{"f_port": "7", "confirmed": "false"})
			m.ExpiresAt = time.Now().Add(time.Hour)
			res, err := c.Send(ctxT(t), m)
			if err != nil || res.ExternalID != msgID {
				t.Fatalf("Send: %+v, %v; want external id %s", res, err, msgID)
			}
			cmds := waitCommands(t, s, 1)
			if cmds[0].Err != "" || cmds[0].QueueItemID != msgID || cmds[0].Topic != CommandTopic(csim.DefaultApplicationID, devA) {
				t.Fatalf("command %+v; want item %s enqueued", cmds[0], msgID)
			}
			it := s.Enqueued()[0]
			if it.ID != msgID || it.Source != "mqtt" || it.FPort != 7 || it.Confirmed || string(it.Data) != "\x07\x07" ||
				!it.ExpiresAt.Equal(m.ExpiresAt.Truncate(time.Microsecond)) {
				t.Errorf("item %+v", it)
			}
			m.ExternalID = res.ExternalID
			if q, err := c.StillQueued(ctxT(t), m); err != nil || !q {
				t.Errorf("StillQueued: %v, %v; want true", q, err)
			}

			// A re-send (after a crash, a retry): ChirpStack keeps one item.
			if res, err := c.Send(ctxT(t), m); err != nil || res.ExternalID != msgID {
				t.Fatalf("second Send: %+v, %v", res, err)
			}
			cmds = waitCommands(t, s, 2)
			if !strings.Contains(cmds[1].Err, "duplicate") {
				t.Errorf("second command %+v; want refused as a duplicate", cmds[1])
			}
			if n := len(s.Enqueued()); n != 1 {
				t.Errorf("%d items enqueued; want 1", n)
			}
		})
	}
}

// TestSendMQTTErrors: an id that is no UUID is permanent; a broker that is
// not there is transient.
func TestSendMQTTErrors(t *testing.T) {
	broker := mqtttest.Start(t)
	c := newCarrier(t, Config{Send: SendMQTT, MQTT: &MQTTConfig{URL: broker.URL(), ApplicationID: csim.DefaultApplicationID}})
	m := message(devA, []byte{1}, nil)
	m.ID = "msg-1"
	if _, err := c.Send(ctxT(t), m); !isPermanent(err) {
		t.Errorf("Send with id %q: %v; want permanent", m.ID, err)
	}
	url := broker.URL()
	broker.Stop(t)
	c = newCarrier(t, Config{Send: SendMQTT, MQTT: &MQTTConfig{URL: url, ApplicationID: csim.DefaultApplicationID}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.Send(ctx, message(devA, []byte{1}, nil)); err == nil || isPermanent(err) {
		t.Errorf("Send without a broker: %v; want a transient error", err)
	}
	c.Close()
	if _, err := c.Send(ctxT(t), message(devA, []byte{1}, nil)); err == nil {
		t.Error("Send after Close: nil error")
	}
}

// ingested is one event handed to ingest.
type ingested struct {
	eventType, contentType string
	body                   []byte
}

// listening runs c.Listen with ingest until the returned stop is called,
// and waits for the first subscription.
func listening(t *testing.T, c *Carrier, ingest herald.IngestFunc) (stop func()) {
	t.Helper()
	subscribed := make(chan struct{}, 10)
	c.subscribed = func() { subscribed <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Listen(ctx, ingest) }()
	select {
	case <-subscribed:
	case err := <-done:
		t.Fatalf("Listen returned %v before subscribing", err)
	case <-time.After(timeout):
		t.Fatal("Listen did not subscribe")
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Listen: %v", err)
				}
			case <-time.After(timeout):
				t.Error("Listen did not return after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// recorder is an ingest that records what it gets; fail decides whether a
// call fails.
type recorder struct {
	mu   sync.Mutex
	got  []ingested
	ch   chan ingested
	fail func(n int, in ingested) bool // n counts the calls from 1
}

func newRecorder(fail func(int, ingested) bool) *recorder {
	return &recorder{ch: make(chan ingested, 100), fail: fail}
}

func (r *recorder) ingest(_ context.Context, eventType, contentType string, body []byte) error {
	in := ingested{eventType, contentType, append([]byte(nil), body...)}
	r.mu.Lock()
	r.got = append(r.got, in)
	n := len(r.got)
	r.mu.Unlock()
	r.ch <- in
	if r.fail != nil && r.fail(n, in) {
		return errors.New("store unavailable")
	}
	return nil
}

// next returns the next event ingest got.
func (r *recorder) next(t *testing.T) ingested {
	t.Helper()
	select {
	case in := <-r.ch:
		return in
	case <-time.After(timeout):
		t.Fatal("no event reached ingest")
	}
	return ingested{}
}

// uplinkData returns the data of an up event's body.
func uplinkData(t *testing.T, in ingested) string {
	t.Helper()
	ev, ok, err := readEvent(in.eventType, in.contentType, in.body)
	if err != nil || !ok || ev.Kind != herald.InboundUplink {
		t.Fatalf("event %s (%s): %+v, %v, %v; want an uplink", in.eventType, in.contentType, ev, ok, err)
	}
	var u Uplink
	if err := json.Unmarshal(ev.Uplink, &u); err != nil {
		t.Fatal(err)
	}
	return string(u.Data)
}

// TestListen receives the simulator's events over MQTT, in JSON and in
// Protobuf, with their type and content type.
func TestListen(t *testing.T) {
	broker := mqtttest.Start(t)
	for _, enc := range []csim.Encoding{csim.JSON, csim.Protobuf} {
		t.Run(string(enc), func(t *testing.T) {
			s := mqttSim(t, broker, enc)
			c := newCarrier(t, Config{Server: s.Addr(), Token: token,
				MQTT: &MQTTConfig{URL: broker.URL(), ApplicationID: csim.DefaultApplicationID, ClientID: "herald-test-" + string(enc)}})
			rec := newRecorder(nil)
			listening(t, c, rec.ingest)
			id := send(t, c, message(devC, []byte{1}, nil))
			wantType := ContentTypeJSON
			if enc == csim.Protobuf {
				wantType = ContentTypeProtobuf
			}
			var kinds []string
			for range 3 {
				in := rec.next(t)
				if in.contentType != wantType {
					t.Errorf("%s event with content type %q; want %q", in.eventType, in.contentType, wantType)
				}
				ev, ok, err := c.ReadEvent(in.eventType, in.contentType, in.body)
				if err != nil || !ok {
					t.Fatalf("ReadEvent(%s): %v, %v", in.eventType, ok, err)
				}
				if ev.Kind != herald.InboundUplink && ev.ExternalID != id {
					t.Errorf("%s about %q; want %q", in.eventType, ev.ExternalID, id)
				}
				kinds = append(kinds, in.eventType)
			}
			slices.Sort(kinds) // handled concurrently: in any order
			if got := strings.Join(kinds, ","); got != "ack,txack,up" {
				t.Errorf("events %s; want ack, txack and up", got)
			}
		})
	}
}

// TestListenAcksAfterIngest: an event is acknowledged to the broker only
// once ingest took it. An ingest that fails is tried again; an event not
// taken when Listen ends comes again at the next connection of the
// session, and one taken does not.
func TestListenAcksAfterIngest(t *testing.T) {
	broker := mqtttest.Start(t)
	s := mqttSim(t, broker, csim.JSON)
	mq := &MQTTConfig{URL: broker.URL(), ApplicationID: csim.DefaultApplicationID, ClientID: "herald-test-acks"}
	c := newCarrier(t, Config{Server: s.Addr(), Token: token, MQTT: mq})
	uplink := func(data string) {
		t.Helper()
		if _, err := s.Uplink(devA, 1, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}

	// 1. The first try fails, the second succeeds: acknowledged then.
	rec := newRecorder(func(n int, _ ingested) bool { return n == 1 })
	stop := listening(t, c, rec.ingest)
	uplink("E1")
	if a, b := uplinkData(t, rec.next(t)), uplinkData(t, rec.next(t)); a != "E1" || b != "E1" {
		t.Fatalf("ingest got %q then %q; want E1 twice (a failure, then the retry)", a, b)
	}
	stop()

	// 2. Every try fails: Listen ends with E2 not acknowledged.
	rec = newRecorder(func(int, ingested) bool { return true })
	stop = listening(t, c, rec.ingest)
	uplink("E2")
	if got := uplinkData(t, rec.next(t)); got != "E2" {
		t.Fatalf("ingest got %q; want E2", got)
	}
	stop()

	// 3. A new connection of the session (another carrier, as after a
	// restart): E2 comes again, E1 does not; then the new E3.
	c2 := newCarrier(t, Config{Server: s.Addr(), Token: token, MQTT: mq})
	rec = newRecorder(nil)
	subscribed := make(chan struct{}, 10)
	c2.subscribed = func() { subscribed <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c2.Listen(ctx, rec.ingest) }()
	defer func() { cancel(); <-done }()
	if got := uplinkData(t, rec.next(t)); got != "E2" {
		t.Fatalf("after reconnecting, ingest got %q first; want E2 again", got)
	}
	select {
	case <-subscribed:
	case <-time.After(timeout):
		t.Fatal("Listen did not subscribe after reconnecting")
	}
	uplink("E3")
	if got := uplinkData(t, rec.next(t)); got != "E3" {
		t.Fatalf("ingest got %q; want E3 (E1 was acknowledged)", got)
	}
}

// TestListenInvalidEventAcked: an event ingest calls invalid is dropped
// (acknowledged), not tried again nor sent again by the broker.
func TestListenInvalidEventAcked(t *testing.T) {
	broker := mqtttest.Start(t)
	s := mqttSim(t, broker, csim.JSON)
	mq := &MQTTConfig{URL: broker.URL(), ClientID: "herald-test-invalid"} // every application's events
	c := newCarrier(t, Config{Server: s.Addr(), Token: token, MQTT: mq})
	rec := newRecorder(nil)
	stop := listening(t, c, func(ctx context.Context, et, ct string, b []byte) error {
		rec.ingest(ctx, et, ct, b)
		return herald.Invalid("event", "not for this test")
	})
	if _, err := s.Uplink(devA, 1, []byte("X")); err != nil {
		t.Fatal(err)
	}
	if got := uplinkData(t, rec.next(t)); got != "X" {
		t.Fatalf("ingest got %q; want X", got)
	}
	stop()
	if n := len(rec.ch); n != 0 {
		t.Errorf("an invalid event was tried %d times more", n)
	}

	c2 := newCarrier(t, Config{Server: s.Addr(), Token: token, MQTT: mq})
	rec = newRecorder(nil)
	listening(t, c2, rec.ingest)
	if _, err := s.Uplink(devA, 1, []byte("M")); err != nil {
		t.Fatal(err)
	}
	if got := uplinkData(t, rec.next(t)); got != "M" {
		t.Fatalf("after reconnecting, ingest got %q first; want M (X was acknowledged)", got)
	}
}

// TestListenWithoutMQTT returns at once.
func TestListenWithoutMQTT(t *testing.T) {
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token})
	if err := c.Listen(context.Background(), func(context.Context, string, string, []byte) error { return nil }); err != nil {
		t.Fatalf("Listen: %v", err)
	}
}

// TestListenOnce: a second Listen while one runs is an error.
func TestListenOnce(t *testing.T) {
	broker := mqtttest.Start(t)
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token, MQTT: &MQTTConfig{URL: broker.URL(), ClientID: "herald-test-once"}})
	listening(t, c, newRecorder(nil).ingest)
	if err := c.Listen(ctxT(t), nil); err == nil {
		t.Fatal("a second Listen: nil error")
	}
}

// TestListenBrokerDown: Listen keeps trying to connect, and returns when
// its context ends.
func TestListenBrokerDown(t *testing.T) {
	broker := mqtttest.Start(t)
	url := broker.URL()
	broker.Stop(t)
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token, MQTT: &MQTTConfig{URL: url, ClientID: "herald-test-down"}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := c.Listen(ctx, newRecorder(nil).ingest); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Listen returned %v after its context ended", d)
	}
}
