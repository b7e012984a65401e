// Package webhook is a herald.Carrier that POSTs each message to one HTTP
// endpoint, optionally signed in the Standard Webhooks form.
//
// A 2xx answer delivers the message. 408, 429, 5xx and network failures are
// transient (a Retry-After header asks for a minimum wait); any other answer
// fails the message at once.
package webhook

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/httpsend"
)

// Config describes one webhook endpoint.
type Config struct {
	// URL is the absolute http or https address messages are POSTed to.
	URL string
	// Headers are added to every request (Authorization, a Content-Type
	// that overrides the default, ...). They may not name the headers the
	// carrier sets itself.
	Headers map[string]string
	// Secret, when not empty, signs every body in the Standard Webhooks form.
	Secret []byte
	// Client sends the requests; nil means a client with connection reuse and
	// no redirects (httpsend.NewClient). The carrier relies on the context
	// for time limits, so it needs no Timeout of its own.
	Client *http.Client
	// Now tells the time for signature timestamps and Retry-After dates;
	// nil means time.Now.
	Now func() time.Time
	// TenantURL says that a tenant, not the operator, supplied URL, and
	// reads the errors: they quote no more of an answer than
	// httpsend.DoTenant does. Give such a carrier a Client that keeps to
	// the egress policy (httpsend.Egress).
	TenantURL bool
}

// Carrier POSTs messages to a webhook endpoint. It is safe for concurrent use.
type Carrier struct {
	url     *url.URL
	headers http.Header
	secret  []byte
	client  *http.Client
	now     func() time.Time
	// do is httpsend.Do, or DoTenant for a TenantURL.
	do func(*http.Client, *http.Request, func() time.Time) (*http.Response, error)
}

var _ herald.Carrier = (*Carrier)(nil)

// New checks c and returns a carrier for it.
func New(c Config) (*Carrier, error) {
	u, err := httpsend.ParseURL(c.URL)
	if err != nil {
		return nil, err
	}
	headers := http.Header{}
	for k, v := range c.Headers {
		ck := http.CanonicalHeaderKey(k)
		if !validHeaderName(k) {
			return nil, fmt.Errorf("webhook: header name %q is not valid", k)
		}
		if !validHeaderValue(v) {
			return nil, fmt.Errorf("webhook: header %s: value holds control characters", ck)
		}
		if reserved(ck) {
			return nil, fmt.Errorf("webhook: header %s is set by the carrier and cannot be configured", ck)
		}
		headers.Set(ck, v)
	}
	cr := &Carrier{url: u, headers: headers, client: c.Client, now: c.Now, do: httpsend.Do}
	if c.TenantURL {
		cr.do = httpsend.DoTenant
	}
	if len(c.Secret) > 0 {
		cr.secret = append([]byte(nil), c.Secret...)
	}
	if cr.client == nil {
		cr.client = httpsend.NewClient()
	}
	if cr.now == nil {
		cr.now = time.Now
	}
	return cr, nil
}

// reserved reports whether the carrier owns the canonical header key k.
func reserved(k string) bool {
	switch k {
	case "Idempotency-Key", "Content-Length", "Transfer-Encoding", "Connection":
		return true
	}
	return strings.HasPrefix(k, "X-Herald-") || strings.HasPrefix(k, "Webhook-")
}

// Path returns herald.PathDirect: an accepted POST is a delivery.
func (c *Carrier) Path() herald.Path { return herald.PathDirect }

// Validate requires exactly one of Payload and Text. Target is optional; it
// and CorrelationID travel in headers, so they may not hold control
// characters. Params are ignored.
func (c *Carrier) Validate(m *herald.Message) error {
	switch {
	case len(m.Payload) == 0 && m.Text == "":
		return herald.Invalid("payload", "a webhook message needs a payload or a text")
	case len(m.Payload) > 0 && m.Text != "":
		return herald.Invalid("text", "a webhook message takes a payload or a text, not both")
	case !validHeaderValue(m.Target):
		return herald.Invalid("target", "must not hold control characters")
	case !validHeaderValue(m.CorrelationID):
		return herald.Invalid("correlation_id", "must not hold control characters")
	}
	return nil
}

// Send POSTs m and classifies the answer; see the package comment. ctx bounds
// the whole exchange.
func (c *Carrier) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	return c.SendWithHeaders(ctx, m, nil)
}

// SendWithHeaders is Send with headers added last, over the carrier's own
// (the X-Herald- ones included): what a carrier built on this one says of
// the message in its own terms (a room's delivery: its redeliveries).
func (c *Carrier) SendWithHeaders(ctx context.Context, m *herald.Message, headers http.Header) (herald.SendResult, error) {
	if err := c.Validate(m); err != nil {
		return herald.SendResult{}, herald.Permanent(fmt.Errorf("webhook: %w", err))
	}
	req, err := c.request(ctx, m, headers)
	if err != nil {
		return herald.SendResult{}, herald.Permanent(err)
	}
	resp, err := c.do(c.client, req, c.now)
	if err != nil {
		return herald.SendResult{}, err
	}
	return herald.SendResult{ExternalID: resp.Header.Get("X-Request-Id"), Answer: strconv.Itoa(resp.StatusCode)}, nil
}
