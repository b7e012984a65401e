package reticulum

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Hash is a truncated hash: a destination hash, an identity hash, a link id
// or a packet's truncated hash.
type Hash [TruncatedHashLen]byte

// String returns the hash in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// ParseHash reads a hash from its hex form.
func ParseHash(s string) (Hash, error) {
	var h Hash
	b, err := hex.DecodeString(s)
	if err != nil {
		return h, fmt.Errorf("reticulum: hash %q: %w", s, err)
	}
	return HashFromBytes(b)
}

// HashFromBytes copies a 16-byte slice into a Hash.
func HashFromBytes(b []byte) (Hash, error) {
	var h Hash
	if len(b) != TruncatedHashLen {
		return h, fmt.Errorf("reticulum: hash of %d bytes, want %d", len(b), TruncatedHashLen)
	}
	copy(h[:], b)
	return h, nil
}

// FullHash is SHA-256 of data.
func FullHash(data ...[]byte) [FullHashLen]byte {
	s := sha256.New()
	for _, d := range data {
		s.Write(d)
	}
	var out [FullHashLen]byte
	s.Sum(out[:0])
	return out
}

// TruncatedHash is the first 16 bytes of SHA-256 of data.
func TruncatedHash(data ...[]byte) Hash {
	f := FullHash(data...)
	var h Hash
	copy(h[:], f[:TruncatedHashLen])
	return h
}

// Bytes returns a copy of the hash as a slice.
func (h Hash) Bytes() []byte { return append([]byte{}, h[:]...) }
