package reticulum

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Resource constants of the reference.
const (
	mapHashLen          = 4
	resourceRandomLen   = 4
	advOverhead         = 134
	hashmapMaxLen       = (LinkMDU - advOverhead) / mapHashLen
	resourceWindowMax   = 75
	collisionGuardSize  = 2*resourceWindowMax + hashmapMaxLen
	hashmapExhausted    = 0xFF
	hashmapNotExhausted = 0x00
)

// Resource advertisement flag bits.
const (
	advEncrypted  = 1 << 0
	advCompressed = 1 << 1
	advSplit      = 1 << 2
	advMetadata   = 1 << 5
)

// advertisement is a resource advertisement: a msgpack map with the
// reference's one-letter keys, in the reference's key order.
type advertisement struct {
	TransferSize int    // t: encrypted size
	DataSize     int    // d: uncompressed size including metadata
	Parts        int    // n
	Hash         []byte // h: full hash of data and random hash
	RandomHash   []byte // r
	OriginalHash []byte // o: hash of the first segment
	Segment      int    // i
	Segments     int    // l
	RequestID    []byte // q: nil unless the resource is a request/response
	Flags        int    // f
	Hashmap      []byte // m: map hashes of this advertisement's hashmap segment
}

func (a *advertisement) marshal() ([]byte, error) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	ints := func(k string, v int) error {
		if err := e.EncodeString(k); err != nil {
			return err
		}
		return e.EncodeInt(int64(v))
	}
	bin := func(k string, v []byte) error {
		if err := e.EncodeString(k); err != nil {
			return err
		}
		if v == nil {
			return e.EncodeNil()
		}
		return e.EncodeBytes(v)
	}
	steps := []func() error{
		func() error { return e.EncodeMapLen(11) },
		func() error { return ints("t", a.TransferSize) },
		func() error { return ints("d", a.DataSize) },
		func() error { return ints("n", a.Parts) },
		func() error { return bin("h", a.Hash) },
		func() error { return bin("r", a.RandomHash) },
		func() error { return bin("o", a.OriginalHash) },
		func() error { return ints("i", a.Segment) },
		func() error { return ints("l", a.Segments) },
		func() error { return bin("q", a.RequestID) },
		func() error { return ints("f", a.Flags) },
		func() error { return bin("m", a.Hashmap) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func parseAdvertisement(b []byte) (*advertisement, error) {
	var m map[string]any
	if err := msgpack.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	a := &advertisement{}
	var err error
	geti := func(k string) int {
		v, ok := asInt(m[k])
		if !ok && err == nil {
			err = fmt.Errorf("reticulum: advertisement field %q", k)
		}
		return v
	}
	getb := func(k string, optional bool) []byte {
		v, ok := m[k].([]byte)
		if !ok && !(optional && m[k] == nil) && err == nil {
			err = fmt.Errorf("reticulum: advertisement field %q", k)
		}
		return v
	}
	a.TransferSize, a.DataSize, a.Parts = geti("t"), geti("d"), geti("n")
	a.Hash, a.RandomHash, a.OriginalHash = getb("h", false), getb("r", false), getb("o", false)
	a.Segment, a.Segments, a.Flags = geti("i"), geti("l"), geti("f")
	a.RequestID, a.Hashmap = getb("q", true), getb("m", false)
	if err != nil {
		return nil, err
	}
	if len(a.Hash) != FullHashLen || len(a.RandomHash) != resourceRandomLen || a.Parts < 1 || a.TransferSize < 0 || len(a.Hashmap)%mapHashLen != 0 {
		return nil, errors.New("reticulum: malformed advertisement")
	}
	return a, nil
}

// asInt converts any msgpack-decoded integer to int.
func asInt(v any) (int, bool) {
	switch x := v.(type) {
	case int8:
		return int(x), true
	case int16:
		return int(x), true
	case int32:
		return int(x), true
	case int64:
		return int(x), true
	case uint8:
		return int(x), true
	case uint16:
		return int(x), true
	case uint32:
		return int(x), true
	case uint64:
		return int(x), true
	case int:
		return x, true
	}
	return 0, false
}

// mapHash is a part's 4-byte map hash.
func mapHash(part, randomHash []byte) []byte {
	h := FullHash(part, randomHash)
	return h[:mapHashLen]
}
