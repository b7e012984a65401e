// Package httpsend is the HTTP code herald's HTTP carriers and outcome-event
// webhooks share: a default client (connection reuse, no redirects), a check
// of endpoint URLs, and Do, which sends one request and classifies the answer
// as success, transient, "not now" (herald.RetryAfter) or permanent
// (herald.Permanent), parsing Retry-After on the way; and Egress, the
// policy of connections to the URLs tenants supply, with DoTenant, whose
// errors quote no more of an answer than a tenant may read.
//
// Error texts start with "webhook: ", whichever package calls.
package httpsend

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldmq/herald"
)

// MaxBodyRead is how much of a response body is read before it is closed;
// bodies up to this size are drained so their connection can be reused.
const MaxBodyRead = 64 << 10

// ErrorBodyLen is how much of a failed response's body an error quotes.
const ErrorBodyLen = 200

// TenantExcerptLen is how much of a failed answer's body the errors of
// DoTenant quote at most.
const TenantExcerptLen = 100

// MaxRetryAfter caps the wait a Retry-After header may ask for.
const MaxRetryAfter = 24 * time.Hour

// NewClient returns the default client: a copy of http.DefaultTransport
// keeping up to 100 idle connections per host, no overall timeout (callers
// pass deadlines in contexts) and no redirects (a 3xx answer is returned as
// is: following it would turn a POST into a GET).
func NewClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1000
	t.MaxIdleConnsPerHost = 100
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// ParseURL returns s parsed when it is an absolute http or https URL with a host.
func ParseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // without the URL, which may hold a secret
	}
	if err != nil {
		return nil, fmt.Errorf("webhook: URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webhook: URL %s: want an absolute http or https URL", Redact(u))
	}
	return u, nil
}

// Do sends req with client and classifies the outcome:
//   - 2xx: the response (its body read and closed) and a nil error;
//   - 408, 429, 5xx, network failures and timeouts: a plain (transient)
//     error; a 429 or 503 with a Retry-After header (delta-seconds or an
//     HTTP date, measured from now()) is wrapped in herald.RetryAfter;
//   - anything else: herald.Permanent.
//
// An error of an answer carries its status code (herald.WithAnswer).
//
// The response body is drained (up to MaxBodyRead) and closed. Error texts
// name the method, the URL's scheme and host (Redact), the status and the
// start of the body.
func Do(client *http.Client, req *http.Request, now func() time.Time) (*http.Response, error) {
	return do(client, req, now, false)
}

// DoTenant is Do for an endpoint a tenant supplied (a push subscription's
// URL), whose errors the tenant reads: they quote the answer's status
// code and standard text, not its reason phrase, and of its body only a
// short excerpt (see excerpt) of a 4xx or 5xx answer that is not HTML.
// A connection the egress policy refused (Egress) fails for good.
func DoTenant(client *http.Client, req *http.Request, now func() time.Time) (*http.Response, error) {
	return do(client, req, now, true)
}

func do(client *http.Client, req *http.Request, now func() time.Time, tenant bool) (*http.Response, error) {
	where := req.Method + " " + Redact(req.URL)
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		err = fmt.Errorf("webhook: %s: %w", where, err)
		if refused(err) {
			return nil, herald.Permanent(err)
		}
		return nil, err
	}
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, MaxBodyRead))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	status := resp.Status
	if status == "" || tenant {
		status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	quoted := quote(body, readErr)
	if tenant {
		quoted = excerpt(resp, body)
	}
	err = herald.WithAnswer(strconv.Itoa(resp.StatusCode), fmt.Errorf("webhook: %s: %s%s", where, strings.TrimSpace(status), quoted))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusServiceUnavailable:
		// "Not now": with a Retry-After, the route's lane waits that long.
		if d := ParseRetryAfter(resp.Header.Get("Retry-After"), now()); d > 0 {
			return nil, herald.RetryAfter(d, err)
		}
		return nil, err
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode >= 500:
		return nil, err
	case resp.StatusCode/100 == 3:
		if loc := resp.Header.Get("Location"); loc != "" {
			err = fmt.Errorf("%w (redirect to %s refused)", err, RedactString(loc))
		}
		return nil, herald.Permanent(err)
	default:
		return nil, herald.Permanent(err)
	}
}

// ParseRetryAfter returns the wait a Retry-After value asks for, relative to
// now: delta-seconds or an HTTP date. It returns 0 for an empty, malformed
// or past value and at most MaxRetryAfter.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if v[0] >= '0' && v[0] <= '9' {
		secs := 0
		for _, c := range v {
			if c < '0' || c > '9' {
				return 0
			}
			secs = secs*10 + int(c-'0')
			if time.Duration(secs)*time.Second > MaxRetryAfter {
				return MaxRetryAfter
			}
		}
		d = time.Duration(secs) * time.Second
	} else {
		t, err := http.ParseTime(v)
		if err != nil {
			return 0
		}
		d = t.Sub(now)
	}
	return max(0, min(d, MaxRetryAfter))
}

// quote renders the start of a failed response's body for an error text.
func quote(body []byte, readErr error) string {
	s := string(body[:min(len(body), ErrorBodyLen)])
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "")), " ")
	switch {
	case s != "":
		return ": " + s
	case readErr != nil && !errors.Is(readErr, io.EOF):
		return " (body unreadable: " + readErr.Error() + ")"
	}
	return ""
}

// excerpt renders, for an error a tenant reads, the start of the body of a
// 4xx or 5xx answer that is not HTML or XML (by its Content-Type or its
// first character): printable ASCII only, each run of white space one
// space, at most TenantExcerptLen bytes; "" for any other answer.
func excerpt(resp *http.Response, body []byte) string {
	if resp.StatusCode < 400 || resp.StatusCode > 599 {
		return ""
	}
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	body = bytes.TrimLeft(body, " \t\r\n")
	if strings.Contains(ct, "html") || strings.Contains(ct, "xml") || bytes.HasPrefix(body, []byte("<")) {
		return ""
	}
	var b strings.Builder
	space := false
	for _, c := range body {
		if b.Len() >= TenantExcerptLen {
			break
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			space = b.Len() > 0
		case c > ' ' && c < 0x7f:
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return ": " + b.String()
}

// Redact returns u as errors and logs may show it: its scheme and host,
// and "/…" for a path, a query or a fragment; never its credentials. A
// URL's path may hold a secret (Slack's and Discord's webhook URLs do).
func Redact(u *url.URL) string {
	c := url.URL{Scheme: u.Scheme, Host: u.Host}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return c.String() + "/…"
	}
	return c.String()
}

// RedactString is Redact of the URL s, or a placeholder when s does not
// parse.
func RedactString(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a malformed URL)"
	}
	return Redact(u)
}
