package ui

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald/httpapi"
)

const (
	keyA    = "key-of-acme"
	keyB    = "key-of-globex"
	tenantA = "acme"
	tenantB = "globex"
	origin  = "http://example.com" // httptest.NewRequest's host
)

func newUI(t *testing.T) *UI {
	t.Helper()
	return New(Config{Keys: map[string]string{keyA: tenantA, keyB: tenantB, "orphan": ""},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// post sends a form to u as a browser on the page's origin would, with
// headers overriding (an empty value removes one).
func post(u *UI, path string, form url.Values, cookie *http.Cookie, headers map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	rec := httptest.NewRecorder()
	u.ServeHTTP(rec, req)
	return rec
}

func get(u *UI, path string, cookie *http.Cookie) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	rec := httptest.NewRecorder()
	u.ServeHTTP(rec, req)
	return rec
}

func sessionCookie(rec *httptest.ResponseRecorder) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	return nil
}

// login logs in with key and returns the session cookie.
func login(t *testing.T, u *UI, key string) *http.Cookie {
	t.Helper()
	rec := post(u, "/ui/login", url.Values{"key": {key}}, nil, nil)
	c := sessionCookie(rec)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != Path || c == nil {
		t.Fatalf("login = %d to %q, cookie %v; want 303 to /ui with a cookie", rec.Code, rec.Header().Get("Location"), c)
	}
	return c
}

func tenantOf(u *UI, c *http.Cookie) (string, string, bool) {
	req := httptest.NewRequest("GET", "/v1/messages", nil)
	if c != nil {
		req.AddCookie(c)
	}
	id, token, ok := u.Session(req)
	return id.Tenant, token, ok
}

func TestLoginSetsAnOpaqueStrictCookie(t *testing.T) {
	u := newUI(t)
	c := login(t, u, keyA)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/ (and not Secure over plain HTTP)", c)
	}
	if c.MaxAge != 0 || !c.Expires.IsZero() {
		t.Errorf("cookie %+v: want a browser-session cookie, without Max-Age or Expires", c)
	}
	if strings.Contains(c.Value, keyA) || len(c.Value) < 40 {
		t.Errorf("cookie value %q: want an opaque id of 256 bits, not the key", c.Value)
	}
	tenant, token, ok := tenantOf(u, c)
	if !ok || tenant != tenantA || len(token) < 40 || token == c.Value {
		t.Errorf("Session = %q, %q, %v; want %s with a token of its own", tenant, token, ok, tenantA)
	}
	other := login(t, u, keyA)
	if other.Value == c.Value {
		t.Error("two logins got the same session id")
	}
	if _, token2, _ := tenantOf(u, other); token2 == token {
		t.Error("two sessions share a CSRF token")
	}

	// Over TLS the cookie is Secure.
	req := httptest.NewRequest("POST", "https://example.com/ui/login", strings.NewReader("key="+keyB))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://example.com")
	rec := httptest.NewRecorder()
	u.ServeHTTP(rec, req)
	if c := sessionCookie(rec); c == nil || !c.Secure {
		t.Errorf("login over TLS: cookie %+v, want Secure", c)
	}
}

func TestWrongKeyCannotLogIn(t *testing.T) {
	u := newUI(t)
	for name, key := range map[string]string{
		"wrong key": "nope", "empty key": "", "key of no tenant": "orphan", "a key's prefix": keyA[:5], "the tenant's name": tenantA,
	} {
		rec := post(u, "/ui/login", url.Values{"key": {key}}, nil, nil)
		if rec.Code != http.StatusUnauthorized || sessionCookie(rec) != nil {
			t.Errorf("%s: login = %d with cookie %v; want 401 and none", name, rec.Code, sessionCookie(rec))
		}
		if !strings.Contains(rec.Body.String(), "That key is not valid.") {
			t.Errorf("%s: the login form does not say the key is wrong", name)
		}
	}
	if n := len(u.sessions.byKey); n != 0 {
		t.Errorf("%d sessions after failed logins, want none", n)
	}
}

func TestLoginFromAnotherOriginIsRefused(t *testing.T) {
	u := newUI(t)
	for name, h := range map[string]map[string]string{
		"another origin":        {"Origin": "http://evil.example", "Sec-Fetch-Site": ""},
		"a cross-site fetch":    {"Sec-Fetch-Site": "cross-site"},
		"no Origin, no fetch":   {"Origin": "", "Sec-Fetch-Site": ""},
		"an opaque origin":      {"Origin": "null", "Sec-Fetch-Site": ""},
		"a same-site subdomain": {"Origin": "http://evil.example.com", "Sec-Fetch-Site": "same-site"},
	} {
		rec := post(u, "/ui/login", url.Values{"key": {keyA}}, nil, h)
		if rec.Code != http.StatusForbidden || sessionCookie(rec) != nil {
			t.Errorf("%s: login = %d with cookie %v; want 403 and none", name, rec.Code, sessionCookie(rec))
		}
	}
}

