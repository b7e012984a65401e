package calin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/httpsend"
)

// MaxAnswer bounds the bytes of a vendor's answer that are read; its
// answers are a few hundred bytes, and a longer one is refused.
const MaxAnswer = 64 << 10

// ErrorTextLen is how much of an answer's body an error quotes.
const ErrorTextLen = 200

// answer is a vendor's HTTP answer, as read.
type answer struct {
	status      int
	contentType string
	retryAfter  string // the Retry-After header
	body        []byte // at most MaxAnswer bytes
	truncated   bool   // the body was longer than MaxAnswer
}

// ok reports whether the answer's status is 2xx.
func (a answer) ok() bool { return a.status/100 == 2 }

// doubtError is a failed create call that may have created a task all the
// same: the whole request was sent, and no answer said what became of it
// (a timeout, a connection cut, a gateway that gave up waiting, an "OK"
// without a task id). See the package comment.
type doubtError struct{ err error }

func (e *doubtError) Error() string { return e.err.Error() }
func (e *doubtError) Unwrap() error { return e.err }

// inDoubt reports whether err is a create call that may have created a task.
func inDoubt(err error) bool {
	var d *doubtError
	return errors.As(err, &d)
}

// wire is what both API versions share: the HTTP client, the base URL, the
// secrets kept out of error texts and the clock of Retry-After dates.
type wire struct {
	client  *http.Client
	base    string // without a trailing slash
	secrets []string
	now     func() time.Time
}

// newWire checks base and returns a wire for it.
func newWire(version, base string, client *http.Client, now func() time.Time, secrets ...string) (wire, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return wire{}, fmt.Errorf("%s: base_url %q: want an absolute http or https URL", version, base)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return wire{}, fmt.Errorf("%s: base_url %q: want no query or fragment", version, base)
	}
	if client == nil {
		client = httpsend.NewClient()
	}
	if now == nil {
		now = time.Now
	}
	w := wire{client: client, base: strings.TrimSuffix(u.String(), "/"), now: now}
	for _, s := range secrets {
		if len(s) >= 4 { // a shorter one would blank out ordinary words
			w.secrets = append(w.secrets, s)
		}
	}
	return w, nil
}

// post sends body as JSON to the base URL plus path, with a bearer token
// when one is given, and returns the answer. An error means there was
// none: it is a *doubtError when the whole request was written, since the
// vendor may then have acted on it.
func (w wire) post(ctx context.Context, path string, body any, bearer string) (answer, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return answer{}, herald.Permanent(fmt.Errorf("encode the request: %w", err))
	}
	var written atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			written.Store(true)
		}
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, w.base+path, bytes.NewReader(b))
	if err != nil {
		return answer{}, herald.Permanent(errors.New("build the request: " + w.clean(err.Error())))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "herald-calin")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL
		}
		err = errors.New("no answer: " + w.clean(err.Error()))
		if written.Load() {
			return answer{}, &doubtError{err}
		}
		return answer{}, err
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), retryAfter: resp.Header.Get("Retry-After")}
	a.body, err = io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if len(a.body) > MaxAnswer {
		a.body, a.truncated = a.body[:MaxAnswer], true
	} else if err != nil {
		return answer{}, &doubtError{fmt.Errorf("%s, and the answer broke off: %s", statusText(a.status), w.clean(err.Error()))}
	}
	return a, nil
}

// statusError is the error of an answer that is not 2xx, with detail (the
// vendor's message, or the quoted body): 504, a gateway that gave up
// waiting for the vendor, is in doubt (the vendor may still act on the
// request); 408 and the other 5xx are transient, 429 and 503 with a
// Retry-After a "not now"; any other 3xx or 4xx is permanent, since the
// same request would get the same answer. The error carries the status
// (herald.WithAnswer).
func (w wire) statusError(a answer, detail string) error {
	return herald.WithAnswer(strconv.Itoa(a.status), w.classifyStatus(a, fmt.Errorf("%s%s", statusText(a.status), detail)))
}

// classifyStatus is statusError's err, classified by a's status.
func (w wire) classifyStatus(a answer, err error) error {
	switch {
	case a.status == http.StatusGatewayTimeout:
		return &doubtError{err}
	case a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable:
		if d := httpsend.ParseRetryAfter(a.retryAfter, w.now()); d > 0 {
			return herald.RetryAfter(d, err)
		}
		return err
	case a.status == http.StatusRequestTimeout || a.status >= 500 || a.status < 300:
		return err
	}
	return herald.Permanent(err)
}

// isHTML reports whether an answer is a web page (an error page of a proxy
// or of the vendor's web server) rather than the API's JSON.
func (a answer) isHTML() bool {
	if strings.Contains(strings.ToLower(a.contentType), "text/html") {
		return true
	}
	b := bytes.TrimSpace(a.body)
	return len(b) > 0 && b[0] == '<'
}

// quote renders the start of a body for an error text: ": <text>", or
// " (empty body)".
func (w wire) quote(a answer) string {
	s := w.clean(string(a.body))
	switch {
	case s == "":
		return " (empty body)"
	case a.truncated:
		return fmt.Sprintf(": %s (over %d bytes)", s, MaxAnswer)
	}
	return ": " + s
}

// clean makes a text fit for an error: the secrets removed, valid UTF-8,
// its white space collapsed, at most ErrorTextLen bytes.
func (w wire) clean(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "")), " ")
	for _, sec := range w.secrets {
		s = strings.ReplaceAll(s, sec, "<secret>")
		s = strings.ReplaceAll(s, strings.Join(strings.Fields(sec), " "), "<secret>")
	}
	if len(s) > ErrorTextLen {
		s = strings.ToValidUTF8(s[:ErrorTextLen], "") + "…"
	}
	return s
}

// statusText renders an HTTP status as "502 Bad Gateway".
func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return strconv.Itoa(status) + " " + t
	}
	return strconv.Itoa(status)
}

// flexString is a JSON string that also takes a number (task ids, codes)
// or null (empty).
type flexString string

// UnmarshalJSON takes a string, a number or null.
func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*f = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexString(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("want a string or a number, got %.40s", b)
		}
		*f = flexString(n.String())
	}
	return nil
}

// flexInt reads a flexString as an integer: ok is false for anything else.
func flexInt(f flexString) (int, bool) {
	s := strings.TrimSpace(string(f))
	if n, err := strconv.Atoi(s); err == nil {
		return n, true
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil && x == float64(int(x)) && x >= -1e9 && x <= 1e9 {
		return int(x), true
	}
	return 0, false
}
