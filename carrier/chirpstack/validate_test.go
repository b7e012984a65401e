package chirpstack

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
)

// TestValidate accepts the messages docs/CONFIG.md describes for a
// chirpstack route ("ChirpStack (LoRaWAN)") and names the field of each
// bad one.
func TestValidate(t *testing.T) {
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token})
	big := make([]byte, MaxPayload)
	for _, tc := range []struct {
		name  string
		m     *herald.Message
		field string // "" for valid
	}{
		{"defaults", message(devA, []byte{1}, nil), ""},
		{"upper-case DevEUI", message("0102030405060A0B", []byte{1}, nil), ""},
		{"all params", message(devA, []byte{1}, map[string]string{"f_port": "223", "confirmed": "false"}), ""},
		{"empty params are defaults", message(devA, []byte{1}, map[string]string{"f_port": "", "confirmed": ""}), ""},
		{"largest payload", message(devA, big, nil), ""},
		{"short DevEUI", message("01020304050607", []byte{1}, nil), "target"},
		{"long DevEUI", message(devA+"00", []byte{1}, nil), "target"},
		{"not hex", message("010203040506070g", []byte{1}, nil), "target"},
		{"empty target", message("", []byte{1}, nil), "target"},
		{"no payload", message(devA, nil, nil), "payload"},
		{"payload too large", message(devA, append(big, 0), nil), "payload"},
		{"text", &herald.Message{ID: msgID, Target: devA, Text: "hi"}, "text"},
		{"f_port 0", message(devA, []byte{1}, map[string]string{"f_port": "0"}), "params.f_port"},
		{"f_port 224", message(devA, []byte{1}, map[string]string{"f_port": "224"}), "params.f_port"},
		{"f_port not a number", message(devA, []byte{1}, map[string]string{"f_port": "x"}), "params.f_port"},
		{"f_port negative", message(devA, []byte{1}, map[string]string{"f_port": "-1"}), "params.f_port"},
		{"confirmed yes", message(devA, []byte{1}, map[string]string{"confirmed": "yes"}), "params.confirmed"},
		{"unknown param", message(devA, []byte{1}, map[string]string{"class": "C"}), "params"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Validate(tc.m)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v; want nil", err)
				}
				return
			}
			var inv *herald.InvalidError
			if !errors.As(err, &inv) || inv.Field != tc.field {
				t.Fatalf("Validate: %v; want an InvalidError for %s", err, tc.field)
			}
		})
	}
}

// TestAwaitsAck: a downlink is confirmed unless params.confirmed is false.
func TestAwaitsAck(t *testing.T) {
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token})
	for v, want := range map[string]bool{"": true, "true": true, "false": false} {
		if got := c.AwaitsAck(message(devA, []byte{1}, map[string]string{"confirmed": v})); got != want {
			t.Errorf("confirmed %q: AwaitsAck %v; want %v", v, got, want)
		}
	}
	if !c.AwaitsAck(message(devA, []byte{1}, nil)) {
		t.Error("no params: AwaitsAck false; want true")
	}
}

