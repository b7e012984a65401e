package stdwebhook

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Errors returned by Verify; test for them with errors.Is.
var (
	// ErrMissingHeaders: webhook-id, webhook-timestamp or webhook-signature is absent.
	ErrMissingHeaders = errors.New("stdwebhook: missing webhook headers")
	// ErrTimestamp: webhook-timestamp is malformed or outside the tolerance.
	ErrTimestamp = errors.New("stdwebhook: timestamp outside tolerance")
	// ErrSignature: no v1 signature in webhook-signature matches the body.
	ErrSignature = errors.New("stdwebhook: no matching signature")
)

// DefaultTolerance is the usual allowed distance between webhook-timestamp
// and the receiver's clock.
const DefaultTolerance = 5 * time.Minute

// Verify checks a received webhook: the three Standard Webhooks headers are
// present, webhook-timestamp lies within tolerance of now (either side), and
// one of the space-separated "v1,<base64>" entries of webhook-signature is
// the HMAC of body under secret. Entries of other versions are ignored.
func Verify(secret []byte, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, tsText, sigs := header.Get(HeaderID), header.Get(HeaderTimestamp), header.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	unix, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not unix seconds", ErrTimestamp, tsText)
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: %s is %s away from now", ErrTimestamp, tsText, d.Round(time.Second))
	}
	want := mac(secret, id, unix, body)
	for _, entry := range strings.Fields(sigs) {
		version, enc, ok := strings.Cut(entry, ",")
		if !ok || version != signatureVersion {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(enc)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}
