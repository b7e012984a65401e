package reticulum

import "strings"

// Destination types, as carried in a packet's flags.
const (
	DestSingle uint8 = 0x00
	DestGroup  uint8 = 0x01
	DestPlain  uint8 = 0x02
	DestLink   uint8 = 0x03
)

// NameHash is the first 10 bytes of SHA-256 of a destination's full name
// ("app.aspect1.aspect2").
func NameHash(app string, aspects ...string) [NameHashLen]byte {
	f := FullHash([]byte(FullName(app, aspects...)))
	var n [NameHashLen]byte
	copy(n[:], f[:NameHashLen])
	return n
}

// FullName joins an app name and its aspects with dots.
func FullName(app string, aspects ...string) string {
	return strings.Join(append([]string{app}, aspects...), ".")
}

// DestinationHash computes a destination's hash as the reference does: the
// truncated hash of the name hash followed by the identity hash. A nil
// identity gives a PLAIN destination's hash (name hash alone).
func DestinationHash(identity *Identity, app string, aspects ...string) Hash {
	n := NameHash(app, aspects...)
	if identity == nil {
		return TruncatedHash(n[:])
	}
	ih := identity.Hash()
	return TruncatedHash(n[:], ih[:])
}
