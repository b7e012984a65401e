package chirpstack

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config and Device.
const (
	// DefaultMaxPayload is a device's default largest downlink FRMPayload:
	// 51 bytes, EU868 DR0–DR2 (SF12–SF10 at 125 kHz) without MAC commands,
	// the first downlink opportunity of a device at a low data rate.
	DefaultMaxPayload = 51
	// DefaultClassCTimeout is the default device-profile "Class-C confirmed
	// downlink timeout" (ChirpStack's UI asks for it; 5 s is common).
	DefaultClassCTimeout = 5 * time.Second
	// DefaultHTTPTimeout is ChirpStack's HTTP integration client timeout.
	DefaultHTTPTimeout = 5 * time.Second
	// DefaultListen is where the gRPC API listens unless told otherwise.
	DefaultListen = "127.0.0.1:0"

	DefaultTenantID          = "52f14cd4-c6f1-4fbd-8f87-4025e1d49242"
	DefaultTenantName        = "herald-sim"
	DefaultApplicationID     = "6a1b0c4e-2f3d-4e5a-9b7c-8d9e0f1a2b3c"
	DefaultApplicationName   = "herald-sim"
	DefaultDeviceProfileID   = "0f5d8c2a-7b3e-4c1d-a9e8-1b2c3d4e5f60"
	DefaultDeviceProfileName = "herald-sim-eu868"
	DefaultGatewayID         = "0016c001ff10a235"
	DefaultRegionConfigID    = "eu868"
)

// Class is a LoRaWAN device class the simulator runs.
type Class string

// The device classes: A receives only right after its own uplinks, C at
// any time. (Class B is not simulated.)
const (
	ClassA Class = "A"
	ClassC Class = "C"
)

// Device is one simulated end-device.
type Device struct {
	// DevEUI is the device's EUI-64, 16 hex digits (either case; events
	// carry it in lower case, as ChirpStack does).
	DevEUI string
	// Class is ClassA (the default) or ClassC.
	Class Class
	// Name is the device's name in events; default "device-<deveui>".
	Name string
	// MaxPayload is the largest downlink payload (bytes) the device's
	// first downlink opportunity carries; a longer queue item is dropped
	// at transmission time with a log event DOWNLINK_PAYLOAD_SIZE. 0 means
	// DefaultMaxPayload.
	MaxPayload int
}

// Encoding is the body format of integration events: ChirpStack's "json"
// flag of the HTTP and MQTT integrations.
type Encoding string

// The encodings: JSON as ChirpStack's serde (pbjson) writes it (see
// Marshal), or binary Protobuf.
const (
	JSON     Encoding = "json"
	Protobuf Encoding = "protobuf"
)

// HTTPConfig is the HTTP integration: every event is POSTed to each
// endpoint with ?event=<type>.
type HTTPConfig struct {
	// URL is the endpoint, or several separated by commas (ChirpStack's
	// event_endpoint_url).
	URL string
	// Headers are added to every request, e.g. Authorization.
	Headers map[string]string
	// Encoding is JSON (default, Content-Type application/json) or
	// Protobuf (application/octet-stream).
	Encoding Encoding
	// Timeout bounds each request; 0 means DefaultHTTPTimeout.
	Timeout time.Duration
	// Workers is how many events are posted at once. The devices are
	// shared out among that many posters, each of which posts its
	// devices' events one after the other, so that the events of one
	// device keep their order while those of different devices overlap
	// (as in ChirpStack, whose flows run concurrently per device). 0 or 1
	// posts every event in turn, in the order produced. An MQTT
	// integration publishes from the same posters.
	Workers int
}

// MQTTConfig is the MQTT integration: events are published to
// application/<application_id>/device/<dev_eui>/event/<type>, and downlink
// commands are taken from application/+/device/+/command/down.
type MQTTConfig struct {
	// Server is the broker, tcp://host:port (ChirpStack's default is
	// tcp://127.0.0.1:1883/).
	Server string
	// Username and Password authenticate, when set.
	Username, Password string
	// ClientID is the MQTT client id; default a random one.
	ClientID string
	// QoS of publications and of the command subscription: 0 (ChirpStack's
	// default), 1 or 2.
	QoS byte
	// Encoding is JSON (default) or Protobuf, for events and commands.
	Encoding Encoding
	// ConnectTimeout bounds the first connection in Start; default 10 s.
	ConnectTimeout time.Duration
}

