package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds each HTTP exchange of the default HTTP client.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxRetries is how many times a request answered 503
	// store_unavailable is tried again.
	DefaultMaxRetries = 4
	// DefaultMinBackoff is the first wait before a retry when the answer
	// names none.
	DefaultMinBackoff = 100 * time.Millisecond
	// DefaultMaxBackoff caps the exponential backoff between retries.
	DefaultMaxBackoff = 5 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After honoured.
	DefaultMaxRetryAfter = 30 * time.Second
	// DefaultPollInterval is WaitFor's longest wait between two reads.
	DefaultPollInterval = time.Second
	// DefaultUserAgent is the User-Agent of every request.
	DefaultUserAgent = "herald-go-client"
)

// errorBodyLimit bounds how much of an error answer is read.
const errorBodyLimit = 64 << 10

// Config configures a Client.
type Config struct {
	// URL is the server's base address, e.g. "http://127.0.0.1:8080"; a
	// path in it (a proxy's prefix) is kept. Without a scheme
	// ("127.0.0.1:8080", "herald.internal"), it is taken as http. Required.
	URL string
	// Key is the API key, sent as "Authorization: Bearer <Key>". Empty
	// sends no Authorization header (the server then answers /v1 paths 401).
	Key string
	// HTTPClient sends the requests. Defaults to a client whose Timeout is
	// DefaultTimeout.
	HTTPClient *http.Client
	// MaxRetries bounds the retries of a request answered 503
	// store_unavailable. Defaults to DefaultMaxRetries; a negative value
	// turns retries off.
	MaxRetries int
	// MinBackoff is the wait before the first retry when the answer has no
	// Retry-After; each further retry waits twice as long, with jitter.
	// Defaults to DefaultMinBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps the backoff. Defaults to DefaultMaxBackoff.
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; an
	// answer asking for longer ends the retries and is returned. Defaults
	// to DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// PollInterval is the longest wait of WaitFor between two reads of a
	// message (it starts shorter and doubles up to it). Defaults to
	// DefaultPollInterval.
	PollInterval time.Duration
	// UserAgent is sent with every request. Defaults to DefaultUserAgent.
	UserAgent string
}

// Client talks to one herald server. It is safe for concurrent use.
type Client struct {
	base string // the URL without a trailing slash
	cfg  Config
	http *http.Client
}

// New checks cfg and returns a Client for it.
func New(cfg Config) (*Client, error) {
	if cfg.URL != "" && !strings.Contains(cfg.URL, "://") {
		cfg.URL = "http://" + cfg.URL
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("herald client: URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("herald client: URL %q: want an absolute http or https address", cfg.URL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("herald client: URL %q: want no query or fragment", cfg.URL)
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	return &Client{base: strings.TrimRight(cfg.URL, "/"), cfg: cfg, http: hc}, nil
}

// Do sends a request to path (which starts with "/" and may carry a query)
// with in, when not nil, as its JSON body, and decodes the JSON answer
// into out, when not nil; a *json.RawMessage keeps the answer as the server
// wrote it. It is the way to endpoints this package has no method for. An
// answer outside 2xx is an *Error. GET, HEAD, PUT and DELETE are retried on
// 503 store_unavailable; POST is not, as Do cannot know whether a repeat is
// harmless.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("herald: %s %s: the path must start with /", method, path)
	}
	retry := false
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
		retry = true
	}
	if _, err := c.call(ctx, call{method: method, path: path, in: in, out: out, retry: retry}); err != nil {
		return fmt.Errorf("herald: %s %s: %w", method, path, err)
	}
	return nil
}

// call is one API call.
type call struct {
	method string
	path   string // with its query, if any
	in     any    // the JSON body, or nil
	out    any    // where the JSON answer goes, or nil
	retry  bool   // whether a 503 store_unavailable is tried again
}

// call runs k, retrying it as Config says, and returns the status of the
// answer it decoded.
func (c *Client) call(ctx context.Context, k call) (int, error) {
	var body []byte
	if k.in != nil {
		var err error
		if body, err = json.Marshal(k.in); err != nil {
			return 0, fmt.Errorf("encode the request: %w", err)
		}
	}
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		status, err := c.once(ctx, k, body)
		var apiErr *Error
		if err == nil || !k.retry || try >= c.cfg.MaxRetries || !errors.As(err, &apiErr) || !apiErr.retryable() {
			return status, err
		}
		wait := c.backoff(try)
		if apiErr.RetryAfter >= 0 {
			if apiErr.RetryAfter > c.cfg.MaxRetryAfter {
				return status, err
			}
			wait = apiErr.RetryAfter
		}
		if err := sleep(ctx, wait); err != nil {
			return status, fmt.Errorf("%w; the last answer: %w", err, apiErr)
		}
	}
}

// once sends k with body and decodes the answer.
func (c *Client) once(ctx context.Context, k call, body []byte) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, k.method, c.base+k.path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	if c.cfg.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() {
		// Read what is left (a little) so that the connection is reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, errorBodyLimit))
		resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, readError(resp)
	}
	if k.out == nil || resp.StatusCode == http.StatusNoContent || k.method == http.MethodHead {
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(k.out); err != nil {
		return resp.StatusCode, fmt.Errorf("decode the answer (%d): %w", resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}

// readError reads an answer outside 2xx as an *Error: the API's
// {"error":{"code","message"}} shape, or else the start of the body.
func readError(resp *http.Response) *Error {
	e := &Error{Status: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	var shape struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &shape) == nil && shape.Error != nil && shape.Error.Code != "" {
		e.Code, e.Message = shape.Error.Code, shape.Error.Message
		return e
	}
	e.Message = strings.TrimSpace(string(data))
	if len(e.Message) > 200 {
		e.Message = e.Message[:200] + "…"
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// parseRetryAfter returns the wait a Retry-After value asks for relative to
// now (delta-seconds or an HTTP date, a past date being 0), or -1 when
// there is none or it cannot be read.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return -1
		}
		if n > int64(24*time.Hour/time.Second) {
			n = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return -1
	}
	return max(0, t.Sub(now))
}

// backoff is the wait before retry try+1 when the answer names none:
// MinBackoff doubled try times, capped at MaxBackoff, of which a random
// half is kept, so that many clients do not retry in step.
func (c *Client) backoff(try int) time.Duration {
	d := c.cfg.MinBackoff
	for i := 0; i < try && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// sleep waits d, or until ctx ends, whose error it then returns.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// query returns "?" and v encoded, or "" when v is empty.
func query(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// setNonEmpty sets key to value in v when value is not empty.
func setNonEmpty(v url.Values, key, value string) {
	if value != "" {
		v.Set(key, value)
	}
}
