package reticulum

// Sizes of the wire protocol, as the reference implementation (RNS 1.x)
// defines them.
const (
	// MTU is the largest packet on the wire, in bytes.
	MTU = 500
	// TruncatedHashLen is the length of destination, identity and packet
	// truncated hashes.
	TruncatedHashLen = 16
	// FullHashLen is the length of a SHA-256 hash.
	FullHashLen = 32
	// NameHashLen is the length of the hash of a destination's full name.
	NameHashLen = 10
	// PublicKeyLen is the length of an identity's public key (X25519 then
	// Ed25519).
	PublicKeyLen = 64
	// PrivateKeyLen is the length of an identity's private key file.
	PrivateKeyLen = 64
	// SignatureLen is the length of an Ed25519 signature.
	SignatureLen = 64
	// RatchetLen is the length of an X25519 ratchet public key.
	RatchetLen = 32

	headerMinSize = 2 + 1 + TruncatedHashLen
	headerMaxSize = 2 + 1 + 2*TruncatedHashLen
	ifacMinSize   = 1
	tokenOverhead = 16 + 32
	aesBlockSize  = 16

	// MDU is the largest payload of an unencrypted packet.
	MDU = MTU - headerMaxSize - ifacMinSize
	// EncryptedMDU is the largest plaintext of a packet encrypted to a
	// SINGLE destination.
	EncryptedMDU = (MDU-tokenOverhead-PublicKeyLen/2)/aesBlockSize*aesBlockSize - 1
	// LinkMDU is the largest plaintext of a packet sent over a link.
	LinkMDU = (MTU-ifacMinSize-headerMinSize-tokenOverhead)/aesBlockSize*aesBlockSize - 1
)
