package lxmf

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/heraldmq/herald/reticulum"
	"github.com/vmihailenco/msgpack/v5"
)

// Wire sizes of the reference (LXMF 1.x).
const (
	// DestinationLength is the length of the destination and source hashes.
	DestinationLength = reticulum.TruncatedHashLen
	// SignatureLength is the length of a message signature.
	SignatureLength = reticulum.SignatureLen
	timestampSize   = 8
	structOverhead  = 8
	// Overhead is the size a message adds to its title, content and fields.
	Overhead = 2*DestinationLength + SignatureLength + timestampSize + structOverhead
	// EncryptedPacketMaxContent is the largest content an opportunistic
	// (single packet) message can carry.
	EncryptedPacketMaxContent = reticulum.EncryptedMDU + timestampSize - Overhead + DestinationLength
	// LinkPacketMaxContent is the largest content a direct message sends as
	// one link packet; larger ones go as a resource.
	LinkPacketMaxContent = reticulum.LinkMDU - Overhead
)

// Field ids of the reference that a carrier is likely to use.
const (
	FieldThread     = 0x08
	FieldTicket     = 0x0C
	FieldRenderer   = 0x0F
	FieldCustomType = 0xFB
	FieldCustomData = 0xFC
)

// Message is an LXMF message.
type Message struct {
	Destination reticulum.Hash // the recipient's lxmf.delivery hash
	Source      reticulum.Hash // the sender's lxmf.delivery hash
	Timestamp   float64        // seconds since the epoch
	Title       []byte
	Content     []byte
	// Fields maps field ids to values; they are packed in ascending key
	// order.
	Fields map[int]any
	// Stamp is the proof of work the recipient asked for, if any.
	Stamp []byte

	// Set by Pack and Unpack.
	Hash      [reticulum.FullHashLen]byte // the message id
	Signature []byte
	Packed    []byte

	// Set by Unpack.
	SignatureValid bool
	// UnverifiedReason is SourceUnknown or SignatureInvalid when
	// SignatureValid is false.
	UnverifiedReason int
	// payloadNoStamp is the msgpack of [timestamp, title, content, fields].
	payloadNoStamp []byte
}

// Reasons a received message's signature could not be verified.
const (
	SourceUnknown    = 0x01
	SignatureInvalid = 0x02
)

