package reticulum

import (
	"crypto/ecdh"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// loadKAT reads a known-answer file produced by running the reference
// implementation (RNS 1.x / LXMF 1.x).
func loadKAT(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// unhex decodes a hex string from a vector; an empty string gives nil.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	if s == "" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustIdentity(t *testing.T, prvHex string) *Identity {
	t.Helper()
	id, err := IdentityFromPrivateKey(unhex(t, prvHex))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustX25519(t *testing.T, prvHex string) *ecdh.PrivateKey {
	t.Helper()
	k, err := ecdh.X25519().NewPrivateKey(unhex(t, prvHex))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustParse(t *testing.T, rawHex string) *Packet {
	t.Helper()
	p, err := ParsePacket(unhex(t, rawHex))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func hexEq(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if g := hex.EncodeToString(got); g != want {
		t.Errorf("%s:\n got %s\nwant %s", what, g, want)
	}
}

func hexString(b []byte) string { return hex.EncodeToString(b) }
