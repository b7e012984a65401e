package ui

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald/httpapi"
)

// syncBuffer is a log both the test and the handler write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// clockedUI is a UI whose throttles and sessions read now, with its log
// and its problems.
func clockedUI(t *testing.T, now *time.Time, cfg Config) (*UI, *syncBuffer, map[string]int) {
	t.Helper()
	logs := &syncBuffer{}
	problems := map[string]int{}
	cfg.Keys = map[string]string{keyA: tenantA, keyB: tenantB}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	cfg.Problem = func(kind string) { problems[kind]++ }
	u := New(cfg)
	clock := func() time.Time { return *now }
	u.byAddr.now, u.byPrefix.now, u.sessions.now = clock, clock, clock
	return u, logs, problems
}

// from posts the login form with key as a browser at address remote would.
func from(u *UI, remote, key string, headers map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/ui/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	req.RemoteAddr = remote
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	u.ServeHTTP(rec, req)
	return rec
}

// TestFailedLoginsAreThrottledPerAddress: an address's first 5 wrong keys
// are answered 401; then it waits 1 s, 2 s, 4 s ... after each failure,
// answered 429 with Retry-After whatever the key, the right one too; the
// burst is logged once; other addresses are not held back, and a login
// once the wait is over forgets the failures.
func TestFailedLoginsAreThrottledPerAddress(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u, logs, problems := clockedUI(t, &now, Config{})
	const attacker, other = "192.0.2.7:4711", "198.51.100.9:5000"
	for i := range 5 {
		if rec := from(u, attacker, "guess-"+string(rune('a'+i)), nil); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d, want 401", i+1, rec.Code)
		}
	}
	if rec := from(u, attacker, "guess-f", nil); rec.Code != http.StatusUnauthorized {
		t.Fatalf("6th wrong key: %d, want 401 (and a wait after it)", rec.Code)
	}
	for i := range 44 {
		rec := from(u, attacker, keyA, nil)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || sessionCookie(rec) != nil {
			t.Fatalf("login %d within the wait: %d, Retry-After %q; want 429 without a session", i+7, rec.Code, rec.Header().Get("Retry-After"))
		}
		if !strings.Contains(rec.Body.String(), "Too many failed logins") {
			t.Fatal("the 429 page does not say why")
		}
	}
	if rec := from(u, other, keyB, nil); rec.Code != http.StatusSeeOther {
		t.Errorf("another address's login: %d, want 303", rec.Code)
	}
	now = now.Add(time.Second)
	from(u, attacker, "guess-g", nil) // the wait doubles
	if rec := from(u, attacker, keyA, nil); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "2" {
		t.Errorf("after the 7th failure: %d, Retry-After %q; want 429 for 2 s", rec.Code, rec.Header().Get("Retry-After"))
	}
	if n := strings.Count(logs.String(), "failed logins throttled: a client address"); n != 1 {
		t.Errorf("the burst is logged %d times, want once:\n%s", n, logs)
	}
	if problems[problemLoginFailed] != 7 || problems[problemLoginThrottled] != 45 {
		t.Errorf("problems %v, want 7 failed and 45 throttled", problems)
	}
	now = now.Add(2 * time.Second)
	if rec := from(u, attacker, keyA, nil); rec.Code != http.StatusSeeOther {
		t.Fatalf("the right key after the wait: %d, want 303", rec.Code)
	}
	if rec := from(u, attacker, "guess-h", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("a wrong key after a login: %d, want 401 (its failures forgotten)", rec.Code)
	}
	if rec := from(u, attacker, keyA, nil); rec.Code != http.StatusSeeOther {
		t.Errorf("the right key after one failure: %d, want 303", rec.Code)
	}
}

