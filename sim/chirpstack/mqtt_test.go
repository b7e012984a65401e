package chirpstack

import (
	"context"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/chirpstack/chirpstack/api/go/v4/integration"
	"github.com/heraldmq/herald/internal/mqtttest"
)

// message is one MQTT publication the test client received.
type message struct {
	Topic   string
	Payload []byte
}

// mqttClient connects a test client to the broker and subscribes it to
// every event of the simulator's application.
func mqttClient(t *testing.T, broker string) (mqtt.Client, chan message) {
	t.Helper()
	c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(broker).SetClientID("test-app").SetConnectTimeout(5 * time.Second))
	if tok := c.Connect(); !tok.WaitTimeout(timeout) || tok.Error() != nil {
		t.Fatalf("connect to %s: %v", broker, tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(0) })
	ch := make(chan message, 100)
	tok := c.Subscribe(EventTopic(DefaultApplicationID, "+", "+"), 1, func(_ mqtt.Client, m mqtt.Message) {
		ch <- message{m.Topic(), m.Payload()}
	})
	if !tok.WaitTimeout(timeout) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	return c, ch
}

// nextMessage returns the next publication, which must be on topic.
func nextMessage(t *testing.T, ch chan message, topic string) message {
	t.Helper()
	select {
	case m := <-ch:
		if m.Topic != topic {
			t.Fatalf("next publication on %s (%s); want %s", m.Topic, m.Payload, topic)
		}
		return m
	case <-time.After(timeout):
		t.Fatalf("nothing published on %s within %v", topic, timeout)
	}
	return message{}
}

func publish(t *testing.T, c mqtt.Client, topic string, payload []byte) {
	t.Helper()
	if tok := c.Publish(topic, 1, false, payload); !tok.WaitTimeout(timeout) || tok.Error() != nil {
		t.Fatalf("publish on %s: %v", topic, tok.Error())
	}
}

// waitCommands waits until the simulator recorded n commands.
func waitCommands(t *testing.T, s *Sim, n int) []Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		s.mu.Lock()
		cmds, ch := append([]Command(nil), s.commands...), s.changed
		s.mu.Unlock()
		if len(cmds) >= n {
			return cmds
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%d commands recorded within %v; want %d", len(cmds), timeout, n)
		}
	}
}

// TestMQTT publishes events to the application's topics and takes downlink
// commands from command/down.
func TestMQTT(t *testing.T) {
	broker := mqtttest.Start(t)
	cfg := baseConfig()
	cfg.MQTT = &MQTTConfig{Server: broker.URL(), QoS: 1}
	s := start(t, cfg, "")
	app, events := mqttClient(t, broker.URL())

	// An event of a gRPC enqueue.
	id := enqueue(t, client(t, s), devC, false, []byte{1})
	m := nextMessage(t, events, "application/"+DefaultApplicationID+"/device/"+devC+"/event/txack")
	var tx integration.TxAckEvent
	if err := protojson.Unmarshal(m.Payload, &tx); err != nil || tx.GetQueueItemId() != id {
		t.Fatalf("txack %s: %v; want item %s", m.Payload, err, id)
	}

	// A downlink command, with its own id, as ChirpStack's JSON.
	const cmdID = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
	down := `{"id":"` + cmdID + `","devEui":"` + devC + `","confirmed":false,"fPort":10,"data":"AQID"}`
	publish(t, app, CommandTopic(DefaultApplicationID, devC, "down"), []byte(down))
	m = nextMessage(t, events, EventTopic(DefaultApplicationID, devC, "txack"))
	if err := protojson.Unmarshal(m.Payload, &tx); err != nil || tx.GetQueueItemId() != cmdID {
		t.Fatalf("txack %s: %v; want item %s", m.Payload, err, cmdID)
	}
	items := s.Enqueued()
	if last := items[len(items)-1]; last.ID != cmdID || last.Source != "mqtt" || last.FPort != 10 || string(last.Data) != "\x01\x02\x03" {
		t.Errorf("item of the command: %+v", last)
	}

	// Commands ChirpStack refuses: only logged, nothing enqueued.
	other := "00000000-0000-0000-0000-000000000001"
	for _, c := range []struct{ topic, payload string }{
		{CommandTopic(DefaultApplicationID, devA, "down"), `{"devEui":"` + devC + `","fPort":1}`},               // topic and payload disagree
		{CommandTopic(other, devC, "down"), `{"devEui":"` + devC + `","fPort":1}`},                              // another application
		{CommandTopic(DefaultApplicationID, devC, "down"), `{"devEui":"` + devC + `","fPort":0,"data":"AQ=="}`}, // FPort 0
		{CommandTopic(DefaultApplicationID, devC, "reboot"), `{}`},                                              // unknown command
	} {
		publish(t, app, c.topic, []byte(c.payload))
	}
	cmds := waitCommands(t, s, 5)
	for i, want := range []string{"", "does not match topic dev_eui", "Application ID from topic", "FPort must be between", "Unknown command type"} {
		if got := cmds[i].Err; want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("command %d on %s: error %q; want %q", i, cmds[i].Topic, got, want)
		}
	}
	if n := len(s.Enqueued()); n != 2 {
		t.Errorf("%d items enqueued; want 2", n)
	}
}

// TestMQTTProtobuf uses the Protobuf encoding both ways, with a confirmed
// downlink to a Class-A device.
func TestMQTTProtobuf(t *testing.T) {
	broker := mqtttest.Start(t)
	cfg := baseConfig()
	cfg.MQTT = &MQTTConfig{Server: broker.URL(), Encoding: Protobuf}
	s := start(t, cfg, "")
	app, events := mqttClient(t, broker.URL())
	cmd, err := proto.Marshal(&integration.DownlinkCommand{DevEui: devA, Confirmed: true, FPort: 5, Data: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, app, CommandTopic(DefaultApplicationID, devA, "down"), cmd)
	cmds := waitCommands(t, s, 1)
	if cmds[0].Err != "" || !uuidRE.MatchString(cmds[0].QueueItemID) {
		t.Fatalf("command %+v; want enqueued with a new UUID", cmds[0])
	}
	if _, err := s.Uplink(devA, 1, nil); err != nil {
		t.Fatal(err)
	}
	topic := func(ev string) string { return EventTopic(DefaultApplicationID, devA, ev) }
	nextMessage(t, events, topic("up"))
	var tx integration.TxAckEvent
	if m := nextMessage(t, events, topic("txack")); proto.Unmarshal(m.Payload, &tx) != nil || tx.GetQueueItemId() != cmds[0].QueueItemID {
		t.Fatalf("txack %v; want item %s", &tx, cmds[0].QueueItemID)
	}
	nextMessage(t, events, topic("up"))
	var ack integration.AckEvent
	if m := nextMessage(t, events, topic("ack")); proto.Unmarshal(m.Payload, &ack) != nil || !ack.GetAcknowledged() || ack.GetQueueItemId() != cmds[0].QueueItemID {
		t.Fatalf("ack %v; want item %s acknowledged", &ack, cmds[0].QueueItemID)
	}
}

// TestMQTTBrokerDown: Start fails clearly when the broker is not there.
func TestMQTTBrokerDown(t *testing.T) {
	broker := mqtttest.Start(t)
	url := broker.URL()
	broker.Stop(t)
	cfg := baseConfig()
	cfg.MQTT = &MQTTConfig{Server: url, ConnectTimeout: 2 * time.Second}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "MQTT broker") {
		t.Fatalf("Start: %v; want an MQTT broker error", err)
	}
}
