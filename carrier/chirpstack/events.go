package chirpstack

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"mime"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/chirpstack/chirpstack/api/go/v4/integration"
	"github.com/heraldmq/herald"
)

// The event types of ChirpStack's integrations (the HTTP integration's
// ?event=, the last level of the MQTT integration's topics).
const (
	EventUp       = "up"
	EventAck      = "ack"
	EventTxAck    = "txack"
	EventLog      = "log"
	EventJoin     = "join"
	EventStatus   = "status"
	EventLocation = "location"
)

// The content types of event bodies ChirpStack sends: its HTTP integration
// sets ContentTypeJSON or ContentTypeProtobuf, as its json flag says.
const (
	ContentTypeJSON     = "application/json"
	ContentTypeProtobuf = "application/octet-stream"
)

// logQueueItemID is the log event context key that names the queue item
// the log is about.
const logQueueItemID = "queue_item_id"

// Uplink is the JSON view of a device's uplink (an up event) that herald
// sends to subscribers as an uplink event, herald.Inbound.Uplink:
//
//	{"dev_eui":"0102030405060708","f_port":10,"data":"AQI=","f_cnt":7,
//	 "rx_info":[{"gateway_id":"0016c001ff10a235","rssi":-57,"snr":9.25}],
//	 "time":"2025-01-02T03:04:05.678Z","deduplication_id":"…"}
//
// data is the frame payload in base64; time (left out when ChirpStack
// gives none) is when ChirpStack received the uplink; rx_info has one
// entry per gateway that heard it.
type Uplink struct {
	DevEUI          string    `json:"dev_eui"`
	FPort           uint32    `json:"f_port"`
	Data            []byte    `json:"data"`
	FCnt            uint32    `json:"f_cnt"`
	RxInfo          []RxInfo  `json:"rx_info"`
	Time            time.Time `json:"time,omitzero"`
	DeduplicationID string    `json:"deduplication_id"`
}

// RxInfo is one gateway's reception of an uplink.
type RxInfo struct {
	GatewayID string  `json:"gateway_id"`
	RSSI      int32   `json:"rssi"` // dBm
	SNR       float32 `json:"snr"`  // dB
}

// ReadEvent reads an event of ChirpStack's HTTP or MQTT integration:
// eventType is its type (up, ack, txack, log, join, status, location),
// contentType says whether body is JSON or binary Protobuf (a type that
// says neither is told by the body's first byte, '{' for JSON). See the
// package comment for what each event gives. It sets no ID, Route, At or
// DueAt: the engine does.
func (c *Carrier) ReadEvent(eventType, contentType string, body []byte) (herald.Inbound, bool, error) {
	return readEvent(eventType, contentType, body)
}

func readEvent(eventType, contentType string, body []byte) (herald.Inbound, bool, error) {
	var none herald.Inbound
	switch eventType {
	case EventTxAck:
		var e integration.TxAckEvent
		if err := decode(eventType, contentType, body, &e); err != nil {
			return none, false, err
		}
		dev, err := deviceOf(e.GetDeviceInfo())
		if err != nil {
			return none, false, err
		}
		item, err := queueItem("queueItemId", e.GetQueueItemId())
		if err != nil {
			return none, false, err
		}
		return herald.Inbound{Kind: herald.InboundTransmitted, ExternalID: item, Device: dev}, true, nil

	case EventAck:
		var e integration.AckEvent
		if err := decode(eventType, contentType, body, &e); err != nil {
			return none, false, err
		}
		dev, err := deviceOf(e.GetDeviceInfo())
		if err != nil {
			return none, false, err
		}
		item, err := queueItem("queueItemId", e.GetQueueItemId())
		if err != nil {
			return none, false, err
		}
		return herald.Inbound{Kind: herald.InboundAck, ExternalID: item, Correlation: e.GetDeduplicationId(),
			Acknowledged: e.GetAcknowledged(), Device: dev}, true, nil

	case EventUp:
		var e integration.UplinkEvent
		if err := decode(eventType, contentType, body, &e); err != nil {
			return none, false, err
		}
		dev, err := deviceOf(e.GetDeviceInfo())
		if err != nil {
			return none, false, err
		}
		if e.GetDeduplicationId() == "" {
			return none, false, herald.Invalid("body", "an up event without deduplicationId")
		}
		view, err := uplinkView(dev, &e)
		if err != nil {
			return none, false, err
		}
		return herald.Inbound{Kind: herald.InboundUplink, Correlation: e.GetDeduplicationId(), Device: dev, Uplink: view}, true, nil

	case EventLog:
		var e integration.LogEvent
		if err := decode(eventType, contentType, body, &e); err != nil {
			return none, false, err
		}
		return readLog(&e)

	case EventJoin:
		return none, false, decode(eventType, contentType, body, &integration.JoinEvent{})
	case EventStatus:
		return none, false, decode(eventType, contentType, body, &integration.StatusEvent{})
	case EventLocation:
		return none, false, decode(eventType, contentType, body, &integration.LocationEvent{})

	case "":
		return none, false, herald.Invalid("event", "the event type is required (ChirpStack's up, ack, txack, log, join, status or location)")
	}
	return none, false, herald.Invalid("event", "unknown ChirpStack event type %q (want up, ack, txack, log, join, status or location)", clip(eventType))
}