// TestNew refuses configurations that cannot work.
func TestNew(t *testing.T) {
	mq := &MQTTConfig{URL: "tcp://127.0.0.1:1883", ApplicationID: "6a1b0c4e-2f3d-4e5a-9b7c-8d9e0f1a2b3c"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // part of the error; "" for none
	}{
		{"grpc", Config{Server: "localhost:8080", Token: token}, ""},
		{"mqtt without server", Config{Send: SendMQTT, MQTT: mq}, ""},
		{"listen only app", Config{Server: "localhost:8080", Token: token, MQTT: &MQTTConfig{URL: "ssl://b:8883"}}, ""},
		{"no server", Config{Token: token}, "server"},
		{"no token", Config{Server: "localhost:8080"}, "token"},
		{"token with space", Config{Server: "localhost:8080", Token: "a b"}, "token"},
		{"server without port", Config{Server: "localhost", Token: token}, "host:port"},
		{"bad send", Config{Server: "localhost:8080", Token: token, Send: "http"}, "send"},
		{"mqtt without broker", Config{Send: SendMQTT}, "broker"},
		{"mqtt without app", Config{Send: SendMQTT, MQTT: &MQTTConfig{URL: "tcp://b:1883"}}, "application id"},
		{"bad broker", Config{Send: SendMQTT, MQTT: &MQTTConfig{URL: "http://b", ApplicationID: "x"}}, "scheme"},
		{"app with wildcard", Config{Send: SendMQTT, MQTT: &MQTTConfig{URL: "tcp://b:1883", ApplicationID: "+"}}, "application id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.cfg)
			if c != nil {
				defer c.Close()
			}
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("New: %v; want %q", err, tc.want)
			}
		})
	}
	c, err := New(Config{Send: SendMQTT, MQTT: mq})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.mqtt.ClientID != "herald-"+mq.ApplicationID || c.Path() != herald.PathPush {
		t.Errorf("client id %q, path %v; want the default id and push", c.mqtt.ClientID, c.Path())
	}
}

// TestContentHash: a downlink's dedup key is SHA256(device_eui + payload +
// fport), whatever the DevEUI's case and the confirmed flag; another port
// or payload is another key.
func TestContentHash(t *testing.T) {
	c := &Carrier{}
	m := func(target string, payload []byte, params map[string]string) *herald.Message {
		return &herald.Message{Target: target, Payload: payload, Params: params}
	}
	red := c.ContentHash(m("202020390C0E0902", []byte{0xff, 0, 0, 0x64}, map[string]string{"f_port": "15"}))
	sum := sha256.Sum256([]byte("202020390c0e0902" + "ff000064" + "15"))
	if want := hex.EncodeToString(sum[:]); red != want {
		t.Fatalf("ContentHash = %s, want %s", red, want)
	}
	if got := c.ContentHash(m("202020390c0e0902", []byte{0xff, 0, 0, 0x64}, map[string]string{"f_port": "15", "confirmed": "false"})); got != red {
		t.Errorf("the confirmed flag changed the hash")
	}
	for what, other := range map[string]*herald.Message{
		"another port":    m("202020390c0e0902", []byte{0xff, 0, 0, 0x64}, map[string]string{"f_port": "16"}),
		"another payload": m("202020390c0e0902", []byte{0, 0xff, 0, 0x64}, map[string]string{"f_port": "15"}),
		"another device":  m("202020390c0e0903", []byte{0xff, 0, 0, 0x64}, map[string]string{"f_port": "15"}),
	} {
		if c.ContentHash(other) == red {
			t.Errorf("%s: the same hash", what)
		}
	}
	if got, want := c.ContentHash(m("202020390c0e0902", []byte{1}, nil)), c.ContentHash(m("202020390c0e0902", []byte{1}, map[string]string{"f_port": "1"})); got != want {
		t.Errorf("no f_port hashes as %s, port 1 as %s: want the default port, 1", got, want)
	}
}

// TestIngressClosedWithoutSecret: without an ingress secret the HTTP
// ingress is closed (a secret no one knows) unless IngressOpen says it is
// open on purpose.
func TestIngressClosedWithoutSecret(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		open bool
	}{
		{Config{Server: "127.0.0.1:1", Token: "t", IngressSecret: "s"}, false},
		{Config{Server: "127.0.0.1:1", Token: "t"}, false},
		{Config{Server: "127.0.0.1:1", Token: "t", IngressOpen: true}, true},
	} {
		cr, err := New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := cr.IngressSecret(); (got == "") != c.open || (c.cfg.IngressSecret != "" && got != c.cfg.IngressSecret) {
			t.Errorf("%+v: IngressSecret %q, want open = %v", c.cfg, got, c.open)
		}
		cr.Close()
	}
}
