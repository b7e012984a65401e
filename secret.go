package herald

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
)

// signingSecretPrefix starts a signing secret in the Standard Webhooks form.
const signingSecretPrefix = "whsec_"

// signingSecretBytes is the length of a generated signing secret's key.
const signingSecretBytes = 32

// maxSigningSecret bounds a signing secret's length.
const maxSigningSecret = 256

// newSigningSecret returns a random signing secret in the Standard
// Webhooks form: whsec_ and the standard base64 of 32 random bytes.
func newSigningSecret() (string, error) {
	key := make([]byte, signingSecretBytes)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	return signingSecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// checkSigningSecret returns an *InvalidError unless s is "" (generated)
// or a signing secret in the Standard Webhooks form: whsec_ and the
// standard base64 of at least 24 bytes.
func checkSigningSecret(s string) error {
	if s == "" {
		return nil
	}
	b64, ok := strings.CutPrefix(s, signingSecretPrefix)
	key, err := base64.StdEncoding.DecodeString(b64)
	switch {
	case len(s) > maxSigningSecret:
		return Invalid("secret", "%d bytes; at most %d", len(s), maxSigningSecret)
	case !ok || err != nil:
		return Invalid("secret", "want whsec_ and the standard base64 of the key (leave it out and herald generates one)")
	case len(key) < 24:
		return Invalid("secret", "the key is %d bytes; at least 24", len(key))
	}
	return nil
}