// TestFailedLoginsAreThrottledPerKeyPrefix: keys that start alike, tried
// from many addresses, are held back together after 10 failures; the log
// names a hash of the prefix, never the prefix.
func TestFailedLoginsAreThrottledPerKeyPrefix(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u, logs, _ := clockedUI(t, &now, Config{})
	prefix := keyA[:keyPrefixLen]
	for i := range 11 {
		addr := netip.AddrFrom4([4]byte{203, 0, 113, byte(i + 1)}).String() + ":1"
		if rec := from(u, addr, prefix+"-wrong-"+string(rune('a'+i)), nil); rec.Code != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i+1, rec.Code)
		}
	}
	if rec := from(u, "203.0.113.200:1", prefix+"-yet-another", nil); rec.Code != http.StatusTooManyRequests {
		t.Errorf("a 12th guess with the prefix from a fresh address: %d, want 429", rec.Code)
	}
	if rec := from(u, "203.0.113.201:1", keyB, nil); rec.Code != http.StatusSeeOther {
		t.Errorf("another key from a fresh address: %d, want 303", rec.Code)
	}
	if strings.Contains(logs.String(), prefix) || !strings.Contains(logs.String(), "prefix_sha256=") {
		t.Errorf("the log names the prefix, or no hash of it:\n%s", logs)
	}
}

// TestSecureCookieAndClientBehindATrustedProxy: a trusted proxy's
// X-Forwarded-Proto: https makes the cookie Secure and its X-Forwarded-For
// names the client whose failures count; an untrusted peer's headers are
// not believed.
func TestSecureCookieAndClientBehindATrustedProxy(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u, _, _ := clockedUI(t, &now, Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	https := map[string]string{"X-Forwarded-Proto": "https", "Origin": "https://example.com"}
	if c := sessionCookie(from(u, "10.1.2.3:443", keyA, https)); c == nil || !c.Secure {
		t.Errorf("through the trusted proxy: cookie %+v, want Secure", c)
	}
	if c := sessionCookie(from(u, "192.0.2.1:443", keyA, https)); c == nil || c.Secure {
		t.Errorf("from an untrusted peer claiming https: cookie %+v, want not Secure", c)
	}
	// Two clients behind the proxy: one's failures do not hold the other back.
	for range 6 {
		from(u, "10.1.2.3:443", "wrong", map[string]string{"X-Forwarded-For": "198.51.100.1, 10.9.9.9"})
	}
	if rec := from(u, "10.1.2.3:443", keyA, map[string]string{"X-Forwarded-For": "198.51.100.1"}); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the failing client again: %d, want 429", rec.Code)
	}
	if rec := from(u, "10.1.2.3:443", keyA, map[string]string{"X-Forwarded-For": "198.51.100.2"}); rec.Code != http.StatusSeeOther {
		t.Errorf("another client behind the proxy: %d, want 303", rec.Code)
	}
	// A forged X-Forwarded-For from an untrusted peer names the peer.
	for i := range 6 { // keys of different prefixes, which their throttle lets through
		from(u, "192.0.2.50:1", fmt.Sprintf("%02d-wrong", i), map[string]string{"X-Forwarded-For": "198.51.100.77"})
	}
	if rec := from(u, "192.0.2.50:1", keyA, map[string]string{"X-Forwarded-For": "198.51.100.78"}); rec.Code != http.StatusTooManyRequests {
		t.Errorf("an untrusted peer changing its X-Forwarded-For: %d, want 429", rec.Code)
	}
}

// TestReadOnlyKeysPage: a read-only key's session has its role, and its
// page says so and marks nothing it could not do.
func TestReadOnlyKeysPage(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u, _, _ := clockedUI(t, &now, Config{Roles: map[string]httpapi.Role{keyB: httpapi.RoleRead}})
	c := sessionCookie(from(u, "192.0.2.1:1", keyB, nil))
	req := httptest.NewRequest("GET", "/v1/stats", nil)
	req.AddCookie(c)
	if id, _, ok := u.Session(req); !ok || id != (httpapi.Identity{Tenant: tenantB, Role: httpapi.RoleRead}) {
		t.Fatalf("session %+v %v, want globex, read", id, ok)
	}
	page := get(u, "/ui", c).Body.String()
	if !strings.Contains(page, `data-role="read"`) || !strings.Contains(page, "read only") {
		t.Error("the read-only key's page does not say so")
	}
}
