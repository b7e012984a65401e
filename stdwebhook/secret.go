package stdwebhook

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// SecretPrefix marks a base64-encoded secret in the Standard Webhooks form.
const SecretPrefix = "whsec_"

// ParseSecret returns the signing key named by s. A string starting with
// "whsec_" is decoded from the standard base64 that follows the prefix; any
// other string is used as raw bytes. Surrounding white space is ignored. An
// empty secret is an error.
func ParseSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("webhook secret is empty")
	}
	enc, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return []byte(s), nil
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %s must be followed by standard base64: %w", SecretPrefix, err)
	}
	if len(key) == 0 {
		return nil, errors.New("webhook secret is empty after " + SecretPrefix)
	}
	return key, nil
}
