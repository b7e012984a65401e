package chirpstack

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
)

// newUUID draws a version-4 UUID from rng, in ChirpStack's form
// (hyphenated, lower case).
func newUUID(rng *rand.Rand) string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(b[:])
}

func formatUUID(b []byte) string {
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// parseUUID parses a UUID in the forms Rust's uuid crate accepts (simple,
// hyphenated, braced, urn) and returns it hyphenated in lower case.
func parseUUID(s string) (string, error) {
	t := strings.TrimPrefix(s, "urn:uuid:")
	if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
		t = t[1 : len(t)-1]
	}
	switch len(t) {
	case 32:
	case 36:
		if t[8] != '-' || t[13] != '-' || t[18] != '-' || t[23] != '-' {
			return "", fmt.Errorf("invalid UUID %q: misplaced hyphens", s)
		}
		t = strings.ReplaceAll(t, "-", "")
	default:
		return "", fmt.Errorf("invalid UUID %q: invalid length", s)
	}
	b, err := hex.DecodeString(t)
	if err != nil || len(b) != 16 {
		return "", fmt.Errorf("invalid UUID %q: invalid character", s)
	}
	return formatUUID(b), nil
}

// apiEUI parses a DevEUI of an API request as ChirpStack's EUI64::from_str
// does: "" is the zero EUI, anything else must be 16 hex digits. On failure
// it returns the message of Rust's hex crate, which ChirpStack answers with.
func apiEUI(s string) (eui, problem string) {
	if s == "" {
		return "0000000000000000", ""
	}
	if len(s)%2 == 1 {
		return "", "Odd number of digits"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", fmt.Sprintf("Invalid character %q at position %d", c, i)
		}
	}
	if len(s) != 16 {
		return "", "Invalid string length"
	}
	return strings.ToLower(s), ""
}