// UnknownDevice says how the gRPC API answers for a DevEUI that is not
// configured.
type UnknownDevice string

// What ChirpStack v4.19 does depends on the API key: with a tenant key its
// access check fails (Unauthenticated); with an admin key Enqueue fails on
// the foreign key (Internal), GetQueue lists nothing and FlushQueue
// succeeds. NotFound is what ChirpStack answers when it looks the device
// up first (as it does for a payload given as an object).
const (
	UnknownDeviceNotFound  UnknownDevice = "not-found"
	UnknownDeviceAdminKey  UnknownDevice = "admin-key"
	UnknownDeviceTenantKey UnknownDevice = "tenant-key"
)

// Config configures a Sim. The zero value of every knob is a perfect
// network: no delay, no loss, every confirmed downlink acknowledged.
type Config struct {
	// Listen is the gRPC API's address; default DefaultListen (a free
	// loopback port; Addr tells which).
	Listen string
	// Tokens are the API tokens accepted as "authorization: Bearer
	// <token>" metadata. At least one is required.
	Tokens []string
	// Devices are the simulated devices; at least one is required.
	Devices []Device

	// The ids and names events carry in deviceInfo; each defaults to the
	// matching Default constant. ApplicationID is also the application
	// of the MQTT topics.
	TenantID, TenantName           string
	ApplicationID, ApplicationName string
	DeviceProfileID                string
	DeviceProfileName              string
	// GatewayID (16 hex digits) is the gateway of every uplink and
	// downlink; RegionConfigID the region of uplinks.
	GatewayID      string
	RegionConfigID string

	// GatewayDelay is the time between choosing a queue item for
	// transmission and the gateway's TX acknowledgement (the txack event).
	GatewayDelay time.Duration
	// UplinkInterval is the period of each device's own uplinks (the
	// first one at a random phase within the period); 0 means no periodic
	// uplinks (use Sim.Uplink). A Class-A device receives only after an
	// uplink.
	UplinkInterval time.Duration
	// UplinkFPort is the FPort of periodic uplinks; default 1.
	UplinkFPort uint32
	// AckDelay is how long after receiving a confirmed downlink the device
	// sends the uplink that answers it (with the ACK bit, or without it
	// for a NACK). A negative value sends no extra uplink: the answer
	// rides on the device's next periodic or Sim.Uplink uplink.
	AckDelay time.Duration
	// ClassCTimeout is how long ChirpStack waits for a Class-C device to
	// acknowledge a confirmed downlink before it sends ack with
	// acknowledged=false; 0 means DefaultClassCTimeout.
	ClassCTimeout time.Duration
	// ClassCLock is the least time between two Class-C downlinks of one
	// device from the scheduler (ChirpStack's class_c_lock_duration,
	// 5 s by default there; 0 here).
	ClassCLock time.Duration

	// Loss is the share (0..1) of transmitted downlinks the device never
	// receives: it does not answer a confirmed one, so ChirpStack reports
	// ack acknowledged=false (Class A: at its next uplink; Class C: after
	// ClassCTimeout).
	Loss float64
	// NackRate is the share (0..1) of received confirmed downlinks the
	// device answers with an uplink without the ACK bit.
	NackRate float64
	// GatewayErrorRate is the share (0..1) of transmissions the gateway
	// refuses (TX ack status TOO_LATE): a log event DOWNLINK_GATEWAY, and
	// the item stays queued for the next opportunity.
	GatewayErrorRate float64

	// JoinOnStart makes every device join (OTAA) when the simulator
	// starts: a join event each.
	JoinOnStart bool
	// FlushQueueOnJoin flushes a device's queue when it joins (the
	// device profile's flush_queue_on_activate).
	FlushQueueOnJoin bool
	// StatusEvery sends a status event (a DevStatusAns) with every Nth
	// uplink of a device; 0 never.
	StatusEvery int

	// UnknownDevice is the gRPC answer for an unknown DevEUI; default
	// UnknownDeviceNotFound.
	UnknownDevice UnknownDevice
	// HonorQueueItemID makes Enqueue keep a queue_item.id given in the
	// request. ChirpStack v4.19 ignores it and always assigns a new UUID
	// (the MQTT downlink command's id is kept, as ChirpStack does).
	HonorQueueItemID bool

	// HTTP and MQTT are the integrations; nil for none. Events are
	// recorded either way.
	HTTP *HTTPConfig
	MQTT *MQTTConfig

	// Seed seeds every random draw (ids, loss, NACKs, phases): with the
	// same seed, calls and zero delays a run repeats exactly.
	Seed int64
	// DisableRecords keeps no record of items, transmissions, commands
	// and events (Stats still count), for long runs.
	DisableRecords bool
	// Logf, when set, receives the warnings ChirpStack would log (a
	// failed event post, a refused MQTT command).
	Logf func(format string, args ...any)
}

