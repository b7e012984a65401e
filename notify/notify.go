// Package notify delivers herald's outcome events to subscribers.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/httpsend"
	"github.com/heraldmq/herald/stdwebhook"
)

// WebhookSink POSTs outcome events as JSON to one URL, with Standard
// Webhooks headers, or an HMAC-SHA256 signature header (HMAC). It is safe
// for concurrent use once made.
type WebhookSink struct {
	url    *url.URL
	secret []byte
	client *http.Client
	now    func() time.Time
	// hmacHeader, when set, carries the signature in place of the
	// Standard Webhooks one: hmacPrefix and the hex HMAC-SHA256 of the
	// body.
	hmacHeader, hmacPrefix string
}

// DefaultHMACHeader is the header of an HMAC signature whose subscriber
// names none.
const DefaultHMACHeader = "X-Signature"

var _ herald.EventSink = (*WebhookSink)(nil)

// New returns a sink for url, an absolute http or https URL. A non-empty
// secret signs each body; a nil client means a client with connection reuse
// and no redirects (httpsend.NewClient); a nil now means time.Now.
func New(url string, secret []byte, client *http.Client, now func() time.Time) (*WebhookSink, error) {
	u, err := httpsend.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	if client == nil {
		client = httpsend.NewClient()
	}
	if now == nil {
		now = time.Now
	}
	s := &WebhookSink{url: u, client: client, now: now}
	if len(secret) > 0 {
		s.secret = append([]byte(nil), secret...)
	}
	return s, nil
}

// HMAC makes s sign each body in header (DefaultHMACHeader when empty)
// with prefix ("" or, say, "sha256=") and the hex HMAC-SHA256 of the raw
// body under its secret, as receivers of that form verify it, in place
// of the Standard Webhooks signature. It returns s; call it before s
// delivers.
func (s *WebhookSink) HMAC(header, prefix string) *WebhookSink {
	if header == "" {
		header = DefaultHMACHeader
	}
	s.hmacHeader, s.hmacPrefix = http.CanonicalHeaderKey(header), prefix
	return s
}

// Deliver POSTs e as JSON. The headers webhook-id (e.ID, stable across
// retries of the event) and webhook-timestamp are always sent, and the
// signature when the sink has a secret: webhook-signature, or the HMAC
// header (see HMAC). A 2xx answer delivers the
// event; any other answer or a network failure is an error, permanent
// (herald.Permanent) for a 3xx or a 4xx other than 408 and 429, and carrying
// herald.RetryAfter when the answer asks for a wait. ctx bounds the exchange.
func (s *WebhookSink) Deliver(ctx context.Context, e herald.OutcomeEvent) error {
	body, err := json.Marshal(e)
	if err != nil {
		return herald.Permanent(fmt.Errorf("notify: encode event %s: %w", e.ID, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url.String(), bytes.NewReader(body))
	if err != nil {
		return herald.Permanent(fmt.Errorf("notify: build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "herald-notify")
	ts := s.now()
	if len(s.secret) > 0 && s.hmacHeader == "" {
		stdwebhook.SetHeaders(req.Header, s.secret, e.ID, ts, body)
	} else {
		req.Header.Set(stdwebhook.HeaderID, e.ID)
		req.Header.Set(stdwebhook.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
		if len(s.secret) > 0 {
			mac := hmac.New(sha256.New, s.secret)
			mac.Write(body)
			req.Header.Set(s.hmacHeader, s.hmacPrefix+hex.EncodeToString(mac.Sum(nil)))
		}
	}
	if _, err := httpsend.Do(s.client, req, s.now); err != nil {
		return fmt.Errorf("notify: event %s: %w", e.ID, err)
	}
	return nil
}
