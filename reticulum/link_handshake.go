package reticulum

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"errors"
)

// Link establishment as the reference does it. The initiator sends a link
// request (its ephemeral X25519 and Ed25519 public keys and 3 signalling
// bytes: MTU and mode); the link id is the truncated hash of the request's
// hashable part without the signalling bytes. The responder answers with an
// LRPROOF addressed to the link id: its signature of (link id, its ephemeral
// X25519 key, its identity's Ed25519 key, signalling bytes), its ephemeral
// X25519 key and the signalling bytes. Both derive the link key with HKDF
// from the X25519 shared secret, salted with the link id.

const (
	linkModeAES256CBC = 0x01
	linkMTUMask       = 0x1FFFFF
	linkModeMask      = 0xE0
	linkRequestLen    = 64
	signallingLen     = 3
	lrProofLen        = SignatureLen + 32
)

// signallingBytes packs a link's MTU and mode into 3 bytes.
func signallingBytes(mtu int, mode byte) []byte {
	v := uint32(mtu&linkMTUMask) | uint32((mode<<5)&linkModeMask)<<16
	return []byte{byte(v >> 16), byte(v >> 8), byte(v)}
}

func parseSignalling(b []byte) (mtu int, mode byte) {
	v := uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
	return int(v & linkMTUMask), b[0] >> 5
}

// linkRequestPacket builds a link request to dest.
func linkRequestPacket(dest Hash, pub *ecdh.PublicKey, sigPub ed25519.PublicKey, mtu int) *Packet {
	data := append(append(pub.Bytes(), sigPub...), signallingBytes(mtu, linkModeAES256CBC)...)
	return &Packet{PacketType: PacketLinkRequest, DestType: DestSingle, Destination: dest, Data: data}
}

// LinkID computes the id of the link a request opens: the truncated hash
// of the request without its signalling bytes, as the reference (and a
// transport node forwarding it) computes it.
func LinkID(req *Packet) Hash {
	hp := req.hashablePart()
	if extra := len(req.Data) - linkRequestLen; extra > 0 {
		hp = hp[:len(hp)-extra]
	}
	return TruncatedHash(hp)
}

// lrProofPacket builds the responder's proof of a link request.
func lrProofPacket(id Hash, identity *Identity, pub *ecdh.PublicKey, mtu int) (*Packet, error) {
	sig := signallingBytes(mtu, linkModeAES256CBC)
	signed := append(append(append(id.Bytes(), pub.Bytes()...), identity.SigningPublicKey()...), sig...)
	s, err := identity.Sign(signed)
	if err != nil {
		return nil, err
	}
	data := append(append(s, pub.Bytes()...), sig...)
	return &Packet{PacketType: PacketProof, DestType: DestLink, Destination: id, Context: CtxLRProof, Data: data}, nil
}

// checkLRProof validates an LRPROOF against the destination's identity and
// returns the responder's ephemeral key and the confirmed MTU.
func checkLRProof(p *Packet, id Hash, destIdentity *Identity) (*ecdh.PublicKey, int, error) {
	d := p.Data
	mtu := MTU
	var sig []byte
	switch len(d) {
	case lrProofLen + signallingLen:
		var mode byte
		mtu, mode = parseSignalling(d[lrProofLen:])
		if mode != linkModeAES256CBC {
			return nil, 0, errors.New("reticulum: unsupported link mode")
		}
		sig = d[lrProofLen:]
	case lrProofLen:
	default:
		return nil, 0, errors.New("reticulum: malformed link proof")
	}
	peer, err := ecdh.X25519().NewPublicKey(d[SignatureLen:lrProofLen])
	if err != nil {
		return nil, 0, err
	}
	signed := append(append(append(id.Bytes(), peer.Bytes()...), destIdentity.SigningPublicKey()...), sig...)
	if !destIdentity.Verify(d[:SignatureLen], signed) {
		return nil, 0, errors.New("reticulum: link proof signature invalid")
	}
	return peer, mtu, nil
}

// linkKey derives a link's 64-byte Token key.
func linkKey(prv *ecdh.PrivateKey, peer *ecdh.PublicKey, id Hash) ([]byte, error) {
	shared, err := prv.ECDH(peer)
	if err != nil {
		return nil, err
	}
	return deriveKey(shared, id[:]), nil
}