// readLog reads a log event: one about a queue item that ChirpStack
// dropped fails its message; any other says nothing herald acts on.
func readLog(e *integration.LogEvent) (herald.Inbound, bool, error) {
	var none herald.Inbound
	raw := e.GetContext()[logQueueItemID]
	if raw == "" {
		return none, false, nil
	}
	permanent := false
	switch e.GetCode() {
	case integration.LogCode_DOWNLINK_PAYLOAD_SIZE:
		permanent = true // the same item is as large at every try
	case integration.LogCode_DOWNLINK_GATEWAY, integration.LogCode_F_CNT_DOWN, integration.LogCode_EXPIRED:
	default:
		return none, false, nil
	}
	dev, err := deviceOf(e.GetDeviceInfo())
	if err != nil {
		return none, false, err
	}
	item, err := queueItem("context.queue_item_id", raw)
	if err != nil {
		return none, false, err
	}
	return herald.Inbound{Kind: herald.InboundFailed, ExternalID: item, Permanent: permanent,
		Reason: logReason(e), Device: dev}, true, nil
}

// logReason is a log event in words: its code, its description and its
// context (but the queue item), e.g. "DOWNLINK_PAYLOAD_SIZE: Device
// queue-item discarded because it exceeds the max. payload size
// (item_size=60, max_payload_size=51)".
func logReason(e *integration.LogEvent) string {
	var b strings.Builder
	b.WriteString(e.GetCode().String())
	if d := e.GetDescription(); d != "" {
		b.WriteString(": ")
		b.WriteString(d)
	}
	var ctx []string
	for _, k := range slices.Sorted(maps.Keys(e.GetContext())) {
		if k != logQueueItemID {
			ctx = append(ctx, k+"="+e.GetContext()[k])
		}
	}
	if len(ctx) > 0 {
		b.WriteString(" (" + strings.Join(ctx, ", ") + ")")
	}
	return clean(b.String())
}

// decode reads body into m, as JSON or as Protobuf.
func decode(eventType, contentType string, body []byte, m proto.Message) error {
	if len(body) == 0 {
		return herald.Invalid("body", "a %s event with an empty body", eventType)
	}
	var err error
	enc := "JSON"
	if isJSON(contentType, body) {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, m)
	} else {
		enc = "Protobuf"
		err = proto.Unmarshal(body, m)
	}
	if err != nil {
		return herald.Invalid("body", "not a ChirpStack %s event in %s: %s", eventType, enc, clean(err.Error()))
	}
	return nil
}

// isJSON reports whether an event body is JSON: by its content type, else
// by its first byte.
func isJSON(contentType string, body []byte) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err == nil {
		switch {
		case mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json"):
			return true
		case mt == ContentTypeProtobuf || mt == "application/x-protobuf" || mt == "application/protobuf" ||
			mt == "application/vnd.google.protobuf":
			return false
		}
	}
	return looksJSON(body)
}

// looksJSON reports whether body starts, after white space, with '{'.
func looksJSON(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// deviceOf returns the DevEUI of an event's deviceInfo, in lower case.
func deviceOf(d *integration.DeviceInfo) (string, error) {
	eui, ok := parseDevEUI(d.GetDevEui())
	if !ok {
		return "", herald.Invalid("body", "deviceInfo.devEui %q is not a DevEUI (16 hex digits)", clip(d.GetDevEui()))
	}
	return eui, nil
}

// queueItem checks a queue item id (a UUID) of an event.
func queueItem(field, id string) (string, error) {
	if id == "" {
		return "", herald.Invalid("body", "%s is missing", field)
	}
	item, ok := parseUUID(id)
	if !ok {
		return "", herald.Invalid("body", "%s %q is not a UUID", field, clip(id))
	}
	return item, nil
}

// uplinkView returns the Uplink JSON of an up event.
func uplinkView(dev string, e *integration.UplinkEvent) ([]byte, error) {
	u := Uplink{
		DevEUI:          dev,
		FPort:           e.GetFPort(),
		Data:            e.GetData(),
		FCnt:            e.GetFCnt(),
		RxInfo:          make([]RxInfo, 0, len(e.GetRxInfo())),
		DeduplicationID: e.GetDeduplicationId(),
	}
	if u.Data == nil {
		u.Data = []byte{}
	}
	if t := e.GetTime(); t != nil && t.CheckValid() == nil {
		u.Time = t.AsTime()
	}
	for _, rx := range e.GetRxInfo() {
		snr := rx.GetSnr()
		if math.IsNaN(float64(snr)) || math.IsInf(float64(snr), 0) {
			snr = 0 // JSON has no such numbers
		}
		u.RxInfo = append(u.RxInfo, RxInfo{GatewayID: rx.GetGatewayId(), RSSI: rx.GetRssi(), SNR: snr})
	}
	b, err := json.Marshal(u)
	if err != nil {
		return nil, herald.Invalid("body", "an up event herald cannot pass on: %v", err)
	}
	return b, nil
}
