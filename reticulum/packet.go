package reticulum

import (
	"errors"
	"fmt"
)

// Packet types.
const (
	PacketData        uint8 = 0x00
	PacketAnnounce    uint8 = 0x01
	PacketLinkRequest uint8 = 0x02
	PacketProof       uint8 = 0x03
)

// Header types: HEADER_1 has no transport id, HEADER_2 carries the transport
// id of the next hop that should forward the packet.
const (
	Header1 uint8 = 0x00
	Header2 uint8 = 0x01
)

// Transport types.
const (
	TransportBroadcast uint8 = 0x00
	TransportTransport uint8 = 0x01
)

// Packet contexts.
const (
	CtxNone          uint8 = 0x00
	CtxResource      uint8 = 0x01
	CtxResourceAdv   uint8 = 0x02
	CtxResourceReq   uint8 = 0x03
	CtxResourceHMU   uint8 = 0x04
	CtxResourcePRF   uint8 = 0x05
	CtxResourceICL   uint8 = 0x06
	CtxResourceRCL   uint8 = 0x07
	CtxCacheRequest  uint8 = 0x08
	CtxRequest       uint8 = 0x09
	CtxResponse      uint8 = 0x0A
	CtxPathResponse  uint8 = 0x0B
	CtxCommand       uint8 = 0x0C
	CtxCommandStatus uint8 = 0x0D
	CtxChannel       uint8 = 0x0E
	CtxKeepalive     uint8 = 0xFA
	CtxLinkIdentify  uint8 = 0xFB
	CtxLinkClose     uint8 = 0xFC
	CtxLinkProof     uint8 = 0xFD
	CtxLRRTT         uint8 = 0xFE
	CtxLRProof       uint8 = 0xFF
)

// maxHops is the reference's PATHFINDER_M: packets with more hops are
// malformed.
const maxHops = 128

// Packet is one Reticulum packet. Its wire form is a flags byte, a hops byte,
// the transport id (HEADER_2 only), the destination hash, a context byte and
// the data.
type Packet struct {
	IFAC          bool  // flags bit 7: an interface access code follows (not supported)
	HeaderType    uint8 // Header1 or Header2
	ContextFlag   bool  // flags bit 5 (set on announces that carry a ratchet)
	TransportType uint8 // TransportBroadcast or TransportTransport
	DestType      uint8 // DestSingle, DestGroup, DestPlain or DestLink
	PacketType    uint8 // PacketData, PacketAnnounce, PacketLinkRequest or PacketProof
	Hops          uint8
	TransportID   Hash // set when HeaderType is Header2
	Destination   Hash
	Context       uint8
	Data          []byte
}

// Flags packs the flags byte.
func (p *Packet) Flags() byte {
	f := p.HeaderType<<6 | p.TransportType<<4 | p.DestType<<2 | p.PacketType
	if p.ContextFlag {
		f |= 0x20
	}
	if p.IFAC {
		f |= 0x80
	}
	return f
}

// Marshal returns the packet's wire bytes.
func (p *Packet) Marshal() ([]byte, error) {
	if p.IFAC {
		return nil, errors.New("reticulum: interface access codes are not supported")
	}
	out := make([]byte, 0, headerMaxSize+len(p.Data))
	out = append(out, p.Flags(), p.Hops)
	if p.HeaderType == Header2 {
		out = append(out, p.TransportID[:]...)
	}
	out = append(out, p.Destination[:]...)
	out = append(out, p.Context)
	out = append(out, p.Data...)
	if len(out) > MTU {
		return nil, fmt.Errorf("reticulum: packet of %d bytes exceeds the MTU of %d", len(out), MTU)
	}
	return out, nil
}

// ParsePacket reads a packet from its wire bytes. The data aliases raw.
func ParsePacket(raw []byte) (*Packet, error) {
	if len(raw) < headerMinSize {
		return nil, errors.New("reticulum: packet too short")
	}
	f := raw[0]
	p := &Packet{
		IFAC:          f&0x80 != 0,
		HeaderType:    (f >> 6) & 1,
		ContextFlag:   f&0x20 != 0,
		TransportType: (f >> 4) & 1,
		DestType:      (f >> 2) & 3,
		PacketType:    f & 3,
		Hops:          raw[1],
	}
	if p.IFAC {
		return nil, errors.New("reticulum: interface access codes are not supported")
	}
	if p.Hops >= maxHops {
		return nil, fmt.Errorf("reticulum: invalid hop count %d", p.Hops)
	}
	rest := raw[2:]
	if p.HeaderType == Header2 {
		if len(rest) < 2*TruncatedHashLen+1 {
			return nil, errors.New("reticulum: packet too short")
		}
		copy(p.TransportID[:], rest)
		rest = rest[TruncatedHashLen:]
	}
	copy(p.Destination[:], rest)
	p.Context = rest[TruncatedHashLen]
	p.Data = rest[TruncatedHashLen+1:]
	return p, nil
}

// hashablePart is what the reference hashes to identify a packet: the low
// four flag bits (destination and packet type) and everything after the
// hops byte and transport id. It does not change as a packet is forwarded.
func (p *Packet) hashablePart() []byte {
	out := make([]byte, 0, TruncatedHashLen+2+len(p.Data))
	out = append(out, p.Flags()&0x0F)
	out = append(out, p.Destination[:]...)
	out = append(out, p.Context)
	return append(out, p.Data...)
}

// Hash is the packet's full hash (SHA-256 of its hashable part); proofs
// sign it.
func (p *Packet) Hash() [FullHashLen]byte { return FullHash(p.hashablePart()) }

// TruncatedHash is the packet's truncated hash; a proof of the packet is
// addressed to it.
func (p *Packet) TruncatedHash() Hash { return TruncatedHash(p.hashablePart()) }