// packPayload packs [timestamp, title, content, fields(, stamp)] as the
// reference's msgpack does.
func (m *Message) packPayload(withStamp bool) ([]byte, error) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.SetSortMapKeys(true)
	n := 4
	if withStamp && m.Stamp != nil {
		n = 5
	}
	e.UseCompactInts(true)
	for _, step := range []func() error{
		func() error { return e.EncodeArrayLen(n) },
		func() error { return e.EncodeFloat64(m.Timestamp) },
		func() error { return e.EncodeBytes(nonNil(m.Title)) },
		func() error { return e.EncodeBytes(nonNil(m.Content)) },
		func() error { return encodeFields(e, m.Fields) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if n == 5 {
		if err := e.EncodeBytes(m.Stamp); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// encodeFields packs fields as a map in ascending key order with compact
// integers, as the reference's msgpack packs a dict built in that order.
func encodeFields(e *msgpack.Encoder, fields map[int]any) error {
	keys := make([]int, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	if err := e.EncodeMapLen(len(keys)); err != nil {
		return err
	}
	for _, k := range keys {
		if err := e.EncodeInt(int64(k)); err != nil {
			return err
		}
		if err := e.Encode(fields[k]); err != nil {
			return err
		}
	}
	return nil
}

// unmarshalLoose decodes msgpack with maps of any key type decoded as
// map[any]any.
func unmarshalLoose(b []byte, v any) error {
	d := msgpack.NewDecoder(bytes.NewReader(b))
	d.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	return d.Decode(v)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// ComputeHash sets m.Hash (the message id) from destination, source and the
// payload without the stamp. Stamps are computed over the hash, so Pack
// calls it before a stamp is generated.
func (m *Message) ComputeHash() error {
	p, err := m.packPayload(false)
	if err != nil {
		return err
	}
	m.payloadNoStamp = p
	m.Hash = reticulum.FullHash(m.Destination[:], m.Source[:], p)
	return nil
}

// Pack signs the message with the source identity and sets Hash, Signature
// and Packed: destination hash, source hash, signature, then the msgpack
// payload (with the stamp when set).
func (m *Message) Pack(source *reticulum.Identity) error {
	if err := m.ComputeHash(); err != nil {
		return err
	}
	signed := append(append(append(m.Destination.Bytes(), m.Source[:]...), m.payloadNoStamp...), m.Hash[:]...)
	sig, err := source.Sign(signed)
	if err != nil {
		return err
	}
	payload, err := m.packPayload(true)
	if err != nil {
		return err
	}
	m.Signature = sig
	m.Packed = append(append(append(m.Destination.Bytes(), m.Source[:]...), sig...), payload...)
	return nil
}

// ContentSize is the reference's measure that decides packet or resource:
// the packed payload less timestamp and structure overhead.
func (m *Message) ContentSize() int {
	return len(m.Packed) - 2*DestinationLength - SignatureLength - timestampSize - structOverhead
}

// Unpack reads a packed message. lookup returns the identity of a source
// hash (nil if unknown) to verify the signature; SignatureValid and
// UnverifiedReason report the result.
func Unpack(packed []byte, lookup func(reticulum.Hash) *reticulum.Identity) (*Message, error) {
	if len(packed) < 2*DestinationLength+SignatureLength+1 {
		return nil, errors.New("lxmf: message too short")
	}
	m := &Message{Packed: append([]byte{}, packed...)}
	copy(m.Destination[:], packed)
	copy(m.Source[:], packed[DestinationLength:])
	m.Signature = append([]byte{}, packed[2*DestinationLength:2*DestinationLength+SignatureLength]...)
	payload := packed[2*DestinationLength+SignatureLength:]
	elems, err := splitArray(payload)
	if err != nil {
		return nil, err
	}
	if len(elems) < 4 {
		return nil, fmt.Errorf("lxmf: payload has %d elements", len(elems))
	}
	if err := msgpack.Unmarshal(elems[0], &m.Timestamp); err != nil {
		return nil, fmt.Errorf("lxmf: timestamp: %w", err)
	}
	if m.Title, err = bytesOrString(elems[1]); err != nil {
		return nil, err
	}
	if m.Content, err = bytesOrString(elems[2]); err != nil {
		return nil, err
	}
	if m.Fields, err = decodeFields(elems[3]); err != nil {
		return nil, err
	}
	noStamp := payload
	if len(elems) > 4 {
		if err := msgpack.Unmarshal(elems[4], &m.Stamp); err != nil {
			return nil, fmt.Errorf("lxmf: stamp: %w", err)
		}
		noStamp = append([]byte{0x94}, bytes.Join(elems[:4], nil)...)
	}
	m.payloadNoStamp = noStamp
	m.Hash = reticulum.FullHash(m.Destination[:], m.Source[:], noStamp)
	m.UnverifiedReason = SourceUnknown
	if id := lookup(m.Source); id != nil {
		signed := append(append(append(m.Destination.Bytes(), m.Source[:]...), noStamp...), m.Hash[:]...)
		m.SignatureValid = id.Verify(m.Signature, signed)
		m.UnverifiedReason = 0
		if !m.SignatureValid {
			m.UnverifiedReason = SignatureInvalid
		}
	}
	return m, nil
}

// splitArray returns the raw msgpack bytes of each element of an array.
func splitArray(b []byte) ([][]byte, error) {
	r := bytes.NewReader(b)
	d := msgpack.NewDecoder(r)
	n, err := d.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("lxmf: payload: %w", err)
	}
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		start := len(b) - r.Len()
		if err := d.Skip(); err != nil {
			return nil, fmt.Errorf("lxmf: payload: %w", err)
		}
		out = append(out, b[start:len(b)-r.Len()])
	}
	return out, nil
}

func bytesOrString(raw []byte) ([]byte, error) {
	var v any
	if err := msgpack.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("lxmf: unexpected %T for title or content", v)
}

func decodeFields(raw []byte) (map[int]any, error) {
	var v map[any]any
	if err := unmarshalLoose(raw, &v); err != nil {
		return nil, fmt.Errorf("lxmf: fields: %w", err)
	}
	out := make(map[int]any, len(v))
	for k, val := range v {
		i, ok := asInt(k)
		if !ok {
			continue
		}
		out[i] = val
	}
	return out, nil
}

// asInt converts a msgpack-decoded integer to int.
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
	case float64:
		return int(x), true
	case float32:
		return int(x), true
	}
	return 0, false
}
