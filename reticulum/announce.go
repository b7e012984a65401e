package reticulum

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"time"
)

// Announce is a destination's announce: its public key, name hash, a random
// hash (5 random bytes and a 5-byte timestamp), an optional ratchet, a
// signature and application data.
type Announce struct {
	Destination Hash
	Identity    *Identity
	NameHash    [NameHashLen]byte
	RandomHash  [10]byte
	Ratchet     []byte // 32-byte X25519 public key, or nil
	Signature   []byte
	AppData     []byte // nil when the announce carries none

	// Set on announces parsed from the network.
	Hops         uint8
	TransportID  Hash // the transport node that forwarded it, if HEADER_2
	ViaTransport bool
	PathResponse bool
	PacketHash   [FullHashLen]byte
}

var errAnnounce = errors.New("reticulum: invalid announce")

// announceRandomHash is 5 random bytes followed by the announce time in
// seconds as 5 big-endian bytes.
func announceRandomHash(now time.Time) ([10]byte, error) {
	var r [10]byte
	if _, err := rand.Read(r[:5]); err != nil {
		return r, err
	}
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(now.Unix()))
	copy(r[5:], ts[3:])
	return r, nil
}

// buildAnnounce signs and packs an announce for a destination whose identity
// holds a private key.
func buildAnnounce(id *Identity, dest Hash, nameHash [NameHashLen]byte, random [10]byte, ratchet, appData []byte, pathResponse bool) (*Packet, error) {
	pub := id.PublicKey()
	signed := make([]byte, 0, 16+64+10+10+len(ratchet)+len(appData))
	signed = append(signed, dest[:]...)
	signed = append(signed, pub...)
	signed = append(signed, nameHash[:]...)
	signed = append(signed, random[:]...)
	signed = append(signed, ratchet...)
	signed = append(signed, appData...)
	sig, err := id.Sign(signed)
	if err != nil {
		return nil, err
	}
	data := make([]byte, 0, len(signed)+SignatureLen)
	data = append(data, pub...)
	data = append(data, nameHash[:]...)
	data = append(data, random[:]...)
	data = append(data, ratchet...)
	data = append(data, sig...)
	data = append(data, appData...)
	ctx := CtxNone
	if pathResponse {
		ctx = CtxPathResponse
	}
	return &Packet{
		PacketType:  PacketAnnounce,
		DestType:    DestSingle,
		Destination: dest,
		Context:     ctx,
		ContextFlag: ratchet != nil,
		Data:        data,
	}, nil
}

// ParseAnnounce reads an announce packet and validates it as the reference
// does: the signature over destination hash, public key, name hash, random
// hash, ratchet and app data, and the destination hash against the name hash
// and identity.
func ParseAnnounce(p *Packet) (*Announce, error) {
	if p.PacketType != PacketAnnounce {
		return nil, errAnnounce
	}
	d := p.Data
	min := PublicKeyLen + NameHashLen + 10 + SignatureLen
	if p.ContextFlag {
		min += RatchetLen
	}
	if len(d) < min {
		return nil, errAnnounce
	}
	a := &Announce{
		Destination:  p.Destination,
		Hops:         p.Hops,
		ViaTransport: p.HeaderType == Header2,
		TransportID:  p.TransportID,
		PathResponse: p.Context == CtxPathResponse,
		PacketHash:   p.Hash(),
	}
	pub := d[:PublicKeyLen]
	d = d[PublicKeyLen:]
	copy(a.NameHash[:], d)
	d = d[NameHashLen:]
	copy(a.RandomHash[:], d)
	d = d[10:]
	if p.ContextFlag {
		a.Ratchet = append([]byte{}, d[:RatchetLen]...)
		d = d[RatchetLen:]
	}
	a.Signature = append([]byte{}, d[:SignatureLen]...)
	if rest := d[SignatureLen:]; len(rest) > 0 {
		a.AppData = append([]byte{}, rest...)
	}
	id, err := IdentityFromPublicKey(pub)
	if err != nil {
		return nil, errAnnounce
	}
	a.Identity = id
	signed := make([]byte, 0, 200+len(a.AppData))
	signed = append(signed, p.Destination[:]...)
	signed = append(signed, pub...)
	signed = append(signed, a.NameHash[:]...)
	signed = append(signed, a.RandomHash[:]...)
	signed = append(signed, a.Ratchet...)
	signed = append(signed, a.AppData...)
	if !id.Verify(a.Signature, signed) {
		return nil, errors.New("reticulum: announce signature invalid")
	}
	ih := id.Hash()
	if TruncatedHash(a.NameHash[:], ih[:]) != p.Destination {
		return nil, errors.New("reticulum: announce destination mismatch")
	}
	return a, nil
}

// Timestamp is the announce time its random hash carries.
func (a *Announce) Timestamp() time.Time {
	var ts [8]byte
	copy(ts[3:], a.RandomHash[5:])
	return time.Unix(int64(binary.BigEndian.Uint64(ts[:])), 0)
}
