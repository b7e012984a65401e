package reticulum

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
)

// ErrDecrypt is returned when a ciphertext fails its HMAC, padding or key
// agreement.
var ErrDecrypt = errors.New("reticulum: decryption failed")

// token is the reference implementation's "Token" scheme: AES-256-CBC with
// PKCS#7 padding, authenticated by HMAC-SHA256 over IV and ciphertext. The
// 64-byte key is the HMAC key followed by the AES key.
type token struct {
	signingKey    []byte
	encryptionKey []byte
}

func newToken(key []byte) (*token, error) {
	if len(key) != 64 {
		return nil, errors.New("reticulum: token key must be 64 bytes")
	}
	return &token{signingKey: key[:32], encryptionKey: key[32:]}, nil
}

// encrypt returns iv || ciphertext || hmac with a random IV.
func (t *token) encrypt(plaintext []byte) ([]byte, error) {
	iv := make([]byte, aes.BlockSize)
	if _, err := rand.Read(iv); err != nil {
		return nil, err
	}
	return t.encryptIV(iv, plaintext)
}

func (t *token) encryptIV(iv, plaintext []byte) ([]byte, error) {
	block, err := aes.NewCipher(t.encryptionKey)
	if err != nil {
		return nil, err
	}
	pad := aes.BlockSize - len(plaintext)%aes.BlockSize
	padded := append(append([]byte{}, plaintext...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, 0, len(iv)+len(padded)+sha256.Size)
	out = append(out, iv...)
	ct := make([]byte, len(padded))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, padded)
	out = append(out, ct...)
	mac := hmac.New(sha256.New, t.signingKey)
	mac.Write(out)
	return mac.Sum(out), nil
}

func (t *token) decrypt(tok []byte) ([]byte, error) {
	if len(tok) < aes.BlockSize*2+sha256.Size || (len(tok)-sha256.Size)%aes.BlockSize != 0 {
		return nil, ErrDecrypt
	}
	body, sum := tok[:len(tok)-sha256.Size], tok[len(tok)-sha256.Size:]
	mac := hmac.New(sha256.New, t.signingKey)
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), sum) {
		return nil, ErrDecrypt
	}
	block, err := aes.NewCipher(t.encryptionKey)
	if err != nil {
		return nil, err
	}
	iv, ct := body[:aes.BlockSize], body[aes.BlockSize:]
	pt := make([]byte, len(ct))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(pt, ct)
	pad := int(pt[len(pt)-1])
	if pad == 0 || pad > aes.BlockSize {
		return nil, ErrDecrypt
	}
	for _, b := range pt[len(pt)-pad:] {
		if int(b) != pad {
			return nil, ErrDecrypt
		}
	}
	return pt[:len(pt)-pad], nil
}
