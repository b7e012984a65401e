package chirpstack

import (
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/heraldmq/herald"
)

// The message params the carrier reads.
const (
	ParamFPort     = "f_port"    // the FPort, 1..MaxFPort; default DefaultFPort
	ParamConfirmed = "confirmed" // "true" (default) or "false"
)

// The FPort bounds: LoRaWAN's application ports are 1–223 (0 carries MAC
// commands only, 224 is the test port, 225–255 are reserved).
const (
	DefaultFPort = 1
	MaxFPort     = 223
)

// MaxPayload is the largest frame payload (FRMPayload) a LoRaWAN downlink
// carries in any region and at any data rate (the regional parameters'
// largest N). ChirpStack enqueues a longer item but can never transmit
// it: it drops it with a DOWNLINK_PAYLOAD_SIZE log event. A device's real
// limit is usually lower (51 bytes at EU868 DR0–2) and depends on its data
// rate; that case is left to ChirpStack, whose log event fails the message.
const MaxPayload = 242

// options are a message's carrier fields, read.
type options struct {
	devEUI    string // lower case
	fPort     uint32
	confirmed bool
}

// Validate checks a message: a DevEUI target, a payload of 1..MaxPayload
// bytes (no text), and only the params f_port and confirmed.
func (c *Carrier) Validate(m *herald.Message) error {
	_, err := readOptions(m)
	return err
}

// readOptions validates m and returns its options.
func readOptions(m *herald.Message) (options, error) {
	o := options{fPort: DefaultFPort, confirmed: true}
	eui, ok := parseDevEUI(m.Target)
	if !ok {
		return o, herald.Invalid("target", "%q is not a DevEUI: want the device's EUI-64, 16 hex digits", clip(m.Target))
	}
	o.devEUI = eui
	switch {
	case m.Text != "":
		return o, herald.Invalid("text", "a chirpstack message takes a payload (the frame's bytes), not a text")
	case len(m.Payload) == 0:
		return o, herald.Invalid("payload", "is required for a chirpstack message (the frame's bytes)")
	case len(m.Payload) > MaxPayload:
		return o, herald.Invalid("payload", "%d bytes: a LoRaWAN downlink carries at most %d", len(m.Payload), MaxPayload)
	}
	for k, v := range m.Params {
		switch k {
		case ParamFPort:
			if v == "" {
				continue
			}
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n < 1 || n > MaxFPort {
				return o, herald.Invalid("params.f_port", "%q: want an application port, 1 to %d", clip(v), MaxFPort)
			}
			o.fPort = uint32(n)
		case ParamConfirmed:
			switch v {
			case "true", "":
			case "false":
				o.confirmed = false
			default:
				return o, herald.Invalid("params.confirmed", "%q: want true or false", clip(v))
			}
		default:
			return o, herald.Invalid("params", "unknown parameter %q for a chirpstack message (want f_port or confirmed)", clip(k))
		}
	}
	return o, nil
}

// parseDevEUI parses a DevEUI of 16 hex digits, either case, and returns
// it in lower case, as ChirpStack writes it.
func parseDevEUI(s string) (string, bool) {
	if len(s) != 16 {
		return "", false
	}
	if _, err := hex.DecodeString(s); err != nil {
		return "", false
	}
	return strings.ToLower(s), true
}

// parseUUID parses a UUID in its hyphenated form, either case, and returns
// it in lower case, as ChirpStack writes ids.
func parseUUID(s string) (string, bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return "", false
	}
	if _, err := hex.DecodeString(s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]); err != nil {
		return "", false
	}
	return strings.ToLower(s), true
}

// clipLen is how much of a caller's text an error quotes.
const clipLen = 64

// clip shortens a text for an error message.
func clip(s string) string {
	if len(s) <= clipLen {
		return s
	}
	return strings.ToValidUTF8(s[:clipLen], "") + "…"
}
