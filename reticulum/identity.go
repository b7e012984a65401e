package reticulum

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/crypto/hkdf"
)

// Identity is an X25519 key (encryption) and an Ed25519 key (signatures). An
// identity made from a public key alone can verify and encrypt but not sign
// or decrypt.
type Identity struct {
	encPriv *ecdh.PrivateKey
	sigPriv ed25519.PrivateKey
	encPub  *ecdh.PublicKey
	sigPub  ed25519.PublicKey
	hash    Hash
}

// NewIdentity creates an identity with fresh random keys.
func NewIdentity() (*Identity, error) {
	prv := make([]byte, PrivateKeyLen)
	if _, err := rand.Read(prv); err != nil {
		return nil, err
	}
	return IdentityFromPrivateKey(prv)
}

// IdentityFromPrivateKey loads the reference's 64-byte private key: the
// X25519 private key then the Ed25519 seed.
func IdentityFromPrivateKey(prv []byte) (*Identity, error) {
	if len(prv) != PrivateKeyLen {
		return nil, fmt.Errorf("reticulum: private key of %d bytes, want %d", len(prv), PrivateKeyLen)
	}
	enc, err := ecdh.X25519().NewPrivateKey(prv[:32])
	if err != nil {
		return nil, err
	}
	sig := ed25519.NewKeyFromSeed(prv[32:])
	id := &Identity{encPriv: enc, sigPriv: sig, encPub: enc.PublicKey(), sigPub: sig.Public().(ed25519.PublicKey)}
	id.hash = TruncatedHash(id.PublicKey())
	return id, nil
}

// IdentityFromPublicKey loads a 64-byte public key: X25519 then Ed25519.
func IdentityFromPublicKey(pub []byte) (*Identity, error) {
	if len(pub) != PublicKeyLen {
		return nil, fmt.Errorf("reticulum: public key of %d bytes, want %d", len(pub), PublicKeyLen)
	}
	enc, err := ecdh.X25519().NewPublicKey(pub[:32])
	if err != nil {
		return nil, err
	}
	id := &Identity{encPub: enc, sigPub: ed25519.PublicKey(append([]byte{}, pub[32:]...))}
	id.hash = TruncatedHash(pub)
	return id, nil
}

// LoadOrCreateIdentity reads the private key file at path, or creates it
// (mode 0600, parent directories 0700) with a new identity if it does not
// exist. The file format is the reference's: the 64 raw private key bytes.
func LoadOrCreateIdentity(path string) (*Identity, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return IdentityFromPrivateKey(b)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	id, err := NewIdentity()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(id.PrivateKey()); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return id, nil
}

// HasPrivateKey reports whether the identity can sign and decrypt.
func (id *Identity) HasPrivateKey() bool { return id.encPriv != nil }

// PrivateKey returns the 64-byte private key, or nil for a public identity.
func (id *Identity) PrivateKey() []byte {
	if id.encPriv == nil {
		return nil
	}
	return append(id.encPriv.Bytes(), id.sigPriv.Seed()...)
}

// PublicKey returns the 64-byte public key.
func (id *Identity) PublicKey() []byte {
	return append(id.encPub.Bytes(), id.sigPub...)
}

// SigningPublicKey returns the 32-byte Ed25519 public key.
func (id *Identity) SigningPublicKey() []byte { return append([]byte{}, id.sigPub...) }

// Hash is the identity hash: the truncated hash of the public key.
func (id *Identity) Hash() Hash { return id.hash }

// Sign signs message with the identity's Ed25519 key.
func (id *Identity) Sign(message []byte) ([]byte, error) {
	if id.sigPriv == nil {
		return nil, errors.New("reticulum: identity has no private key")
	}
	return ed25519.Sign(id.sigPriv, message), nil
}

// Verify reports whether signature is the identity's signature of message.
func (id *Identity) Verify(signature, message []byte) bool {
	return len(signature) == SignatureLen && ed25519.Verify(id.sigPub, message, signature)
}

// Encrypt encrypts plaintext to the identity as the reference does: an
// ephemeral X25519 key agreed with the identity's key (or with ratchet, a
// 32-byte X25519 public key the destination announced), HKDF-SHA256 with the
// identity hash as salt to 64 bytes, then the Token scheme. The result is the
// ephemeral public key followed by the token.
func (id *Identity) Encrypt(plaintext, ratchet []byte) ([]byte, error) {
	eph, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	iv := make([]byte, 16)
	if _, err := rand.Read(iv); err != nil {
		return nil, err
	}
	return id.encryptWith(eph, iv, plaintext, ratchet)
}

func (id *Identity) encryptWith(eph *ecdh.PrivateKey, iv, plaintext, ratchet []byte) ([]byte, error) {
	target := id.encPub
	if ratchet != nil {
		var err error
		if target, err = ecdh.X25519().NewPublicKey(ratchet); err != nil {
			return nil, err
		}
	}
	shared, err := eph.ECDH(target)
	if err != nil {
		return nil, err
	}
	tok, err := newToken(deriveKey(shared, id.hash[:]))
	if err != nil {
		return nil, err
	}
	ct, err := tok.encryptIV(iv, plaintext)
	if err != nil {
		return nil, err
	}
	return append(eph.PublicKey().Bytes(), ct...), nil
}

// Decrypt reverses Encrypt. Each of ratchets (X25519 private keys the
// destination announced) is tried first, then the identity's own key.
func (id *Identity) Decrypt(ciphertext []byte, ratchets ...[]byte) ([]byte, error) {
	if id.encPriv == nil {
		return nil, errors.New("reticulum: identity has no private key")
	}
	if len(ciphertext) <= 32 {
		return nil, ErrDecrypt
	}
	peer, err := ecdh.X25519().NewPublicKey(ciphertext[:32])
	if err != nil {
		return nil, ErrDecrypt
	}
	keys := make([]*ecdh.PrivateKey, 0, len(ratchets)+1)
	for _, r := range ratchets {
		if k, err := ecdh.X25519().NewPrivateKey(r); err == nil {
			keys = append(keys, k)
		}
	}
	keys = append(keys, id.encPriv)
	for _, k := range keys {
		shared, err := k.ECDH(peer)
		if err != nil {
			continue
		}
		tok, _ := newToken(deriveKey(shared, id.hash[:]))
		if pt, err := tok.decrypt(ciphertext[32:]); err == nil {
			return pt, nil
		}
	}
	return nil, ErrDecrypt
}

// deriveKey is the reference's HKDF-SHA256 to 64 bytes with no context.
func deriveKey(shared, salt []byte) []byte {
	out := make([]byte, 64)
	if _, err := io.ReadFull(hkdf.New(sha256.New, shared, salt, nil), out); err != nil {
		panic(err) // 64 bytes is far below HKDF's limit
	}
	return out
}
