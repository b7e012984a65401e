package chirpstack

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/heraldmq/herald"
)

// FuzzReadEvent: ReadEvent never panics; it answers an *InvalidError, an
// ignored event, or an Inbound whose fields hold what the engine relies
// on. The seeds in testdata/fuzz/FuzzReadEvent are the simulator's real
// bodies, in JSON and Protobuf (go test -run TestReadEvent -update-corpus
// writes them again).
func FuzzReadEvent(f *testing.F) {
	const item = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
	dev := `"deviceInfo":{"devEui":"0102030405060701"}`
	for _, s := range []struct{ typ, ct, body string }{
		{EventTxAck, ContentTypeJSON, `{"queueItemId":"` + item + `",` + dev + `}`},
		{EventAck, ContentTypeJSON, `{"queueItemId":"` + item + `","acknowledged":true,"deduplicationId":"d",` + dev + `}`},
		{EventUp, ContentTypeJSON, `{"deduplicationId":"d","data":"AQI=","rxInfo":[{"gatewayId":"g","snr":"NaN"}],` + dev + `}`},
		{EventLog, ContentTypeJSON, `{"code":"EXPIRED","context":{"queue_item_id":"` + item + `"},` + dev + `}`},
		{EventUp, "", "\n\x01d\x1a\x12\x82\x01\x0f0102030405060701"},
		{EventJoin, ContentTypeProtobuf, ""},
		{"", "", "{}"},
	} {
		f.Add(s.typ, s.ct, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, eventType, contentType string, body []byte) {
		in, ok, err := readEvent(eventType, contentType, body)
		if err != nil {
			var inv *herald.InvalidError
			if !errors.As(err, &inv) || ok {
				t.Fatalf("error %v (ok %v); want an *InvalidError, not ok", err, ok)
			}
			return
		}
		if !ok {
			return
		}
		if _, valid := parseDevEUI(in.Device); !valid || in.Device != lower(in.Device) {
			t.Fatalf("device %q", in.Device)
		}
		switch in.Kind {
		case herald.InboundTransmitted, herald.InboundAck, herald.InboundFailed:
			if id, valid := parseUUID(in.ExternalID); !valid || id != in.ExternalID {
				t.Fatalf("%s about %q", in.Kind, in.ExternalID)
			}
		case herald.InboundUplink:
			var u Uplink
			if in.Correlation == "" || json.Unmarshal(in.Uplink, &u) != nil || u.DevEUI != in.Device {
				t.Fatalf("uplink %+v: view %s", in, in.Uplink)
			}
		default:
			t.Fatalf("kind %q", in.Kind)
		}
	})
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
