package lxmf

import (
	"bytes"

	"github.com/heraldmq/herald/reticulum"
	"github.com/vmihailenco/msgpack/v5"
)

// PeerErrorInvalidStamp is the code a propagation node sends (as msgpack
// [code] in a link packet, before tearing the link down) when it rejects a
// message's propagation stamp.
const PeerErrorInvalidStamp = 0xf5

// PropagationData is a message prepared for a propagation node: the
// destination hash followed by the rest of the packed message encrypted to
// the recipient, and its transient id (SHA-256 of that).
type PropagationData struct {
	LXMFData    []byte
	TransientID [reticulum.FullHashLen]byte
}

// EncryptForPropagation encrypts a packed message to its recipient, as the
// reference does for propagated delivery. ratchet is the recipient's
// announced ratchet, or nil.
func EncryptForPropagation(m *Message, recipient *reticulum.Identity, ratchet []byte) (*PropagationData, error) {
	ct, err := recipient.Encrypt(m.Packed[DestinationLength:], ratchet)
	if err != nil {
		return nil, err
	}
	return newPropagationData(m.Destination, ct), nil
}

func newPropagationData(dest reticulum.Hash, ct []byte) *PropagationData {
	d := append(dest.Bytes(), ct...)
	return &PropagationData{LXMFData: d, TransientID: reticulum.FullHash(d)}
}

// Container packs what is uploaded to a propagation node: msgpack
// [time, [lxmf data || propagation stamp]].
func (p *PropagationData) Container(now float64, stamp []byte) ([]byte, error) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	for _, step := range []func() error{
		func() error { return e.EncodeArrayLen(2) },
		func() error { return e.EncodeFloat64(now) },
		func() error { return e.EncodeArrayLen(1) },
		func() error { return e.EncodeBytes(append(append([]byte{}, p.LXMFData...), stamp...)) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// ValidatePropagationStamp checks the stamp at the end of an uploaded
// message against cost, as a propagation node does, and returns the
// transient id and the stamp's value.
func ValidatePropagationStamp(transient []byte, cost int) (id [reticulum.FullHashLen]byte, value int, ok bool) {
	if len(transient) <= Overhead+StampSize {
		return id, 0, false
	}
	data, stamp := transient[:len(transient)-StampSize], transient[len(transient)-StampSize:]
	id = reticulum.FullHash(data)
	wb := Workblock(id[:], WorkblockRoundsPN)
	if !StampValid(stamp, cost, wb) {
		return id, 0, false
	}
	return id, StampValue(wb, stamp), true
}
