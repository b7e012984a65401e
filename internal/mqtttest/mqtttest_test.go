package mqtttest

import (
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// TestPublishSubscribe sends a message through the broker, then checks that
// Stop stops it.
func TestPublishSubscribe(t *testing.T) {
	srv := Start(t)
	if srv.Addr() == "127.0.0.1:1883" {
		t.Fatal("started on the shared broker's port")
	}
	opts := mqtt.NewClientOptions().AddBroker(srv.URL()).SetClientID("mqtttest").SetConnectTimeout(5 * time.Second)
	c := mqtt.NewClient(opts)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect to %s: %v", srv.URL(), tok.Error())
	}
	defer c.Disconnect(0)
	got := make(chan string, 1)
	tok := c.Subscribe("a/+/c", 1, func(_ mqtt.Client, m mqtt.Message) { got <- m.Topic() + " " + string(m.Payload()) })
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	if tok := c.Publish("a/b/c", 1, false, "hello"); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
	select {
	case m := <-got:
		if m != "a/b/c hello" {
			t.Fatalf("received %q; want %q", m, "a/b/c hello")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10 s")
	}
	srv.Stop(t)
	if err := handshake(srv.Addr()); err == nil {
		t.Fatal("the broker still accepts connections after Stop")
	}
}
