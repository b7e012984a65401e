package chirpstack

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirpstack/chirpstack/api/go/v4/integration"
	"github.com/heraldmq/herald"
	csim "github.com/heraldmq/herald/sim/chirpstack"
)

var updateCorpus = flag.Bool("update-corpus", false, "write the sim's event bodies to testdata/fuzz/FuzzReadEvent")

// captured is one event as the simulator's HTTP integration posted it.
type captured struct {
	hook  hook
	event csim.Event
}

// capture runs scenario on a simulator whose HTTP integration posts JSON
// to the test, and returns each event it posted with the simulator's own
// record of it.
func capture(t *testing.T, cfg csim.Config, scenario func(*csim.Sim, *Carrier)) []captured {
	t.Helper()
	url, hooks := receiver(t)
	cfg.HTTP = &csim.HTTPConfig{URL: url}
	s := startSim(t, cfg)
	c := newCarrier(t, Config{Server: s.Addr(), Token: token})
	scenario(s, c)
	if err := s.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	var out []captured
	for _, e := range s.Events() {
		out = append(out, captured{hook: nextHook(t, hooks, e.Type), event: e})
	}
	return out
}

// send sends a message and returns its queue item id.
func send(t *testing.T, c *Carrier, m *herald.Message) string {
	t.Helper()
	res, err := c.Send(ctxT(t), m)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	return res.ExternalID
}