// SequentialDevices returns n devices of one class whose DevEUIs count up
// from first.
func SequentialDevices(n int, first uint64, class Class, maxPayload int) []Device {
	ds := make([]Device, n)
	for i := range ds {
		ds[i] = Device{DevEUI: fmt.Sprintf("%016x", first+uint64(i)), Class: class, MaxPayload: maxPayload}
	}
	return ds
}

// withDefaults returns cfg with its defaults filled in, or what is wrong
// with it.
func (cfg Config) withDefaults() (Config, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&cfg.Listen, DefaultListen)
	def(&cfg.TenantID, DefaultTenantID)
	def(&cfg.TenantName, DefaultTenantName)
	def(&cfg.ApplicationID, DefaultApplicationID)
	def(&cfg.ApplicationName, DefaultApplicationName)
	def(&cfg.DeviceProfileID, DefaultDeviceProfileID)
	def(&cfg.DeviceProfileName, DefaultDeviceProfileName)
	def(&cfg.GatewayID, DefaultGatewayID)
	def(&cfg.RegionConfigID, DefaultRegionConfigID)
	if cfg.UnknownDevice == "" {
		cfg.UnknownDevice = UnknownDeviceNotFound
	}
	if cfg.UplinkFPort == 0 {
		cfg.UplinkFPort = 1
	}
	if cfg.ClassCTimeout == 0 {
		cfg.ClassCTimeout = DefaultClassCTimeout
	}

	if len(cfg.Tokens) == 0 {
		bad("no API token: set at least one (Tokens)")
	}
	for i, t := range cfg.Tokens {
		if t == "" {
			bad("API token %d is empty", i+1)
		}
	}
	for name, id := range map[string]string{"tenant id": cfg.TenantID, "application id": cfg.ApplicationID, "device-profile id": cfg.DeviceProfileID} {
		if _, err := parseUUID(id); err != nil {
			bad("%s %q: %v", name, id, err)
		}
	}
	if _, err := parseEUI(cfg.GatewayID); err != nil {
		bad("gateway id %q: %v", cfg.GatewayID, err)
	}
	switch cfg.UnknownDevice {
	case UnknownDeviceNotFound, UnknownDeviceAdminKey, UnknownDeviceTenantKey:
	default:
		bad("unknown-device answer %q: want %s, %s or %s", cfg.UnknownDevice, UnknownDeviceNotFound, UnknownDeviceAdminKey, UnknownDeviceTenantKey)
	}
	for name, v := range map[string]float64{"loss": cfg.Loss, "NACK rate": cfg.NackRate, "gateway error rate": cfg.GatewayErrorRate} {
		if v < 0 || v > 1 || v != v {
			bad("%s %v: want 0..1", name, v)
		}
	}
	for name, d := range map[string]time.Duration{"gateway delay": cfg.GatewayDelay, "uplink interval": cfg.UplinkInterval, "Class-C timeout": cfg.ClassCTimeout, "Class-C lock": cfg.ClassCLock} {
		if d < 0 {
			bad("%s %v is negative", name, d)
		}
	}
	if cfg.StatusEvery < 0 {
		bad("status every %d uplinks: want 0 or more", cfg.StatusEvery)
	}
	if cfg.UplinkFPort > 223 {
		bad("uplink FPort %d: want 1..223", cfg.UplinkFPort)
	}

	if len(cfg.Devices) == 0 {
		bad("no devices: configure at least one")
	}
	devs := make([]Device, len(cfg.Devices))
	seen := make(map[string]bool, len(cfg.Devices))
	for i, d := range cfg.Devices {
		eui, err := parseEUI(d.DevEUI)
		if err != nil {
			bad("device %d: DevEUI %q: %v", i+1, d.DevEUI, err)
			continue
		}
		if seen[eui] {
			bad("device %d: DevEUI %s configured twice", i+1, eui)
		}
		seen[eui] = true
		d.DevEUI = eui
		switch strings.ToUpper(string(d.Class)) {
		case "", "A":
			d.Class = ClassA
		case "C":
			d.Class = ClassC
		default:
			bad("device %s: class %q: want A or C", eui, d.Class)
		}
		if d.Name == "" {
			d.Name = "device-" + eui
		}
		if d.MaxPayload == 0 {
			d.MaxPayload = DefaultMaxPayload
		}
		if d.MaxPayload < 0 || d.MaxPayload > 250 {
			bad("device %s: max payload %d: want 1..250 bytes", eui, d.MaxPayload)
		}
		devs[i] = d
	}
	cfg.Devices = devs

	if h := cfg.HTTP; h != nil {
		hc := *h
		if hc.Encoding == "" {
			hc.Encoding = JSON
		}
		if hc.Timeout == 0 {
			hc.Timeout = DefaultHTTPTimeout
		}
		if hc.Encoding != JSON && hc.Encoding != Protobuf {
			bad("HTTP integration encoding %q: want json or protobuf", hc.Encoding)
		}
		if hc.Workers < 0 {
			bad("HTTP integration workers %d: want 0 or more", hc.Workers)
		}
		urls := splitURLs(hc.URL)
		if len(urls) == 0 {
			bad("HTTP integration: no endpoint URL")
		}
		for _, u := range urls {
			p, err := url.Parse(u)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				bad("HTTP integration endpoint %q: want an http:// or https:// URL", u)
			}
		}
		for k := range hc.Headers {
			if k == "" || strings.ContainsAny(k, " :\r\n") {
				bad("HTTP integration header name %q is not valid", k)
			}
		}
		cfg.HTTP = &hc
	}
	if m := cfg.MQTT; m != nil {
		mc := *m
		if mc.Encoding == "" {
			mc.Encoding = JSON
		}
		if mc.ConnectTimeout == 0 {
			mc.ConnectTimeout = 10 * time.Second
		}
		if mc.Encoding != JSON && mc.Encoding != Protobuf {
			bad("MQTT integration encoding %q: want json or protobuf", mc.Encoding)
		}
		if mc.QoS > 2 {
			bad("MQTT QoS %d: want 0, 1 or 2", mc.QoS)
		}
		mc.Server = strings.TrimSuffix(mc.Server, "/")
		p, err := url.Parse(mc.Server)
		if mc.Server == "" || err != nil || p.Host == "" {
			bad("MQTT server %q: want tcp://host:port", m.Server)
		}
		cfg.MQTT = &mc
	}
	if len(errs) > 0 {
		return cfg, fmt.Errorf("chirpstack sim: %w", errors.Join(errs...))
	}
	return cfg, nil
}

// splitURLs splits ChirpStack's comma-separated endpoint list.
func splitURLs(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// parseEUI parses an EUI-64 as ChirpStack does (hex, either case, 8 bytes)
// and returns it in lower case. Unlike ChirpStack it refuses "".
func parseEUI(s string) (string, error) {
	if len(s) != 16 {
		return "", fmt.Errorf("want 16 hex digits, got %d characters", len(s))
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
