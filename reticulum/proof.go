package reticulum

import "bytes"

// Proof lengths: an explicit proof is the proved packet's full hash and a
// signature of it; an implicit proof is the signature alone.
const (
	explicitProofLen = FullHashLen + SignatureLen
	implicitProofLen = SignatureLen
)

// proofPacket builds the reference's proof of a received packet: a PROOF
// packet addressed to the proved packet's truncated hash whose data is the
// prover's signature of the packet's full hash, preceded by that hash when
// explicit. The reference sends implicit proofs for packets to destinations
// and explicit proofs for packets over links.
func proofPacket(sign func([]byte) ([]byte, error), proved *Packet, explicit bool) (*Packet, error) {
	ph := proved.Hash()
	sig, err := sign(ph[:])
	if err != nil {
		return nil, err
	}
	data := sig
	if explicit {
		data = append(ph[:], sig...)
	}
	return &Packet{PacketType: PacketProof, DestType: DestSingle, Destination: proved.TruncatedHash(), Data: data}, nil
}

// validProof reports whether proof (implicit or explicit) proves the packet
// with full hash packetHash, signed by verify's key.
func validProof(proof []byte, packetHash [FullHashLen]byte, verify func(sig, msg []byte) bool) bool {
	switch len(proof) {
	case explicitProofLen:
		return bytes.Equal(proof[:FullHashLen], packetHash[:]) && verify(proof[FullHashLen:], packetHash[:])
	case implicitProofLen:
		return verify(proof, packetHash[:])
	}
	return false
}