// read reads a captured event as JSON, as the HTTP integration posted it,
// and as Protobuf, encoded by the simulator's Marshal; both must agree.
func read(t *testing.T, c *Carrier, ev captured) (herald.Inbound, bool) {
	t.Helper()
	if ev.hook.ContentType != ContentTypeJSON {
		t.Errorf("%s posted as %q", ev.event.Type, ev.hook.ContentType)
	}
	in, ok, err := c.ReadEvent(ev.hook.Event, ev.hook.ContentType, ev.hook.Body)
	if err != nil {
		t.Fatalf("ReadEvent(%s, JSON %s): %v", ev.hook.Event, ev.hook.Body, err)
	}
	pb, err := csim.Marshal(ev.event.Message, csim.Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	in2, ok2, err := c.ReadEvent(ev.hook.Event, ContentTypeProtobuf, pb)
	if err != nil {
		t.Fatalf("ReadEvent(%s, Protobuf): %v", ev.hook.Event, err)
	}
	if ok != ok2 || fmt.Sprint(in) != fmt.Sprint(in2) {
		t.Errorf("%s: JSON gives %+v %v, Protobuf %+v %v", ev.hook.Event, in, ok, in2, ok2)
	}
	if *updateCorpus {
		writeSeed(t, ev.hook.Event, ContentTypeJSON, ev.hook.Body)
		writeSeed(t, ev.hook.Event, ContentTypeProtobuf, pb)
	}
	if in.ID != "" || in.Route != "" || !in.At.IsZero() || !in.DueAt.IsZero() {
		t.Errorf("%s: ReadEvent set the engine's fields: %+v", ev.hook.Event, in)
	}
	return in, ok
}

// writeSeed writes a fuzz seed for FuzzReadEvent.
func writeSeed(t *testing.T, eventType, contentType string, body []byte) {
	dir := filepath.Join("testdata", "fuzz", "FuzzReadEvent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	enc := "json"
	if contentType == ContentTypeProtobuf {
		enc = "protobuf"
	}
	seed := fmt.Sprintf("go test fuzz v1\nstring(%q)\nstring(%q)\n[]byte(%q)\n", eventType, contentType, body)
	name := filepath.Join(dir, eventType+"-"+enc)
	for i := 2; ; i++ {
		if _, err := os.Stat(name); errors.Is(err, os.ErrNotExist) {
			break
		}
		name = filepath.Join(dir, fmt.Sprintf("%s-%s-%d", eventType, enc, i))
	}
	if err := os.WriteFile(name, []byte(seed), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadEventDelivered: a confirmed downlink to a Class-C device gives
// txack, then the device's up and its ack, paired by deduplicationId.
func TestReadEventDelivered(t *testing.T) {
	var id string
	evs := capture(t, simConfig(), func(s *csim.Sim, c *Carrier) {
		id = send(t, c, message(devC, []byte{0xca, 0xfe}, map[string]string{"f_port": "5"}))
		waitEvent(t, s, func(e csim.Event) bool { return e.Type == EventAck })
	})
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token})
	var types []string
	var up, ack herald.Inbound
	for _, ev := range evs {
		types = append(types, ev.event.Type)
		in, ok := read(t, c, ev)
		if !ok {
			t.Fatalf("%s: ok=false", ev.event.Type)
		}
		if in.Device != devC {
			t.Errorf("%s: device %q; want %s", ev.event.Type, in.Device, devC)
		}
		switch ev.event.Type {
		case EventTxAck:
			if in.Kind != herald.InboundTransmitted || in.ExternalID != id {
				t.Errorf("txack: %+v; want transmitted %s", in, id)
			}
		case EventUp:
			up = in
		case EventAck:
			ack = in
		}
	}
	if got := strings.Join(types, ","); got != "txack,up,ack" {
		t.Fatalf("events %s; want txack,up,ack", got)
	}
	if up.Kind != herald.InboundUplink || up.Correlation == "" || up.ExternalID != "" {
		t.Errorf("up: %+v; want an uplink with a correlation", up)
	}
	if ack.Kind != herald.InboundAck || !ack.Acknowledged || ack.ExternalID != id || ack.Correlation != up.Correlation {
		t.Errorf("ack: %+v; want acknowledged %s, correlation %s", ack, id, up.Correlation)
	}
	var view Uplink
	if err := json.Unmarshal(up.Uplink, &view); err != nil {
		t.Fatalf("uplink view %s: %v", up.Uplink, err)
	}
	if view.DevEUI != devC || view.DeduplicationID != up.Correlation || view.FCnt != 1 || len(view.RxInfo) != 1 ||
		view.RxInfo[0].GatewayID != csim.DefaultGatewayID || view.RxInfo[0].RSSI != -57 || view.RxInfo[0].SNR != 9.25 ||
		time.Since(view.Time) > time.Minute {
		t.Errorf("uplink view %s", up.Uplink)
	}
	var raw map[string]any
	_ = json.Unmarshal(up.Uplink, &raw)
	for _, k := range []string{"dev_eui", "f_port", "data", "f_cnt", "rx_info", "time", "deduplication_id"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("uplink view %s has no %q", up.Uplink, k)
		}
	}
}

// TestReadEventUplinkData: a device's own uplink carries its data.
func TestReadEventUplinkData(t *testing.T) {
	evs := capture(t, simConfig(), func(s *csim.Sim, c *Carrier) {
		if _, err := s.Uplink(devA, 42, []byte("hello")); err != nil {
			t.Fatal(err)
		}
	})
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token})
	in, ok := read(t, c, evs[0])
	var view Uplink
	if !ok || json.Unmarshal(in.Uplink, &view) != nil || view.FPort != 42 || string(view.Data) != "hello" || view.DevEUI != devA {
		t.Fatalf("up: %+v %v, view %s", in, ok, in.Uplink)
	}
	if !strings.Contains(string(in.Uplink), `"data":"aGVsbG8="`) {
		t.Errorf("uplink view %s: want data in base64", in.Uplink)
	}
}

