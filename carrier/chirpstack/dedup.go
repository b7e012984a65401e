package chirpstack

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/heraldmq/herald"
)

var _ herald.ContentHasher = (*Carrier)(nil)

// ContentHash is a downlink's dedup key (herald.ContentHasher): what
// reaches the device, SHA256(device_eui + payload + fport) in hex, of the
// DevEUI and the payload in lower-case hex and the FPort in decimal (1
// when the message names none), as a Class-C display's last command is
// told from the next. The confirmed flag, which does not change what the
// device shows, is not part of it.
func (c *Carrier) ContentHash(m *herald.Message) string {
	o, _ := readOptions(m) // Validate accepted m
	sum := sha256.Sum256([]byte(o.devEUI + hex.EncodeToString(m.Payload) + strconv.FormatUint(uint64(o.fPort), 10)))
	return hex.EncodeToString(sum[:])
}
