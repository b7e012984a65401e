package chirpstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chirpstack/chirpstack/api/go/v4/common"
	"github.com/chirpstack/chirpstack/api/go/v4/gw"
	"github.com/chirpstack/chirpstack/api/go/v4/integration"
)

// Content types of the HTTP integration, as ChirpStack sets them.
const (
	contentTypeJSON     = "application/json"
	contentTypeProtobuf = "application/octet-stream"
)

// EventTopic returns the MQTT topic ChirpStack publishes an event of a
// device to (its default event_topic template).
func EventTopic(applicationID, devEUI, event string) string {
	return "application/" + applicationID + "/device/" + devEUI + "/event/" + event
}

// CommandTopic returns the MQTT topic of a command to a device (ChirpStack's
// default command_topic template); the downlink command is "down".
func CommandTopic(applicationID, devEUI, command string) string {
	return "application/" + applicationID + "/device/" + devEUI + "/command/" + command
}

// Marshal encodes an integration message as ChirpStack does: binary
// Protobuf, or JSON as its serde (pbjson) writes it — protojson's camelCase
// names and forms, compact; the fields of the integration package's own
// messages always present, default values included (ChirpStack builds them
// with pbjson's emit_fields), unset message fields left out, and the
// messages of other packages (gw, common) without their default values.
func Marshal(m proto.Message, enc Encoding) ([]byte, error) {
	if enc == Protobuf {
		return proto.Marshal(m)
	}
	b, err := marshalJSON(m.ProtoReflect())
	if err != nil {
		return nil, err
	}
	// protojson varies its whitespace from build to build; serde_json
	// writes none.
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// marshalJSON writes m as pbjson does for ChirpStack's api crate: the
// integration package with emit_fields, the others without; a Timestamp as
// chrono's to_rfc3339 writes it (pbjson-types), other well-known types as
// protojson does (pbjson-types agrees); oneof members after the other
// fields.
func marshalJSON(m protoreflect.Message) ([]byte, error) {
	desc := m.Descriptor()
	switch {
	case desc.FullName() == "google.protobuf.Timestamp":
		ts := m.Interface().(*timestamppb.Timestamp)
		if err := ts.CheckValid(); err != nil {
			return nil, err
		}
		return json.Marshal(rfc3339(ts.AsTime()))
	case desc.ParentFile().Package() == "google.protobuf":
		return protojson.Marshal(m.Interface())
	}
	opts := protojson.MarshalOptions{EmitDefaultValues: desc.ParentFile().Package() == "integration"}
	all, err := opts.Marshal(m.Interface())
	if err != nil {
		return nil, err
	}
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(all, &byName); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	write := func(fd protoreflect.FieldDescriptor) error {
		raw, ok := byName[fd.JSONName()]
		if !ok {
			return nil // unset (a message, a oneof, or a default value)
		}
		var err error
		switch {
		case fd.IsMap():
		case fd.IsList() && fd.Message() != nil:
			list := m.Get(fd).List()
			parts := make([][]byte, list.Len())
			for j := range parts {
				if parts[j], err = marshalJSON(list.Get(j).Message()); err != nil {
					return err
				}
			}
			raw = append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
		case fd.Message() != nil && !fd.IsList():
			if raw, err = marshalJSON(m.Get(fd).Message()); err != nil {
				return err
			}
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		name, _ := json.Marshal(fd.JSONName())
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(raw)
		return nil
	}
	fields := desc.Fields()
	for _, oneofs := range []bool{false, true} {
		for i := range fields.Len() {
			fd := fields.Get(i)
			if (fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic()) != oneofs {
				continue
			}
			if err := write(fd); err != nil {
				return nil, err
			}
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// rfc3339 formats t as chrono's to_rfc3339 does: UTC as +00:00, and as
// many fractional digits (none, 3, 6 or 9) as the nanoseconds need.
func rfc3339(t time.Time) string {
	t = t.UTC()
	s := t.Format("2006-01-02T15:04:05")
	switch ns := t.Nanosecond(); {
	case ns == 0:
	case ns%1e6 == 0:
		s += fmt.Sprintf(".%03d", ns/1e6)
	case ns%1e3 == 0:
		s += fmt.Sprintf(".%06d", ns/1e3)
	default:
		s += fmt.Sprintf(".%09d", ns)
	}
	return s + "+00:00"
}

// emit records an event and hands it to its device's poster. Lock held.
func (s *Sim) emit(typ string, dev *device, queueItemID string, m proto.Message) {
	s.seq++
	e := &Event{Seq: s.seq, Type: typ, DevEUI: dev.eui, QueueItemID: queueItemID, Message: m, At: time.Now()}
	s.stats.Events++
	if !s.cfg.DisableRecords {
		s.events = append(s.events, e)
	}
	if s.cfg.HTTP != nil || s.cfg.MQTT != nil {
		p := s.posters[dev.poster]
		p.outbox = append(p.outbox, e)
		s.pending++
		p.wakeUp()
	} else {
		e.Delivered = true
	}
	s.notify()
}

// poster is one of the goroutines that deliver events (HTTPConfig.Workers):
// those of its devices, in the order produced.
type poster struct {
	outbox []*Event // waiting for delivery; guarded by Sim.mu
	wake   chan struct{}
}

// wakeUp wakes the poster's goroutine.
func (p *poster) wakeUp() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// wakePublisher wakes every poster.
func (s *Sim) wakePublisher() {
	for _, p := range s.posters {
		p.wakeUp()
	}
}

// publish delivers the events of p's outbox one after the other, in order,
// until Close.
func (s *Sim) publish(p *poster) {
	for {
		s.mu.Lock()
		var e *Event
		if len(p.outbox) > 0 {
			e = p.outbox[0]
			p.outbox[0] = nil
			p.outbox = p.outbox[1:]
		}
		stop := s.pubStop
		s.mu.Unlock()
		if e == nil {
			if stop {
				return
			}
			select {
			case <-p.wake:
			case <-s.pubCtx.Done():
				return
			}
			continue
		}
		ds := s.deliver(e)
		s.mu.Lock()
		e.Deliveries, e.Delivered = ds, true
		s.pending--
		for _, d := range ds {
			if d.Err != "" {
				s.stats.EventsFailed++
			}
		}
		s.notify()
		s.mu.Unlock()
	}
}

// deliver sends e to every HTTP endpoint and to the MQTT broker, as
// ChirpStack does: once, without retrying a failure (which it only logs).
func (s *Sim) deliver(e *Event) []Delivery {
	var ds []Delivery
	if h := s.cfg.HTTP; h != nil {
		body, err := Marshal(e.Message, h.Encoding)
		for _, u := range splitURLs(h.URL) {
			d := Delivery{Target: u}
			if err != nil {
				d.Err = err.Error()
			} else {
				d.Status, d.Err = s.post(u, e.Type, body)
			}
			if d.Err != "" {
				s.logf("chirpstack sim: posting %s event to %s failed: %s", e.Type, u, d.Err)
			}
			ds = append(ds, d)
		}
	}
	if m := s.cfg.MQTT; m != nil {
		topic := EventTopic(s.cfg.ApplicationID, e.DevEUI, e.Type)
		d := Delivery{Target: "mqtt:" + topic}
		body, err := Marshal(e.Message, m.Encoding)
		switch {
		case err != nil:
			d.Err = err.Error()
		case s.pubCtx.Err() != nil:
			d.Err = "not published: the simulator closed"
		default:
			tok := s.mqtt.Publish(topic, m.QoS, false, body)
			if !tok.WaitTimeout(10 * time.Second) {
				d.Err = "publish timed out"
			} else if err := tok.Error(); err != nil {
				d.Err = err.Error()
			}
		}
		if d.Err != "" {
			s.logf("chirpstack sim: publishing %s event to %s failed: %s", e.Type, topic, d.Err)
		}
		ds = append(ds, d)
	}
	return ds
}

// post POSTs one event body to one endpoint, with ?event=<type>, the
// configured headers and ChirpStack's content type.
func (s *Sim) post(endpoint, event string, body []byte) (int, string) {
	h := s.cfg.HTTP
	u := endpoint
	if strings.Contains(u, "?") {
		u += "&event=" + event
	} else {
		u += "?event=" + event
	}
	req, err := http.NewRequestWithContext(s.pubCtx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	for k, v := range h.Headers {
		req.Header.Set(k, v)
	}
	if h.Encoding == Protobuf {
		req.Header.Set("Content-Type", contentTypeProtobuf)
	} else {
		req.Header.Set("Content-Type", contentTypeJSON)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Sprintf("HTTP status client error or server error (%s)", resp.Status)
	}
	return resp.StatusCode, ""
}

// deviceInfo is the deviceInfo of dev's events.
func (s *Sim) deviceInfo(dev *device) *integration.DeviceInfo {
	class := common.DeviceClass_CLASS_A
	if dev.classC() {
		class = common.DeviceClass_CLASS_C
	}
	return &integration.DeviceInfo{
		TenantId:           s.cfg.TenantID,
		TenantName:         s.cfg.TenantName,
		ApplicationId:      s.cfg.ApplicationID,
		ApplicationName:    s.cfg.ApplicationName,
		DeviceProfileId:    s.cfg.DeviceProfileID,
		DeviceProfileName:  s.cfg.DeviceProfileName,
		DeviceName:         dev.cfg.Name,
		DevEui:             dev.eui,
		DeviceClassEnabled: class,
	}
}

// rxInfo is the reception of an uplink by the one gateway. Lock held.
func (s *Sim) rxInfo() []*gw.UplinkRxInfo {
	ctx := make([]byte, 4)
	v := s.idRng.Uint32()
	for i := range ctx {
		ctx[i] = byte(v >> (8 * i))
	}
	return []*gw.UplinkRxInfo{{
		GatewayId: s.cfg.GatewayID,
		UplinkId:  s.idRng.Uint32(),
		NsTime:    nowPB(),
		Rssi:      -57,
		Snr:       9.25,
		Context:   ctx,
		CrcStatus: gw.CRCStatus_CRC_OK,
	}}
}

// uplinkTxInfo is an EU868 uplink at DR0 (SF12, 125 kHz).
func uplinkTxInfo() *gw.UplinkTxInfo {
	return &gw.UplinkTxInfo{
		Frequency: 868100000,
		Modulation: &gw.Modulation{Parameters: &gw.Modulation_Lora{Lora: &gw.LoraModulationInfo{
			Bandwidth: 125000, SpreadingFactor: 12, CodeRate: gw.CodeRate_CR_4_5,
		}}},
	}
}

// downlinkTxInfo is an EU868 downlink: in RX1 one second after the uplink,
// or (Class C) in RX2 at once.
func downlinkTxInfo(rx1 bool) *gw.DownlinkTxInfo {
	lora := &gw.LoraModulationInfo{Bandwidth: 125000, SpreadingFactor: 12, CodeRate: gw.CodeRate_CR_4_5, PolarizationInversion: true}
	ti := &gw.DownlinkTxInfo{Modulation: &gw.Modulation{Parameters: &gw.Modulation_Lora{Lora: lora}}}
	if rx1 {
		ti.Frequency, ti.Power = 868100000, 14
		ti.Timing = &gw.Timing{Parameters: &gw.Timing_Delay{Delay: &gw.DelayTimingInfo{Delay: durationpb.New(time.Second)}}}
	} else {
		ti.Frequency, ti.Power = 869525000, 27
		ti.Timing = &gw.Timing{Parameters: &gw.Timing_Immediately{Immediately: &gw.ImmediatelyTimingInfo{}}}
	}
	return ti
}

func nowPB() *timestamppb.Timestamp { return timestamppb.Now() }