// TestReadEventFailures: ChirpStack's NACK and the log events about a
// queue item it dropped.
func TestReadEventFailures(t *testing.T) {
	cfg := simConfig()
	cfg.NackRate = 1
	cfg.ClassCTimeout = time.Millisecond // ChirpStack's NACK of a Class-C downlink comes at its timeout
	var nacked, oversize, expired string
	evs := capture(t, cfg, func(s *csim.Sim, c *Carrier) {
		nacked = send(t, c, message(devC, []byte{1}, nil))
		waitEvent(t, s, func(e csim.Event) bool { return e.Type == EventAck })
		oversize = send(t, c, message(devC, make([]byte, csim.DefaultMaxPayload+1), nil))
		waitEvent(t, s, func(e csim.Event) bool { return e.Type == EventLog })
		m := message(devA, []byte{1}, nil)
		m.ExpiresAt = time.Now().Add(-time.Second)
		expired = send(t, c, m)
		if _, err := s.Uplink(devA, 1, nil); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, s, func(e csim.Event) bool { return e.Type == EventLog && e.QueueItemID == expired })
	})
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token})
	got := map[string]herald.Inbound{}
	for _, ev := range evs {
		in, ok := read(t, c, ev)
		if ok && ev.event.Type != EventUp && ev.event.Type != EventTxAck {
			got[in.ExternalID] = in
		}
	}
	if in := got[nacked]; in.Kind != herald.InboundAck || in.Acknowledged || in.Device != devC {
		t.Errorf("NACK: %+v; want an ack, not acknowledged", in)
	}
	if in := got[oversize]; in.Kind != herald.InboundFailed || !in.Permanent ||
		!strings.HasPrefix(in.Reason, "DOWNLINK_PAYLOAD_SIZE: ") || !strings.Contains(in.Reason, "max_payload_size=51") {
		t.Errorf("oversize: %+v; want failed permanently, DOWNLINK_PAYLOAD_SIZE", in)
	}
	if in := got[expired]; in.Kind != herald.InboundFailed || in.Permanent || !strings.HasPrefix(in.Reason, "EXPIRED: ") || in.Device != devA {
		t.Errorf("expired: %+v; want failed, transient, EXPIRED", in)
	}
}

// TestReadEventIgnored: joins, statuses and logs about no queue item say
// nothing herald acts on.
func TestReadEventIgnored(t *testing.T) {
	cfg := simConfig()
	cfg.StatusEvery = 1
	cfg.GatewayErrorRate = 1
	cfg.Devices = cfg.Devices[:1] // Class A only: one gateway refusal per uplink
	evs := capture(t, cfg, func(s *csim.Sim, c *Carrier) {
		if _, err := s.Join(devA); err != nil {
			t.Fatal(err)
		}
		send(t, c, message(devA, []byte{1}, nil))
		if _, err := s.Uplink(devA, 1, nil); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, s, func(e csim.Event) bool { return e.Type == EventLog })
	})
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token})
	seen := map[string]bool{}
	for _, ev := range evs {
		seen[ev.event.Type] = true
		in, ok := read(t, c, ev)
		if ev.event.Type != EventUp && ok {
			t.Errorf("%s: %+v, ok; want ignored", ev.event.Type, in)
		}
	}
	for _, typ := range []string{EventJoin, EventStatus, EventLog, EventUp} {
		if !seen[typ] {
			t.Errorf("no %s event; the scenario is wrong", typ)
		}
	}
	loc, _ := csim.Marshal(&integration.LocationEvent{DeduplicationId: "x"}, csim.JSON)
	if _, ok, err := c.ReadEvent(EventLocation, ContentTypeJSON, loc); ok || err != nil {
		t.Errorf("location: %v, %v; want ignored", ok, err)
	}
}