func TestPageNeedsASession(t *testing.T) {
	u := newUI(t)
	for _, p := range []string{"/ui", "/ui/"} {
		rec := get(u, p, nil)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/login" {
			t.Errorf("GET %s without a session = %d to %q; want 303 to /ui/login", p, rec.Code, rec.Header().Get("Location"))
		}
		rec = get(u, p, &http.Cookie{Name: CookieName, Value: "forged"})
		if rec.Code != http.StatusSeeOther {
			t.Errorf("GET %s with a forged cookie = %d; want 303", p, rec.Code)
		}
	}
	c := login(t, u, keyB)
	rec := get(u, "/ui", c)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /ui with a session = %d", rec.Code)
	}
	_, token, _ := tenantOf(u, c)
	body := rec.Body.String()
	if !strings.Contains(body, `<meta name="csrf-token" content="`+token+`">`) || !strings.Contains(body, ">"+tenantB+"<") {
		t.Errorf("the page does not carry the session's token and tenant:\n%s", body)
	}
	if strings.Contains(body, keyB) {
		t.Error("the page shows the API key")
	}
	h := rec.Header()
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if h.Get("Cache-Control") != "no-store" || h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers %v", h)
	}
	// The login page sends a logged-in browser on.
	if rec := get(u, "/ui/login", c); rec.Code != http.StatusSeeOther {
		t.Errorf("GET /ui/login with a session = %d, want 303", rec.Code)
	}
	if rec := get(u, "/ui/login", nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<label for="key">API key</label>`) {
		t.Errorf("GET /ui/login = %d without its labelled field", rec.Code)
	}
}

func TestLogoutNeedsTheTokenAndEndsTheSession(t *testing.T) {
	u := newUI(t)
	c := login(t, u, keyA)
	_, token, _ := tenantOf(u, c)

	for name, tc := range map[string]struct {
		form    url.Values
		headers map[string]string
	}{
		"no token":       {url.Values{}, nil},
		"a wrong token":  {url.Values{"csrf": {token + "x"}}, nil},
		"another origin": {url.Values{"csrf": {token}}, map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}},
	} {
		rec := post(u, "/ui/logout", tc.form, c, tc.headers)
		if rec.Code != http.StatusForbidden {
			t.Errorf("logout with %s = %d, want 403", name, rec.Code)
		}
		if _, _, ok := tenantOf(u, c); !ok {
			t.Fatalf("logout with %s ended the session", name)
		}
	}
	rec := post(u, "/ui/logout", url.Values{"csrf": {token}}, c, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/login" {
		t.Errorf("logout = %d to %q, want 303 to /ui/login", rec.Code, rec.Header().Get("Location"))
	}
	if cleared := sessionCookie(rec); cleared == nil || cleared.MaxAge >= 0 || cleared.Value != "" {
		t.Errorf("logout's cookie %+v, want it cleared", cleared)
	}
	if _, _, ok := tenantOf(u, c); ok {
		t.Error("the session lives on after logout")
	}
	if rec := get(u, "/ui", c); rec.Code != http.StatusSeeOther {
		t.Errorf("GET /ui after logout = %d, want 303 to the login", rec.Code)
	}
}

// TestSessionsEndAndAreBoundedPerTenant: a session ends after its
// lifetime however much it is used, or unused for the idle timeout; a
// tenant's logins beyond its bound end its least recently used session,
// never another tenant's.
func TestSessionsEndAndAreBoundedPerTenant(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newSessions(time.Hour, 10*time.Minute, 3, func() time.Time { return now })
	a, b := httpapi.Identity{Tenant: "a", Role: httpapi.RoleWrite}, httpapi.Identity{Tenant: "b", Role: httpapi.RoleRead}
	used := s.start(a)
	idle := s.start(a)
	for i := range 6 { // used every 9 minutes: lives until its hour
		now = now.Add(9 * time.Minute)
		if sess, ok := s.get(used); !ok || sess.id != a {
			t.Fatalf("a session used every 9 minutes ended after %v", time.Duration(i+1)*9*time.Minute)
		}
	}
	if _, ok := s.get(idle); ok {
		t.Error("a session unused for 54 minutes lives, past its idle timeout of 10")
	}
	now = now.Add(6*time.Minute - time.Nanosecond) // just short of an hour after the login; idle for 6 minutes
	if _, ok := s.get(used); !ok {
		t.Error("a session ended before its hour")
	}
	now = now.Add(time.Nanosecond)
	if _, ok := s.get(used); ok {
		t.Error("a session lives past its hour, however much it is used")
	}

	// b's one session, then a's logins beyond the bound: a's oldest go.
	bs := s.start(b)
	var as []string
	for range 10 {
		now = now.Add(time.Second)
		as = append(as, s.start(a))
	}
	if sess, ok := s.get(bs); !ok || sess.id != b {
		t.Fatal("another tenant's logins ended b's session")
	}
	for i, id := range as {
		if _, ok := s.get(id); ok != (i >= 7) {
			t.Errorf("a's login %d live = %v, want only the last 3", i, ok)
		}
	}
	if n := s.count("a"); n != 3 {
		t.Errorf("a holds %d sessions, want 3", n)
	}
	// Using an older session keeps it: the least recently used goes.
	now = now.Add(time.Second)
	s.get(as[9])
	now = now.Add(time.Second)
	s.get(as[7])
	newest := s.start(a)
	if _, ok := s.get(as[8]); ok {
		t.Error("the least recently used session survived")
	}
	for _, id := range []string{as[7], as[9], newest} {
		if _, ok := s.get(id); !ok {
			t.Error("a recently used session was ended")
		}
	}
}

func TestAssetsAndUnknownPaths(t *testing.T) {
	u := newUI(t)
	for path, ctype := range map[string]string{"/ui/assets/app.js": "javascript", "/ui/assets/app.css": "text/css"} {
		rec := get(u, path, nil)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), ctype) || rec.Body.Len() == 0 {
			t.Errorf("GET %s = %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
	for _, path := range []string{"/ui/assets/index.html", "/ui/assets/login.html", "/ui/nope", "/ui/assets/../ui.go", "/ui/assets/", "/ui/assets"} {
		if rec := get(u, path, nil); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, rec.Code)
		}
	}
	req := httptest.NewRequest("DELETE", "/ui", nil)
	rec := httptest.NewRecorder()
	u.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /ui = %d, want 405", rec.Code)
	}
	if rec := get(u, "/ui/logout", nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /ui/logout = %d, want 405", rec.Code)
	}
}