// TestReadEventInvalid: bad event types and bodies are InvalidErrors.
func TestReadEventInvalid(t *testing.T) {
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token})
	dev := `"deviceInfo":{"devEui":"` + devA + `"}`
	item := `"queueItemId":"3f2504e0-4f89-41d3-9a0c-0305e82c3301"`
	for _, tc := range []struct {
		name, event, contentType, body, field string
	}{
		{"no event type", "", ContentTypeJSON, `{}`, "event"},
		{"unknown event type", "downlink", ContentTypeJSON, `{}`, "event"},
		{"upper-case type", "TXACK", ContentTypeJSON, `{` + item + `,` + dev + `}`, "event"},
		{"empty body", EventTxAck, ContentTypeJSON, ``, "body"},
		{"garbage JSON", EventTxAck, ContentTypeJSON, `{"queueItemId":`, "body"},
		{"wrong JSON type", EventAck, ContentTypeJSON, `{"acknowledged":"yes",` + item + `,` + dev + `}`, "body"},
		{"garbage Protobuf", EventTxAck, ContentTypeProtobuf, "\xff\xff\xff\xff", "body"},
		{"HTML", EventUp, "text/html", "<html>502 Bad Gateway</html>", "body"},
		{"txack without item", EventTxAck, ContentTypeJSON, `{` + dev + `}`, "body"},
		{"txack item not a UUID", EventTxAck, ContentTypeJSON, `{"queueItemId":"42",` + dev + `}`, "body"},
		{"ack without device", EventAck, ContentTypeJSON, `{` + item + `}`, "body"},
		{"DevEUI not 16 hex", EventTxAck, ContentTypeJSON, `{` + item + `,"deviceInfo":{"devEui":"0102"}}`, "body"},
		{"up without deduplicationId", EventUp, ContentTypeJSON, `{` + dev + `}`, "body"},
		{"log item not a UUID", EventLog, ContentTypeJSON, `{"code":"EXPIRED","context":{"queue_item_id":"x"},` + dev + `}`, "body"},
		{"garbage join", EventJoin, ContentTypeJSON, `[1,2]`, "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, ok, err := c.ReadEvent(tc.event, tc.contentType, []byte(tc.body))
			var inv *herald.InvalidError
			if !errors.As(err, &inv) || inv.Field != tc.field || ok {
				t.Fatalf("ReadEvent: %+v, %v, %v; want an InvalidError for %s", in, ok, err, tc.field)
			}
		})
	}
}

// TestReadEventJSONForms: what ChirpStack's pbjson may write beyond
// protojson's own output: unknown fields, original field names, enums by
// number, and a body sniffed without a content type.
func TestReadEventJSONForms(t *testing.T) {
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token})
	const item = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
	for _, tc := range []struct{ contentType, body string }{
		{"application/json; charset=utf-8", `{"queue_item_id":"` + item + `","device_info":{"dev_eui":"` + devA + `","tags":{}},"futureField":1}`},
		{"", ` {"queueItemId":"` + item + `","deviceInfo":{"devEui":"` + strings.ToUpper(devA) + `"}}`},
	} {
		in, ok, err := c.ReadEvent(EventTxAck, tc.contentType, []byte(tc.body))
		if err != nil || !ok || in.ExternalID != item || in.Device != devA || in.Kind != herald.InboundTransmitted {
			t.Errorf("ReadEvent(%q, %s): %+v, %v, %v", tc.contentType, tc.body, in, ok, err)
		}
	}
	body := `{"code":1,"description":"too big","context":{"queue_item_id":"` + item + `"},"deviceInfo":{"devEui":"` + devA + `"}}`
	in, ok, err := c.ReadEvent(EventLog, ContentTypeJSON, []byte(body))
	if err != nil || !ok || !in.Permanent || in.Reason != "DOWNLINK_PAYLOAD_SIZE: too big" {
		t.Errorf("log with a numeric code: %+v, %v, %v", in, ok, err)
	}
	body = `{"code":"DOWNLINK_GATEWAY","description":"TOO_LATE","context":{"queue_item_id":"` + item + `"},"deviceInfo":{"devEui":"` + devA + `"}}`
	if in, ok, err := c.ReadEvent(EventLog, ContentTypeJSON, []byte(body)); err != nil || !ok || in.Permanent || in.Kind != herald.InboundFailed {
		t.Errorf("DOWNLINK_GATEWAY about an item: %+v, %v, %v; want a transient failure", in, ok, err)
	}
	body = `{"code":"UPLINK_CODEC","context":{"queue_item_id":"` + item + `"},"deviceInfo":{"devEui":"` + devA + `"}}`
	if _, ok, err := c.ReadEvent(EventLog, ContentTypeJSON, []byte(body)); err != nil || ok {
		t.Errorf("other log about an item: %v, %v; want ignored", ok, err)
	}
}
