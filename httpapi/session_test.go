package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heraldmq/herald"
)

// fakeSessions knows the sessions of cookie "session": its value maps to
// a tenant and a CSRF token, and the role "read" for a third value.
type fakeSessions map[string][]string

func (s fakeSessions) Session(r *http.Request) (Identity, string, bool) {
	c, err := r.Cookie("session")
	if err != nil {
		return Identity{}, "", false
	}
	v, ok := s[c.Value]
	if !ok {
		return Identity{}, "", false
	}
	id := Identity{Tenant: v[0], Role: RoleWrite}
	if len(v) > 2 {
		id.Role = Role(v[2])
	}
	return id, v[1], true
}

const (
	sessionA = "session-of-a"
	tokenA   = "token-of-a"
	sessionB = "session-of-b"
	tokenB   = "token-of-b"
	origin   = "http://example.com" // httptest.NewRequest's host
)

func withSessions(c *Config) {
	c.Sessions = fakeSessions{sessionA: {tenantA, tokenA}, sessionB: {tenantB, tokenB}}
}

// browser sends a request as a browser of the page would: with the
// session cookie, the given headers and, for every change, the page's origin.
func (f *fixture) browser(method, path, session string, headers map[string]string) *httptest.ResponseRecorder {
	f.t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if session != "" {
		req.AddCookie(&http.Cookie{Name: "session", Value: session})
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

func TestSessionReadsItsTenantsMessages(t *testing.T) {
	f := newFixture(t, withSessions)
	a := f.sendOK(`{"route":"hooks","text":"a"}`)
	wantStatus(t, f.do("POST", "/v1/messages", keyB, `{"route":"hooks","text":"b"}`), http.StatusAccepted)

	rec := f.browser("GET", "/v1/messages", sessionA, nil)
	wantStatus(t, rec, http.StatusOK)
	if got := viewIDs(decode[listBody](t, rec).Messages); len(got) != 1 || got[0] != a.ID {
		t.Errorf("session A lists %v, want only [%s]", got, a.ID)
	}
	wantStatus(t, f.browser("GET", "/v1/messages/"+a.ID, sessionA, nil), http.StatusOK)
	wantError(t, f.browser("GET", "/v1/messages/"+a.ID, sessionB, nil), http.StatusNotFound, codeNotFound)
	wantError(t, f.browser("GET", "/v1/messages", "no-such-session", nil), http.StatusUnauthorized, "unauthorized")
}

func TestSessionChangesNeedTheTokenAndTheOrigin(t *testing.T) {
	f := newFixture(t, withSessions)
	good := map[string]string{CSRFHeader: tokenA, "Origin": origin, "Sec-Fetch-Site": "same-origin"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for hk, hv := range good {
			h[hk] = hv
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	refused := map[string]map[string]string{
		"no token":                      with(CSRFHeader, ""),
		"another session's token":       with(CSRFHeader, tokenB),
		"a token off by a letter":       with(CSRFHeader, tokenA+"x"),
		"another origin":                with("Origin", "http://evil.example"),
		"another scheme's origin":       with("Origin", "ftp://example.com"),
		"an opaque origin":              with("Origin", "null"),
		"a cross-site fetch":            with("Sec-Fetch-Site", "cross-site"),
		"a same-site fetch":             with("Sec-Fetch-Site", "same-site"),
		"neither Origin nor Fetch-Site": {CSRFHeader: tokenA},
	}
	for _, p := range []struct{ method, path string }{
		{"POST", "/v1/messages"}, {"POST", "/v1/messages/x/cancel"}, {"POST", "/v1/messages/x/replay"},
		{"POST", "/v1/dead-letters/replay"}, {"DELETE", "/v1/dead-letters"},
	} {
		for name, h := range refused {
			rec := f.browser(p.method, p.path, sessionA, h)
			if rec.Code != http.StatusForbidden {
				t.Errorf("%s %s with %s: status %d, want 403", p.method, p.path, name, rec.Code)
				continue
			}
			if e := decode[errorBody](t, rec).Error; e.Code != codeForbidden || e.Message == "" {
				t.Errorf("%s %s with %s: error %+v", p.method, p.path, name, e)
			}
		}
		if rec := f.browser(p.method, p.path, "", good); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s %s with the token but no cookie: status %d, want 401", p.method, p.path, rec.Code)
		}
	}

	// With both, the change is made; Origin or Sec-Fetch-Site alone will do.
	m := f.sendOK(`{"route":"gw","target":"busy","text":"x"}`) // waits: cancellable
	f.run()
	rec := f.browser("POST", "/v1/messages/"+m.ID+"/cancel", sessionA, with("Sec-Fetch-Site", ""))
	wantStatus(t, rec, http.StatusOK)
	if v := decode[herald.MessageView](t, rec); v.Status != herald.StatusCancelled {
		t.Errorf("cancelled by the page: status %s", v.Status)
	}
	wantStatus(t, f.browser("POST", "/v1/messages/"+m.ID+"/replay", sessionA, with("Origin", "")), http.StatusOK)
	wantStatus(t, f.browser("DELETE", "/v1/dead-letters", sessionA, good), http.StatusOK)
}

func TestBearerKeysIgnoreSessions(t *testing.T) {
	f := newFixture(t, withSessions)
	// A bearer client sends no Origin and no token, and needs none.
	rec := f.do("POST", "/v1/messages", keyA, `{"route":"hooks","text":"a"}`)
	wantStatus(t, rec, http.StatusAccepted)
	wantStatus(t, f.do("DELETE", "/v1/dead-letters", keyA, ""), http.StatusOK)

	// A bad Authorization header is refused even with a good cookie.
	rec = f.browser("GET", "/v1/messages", sessionA, map[string]string{"Authorization": "Bearer nope"})
	wantError(t, rec, http.StatusUnauthorized, "unauthorized")
}

func TestWithoutSessionsCookiesAreIgnored(t *testing.T) {
	f := newFixture(t)
	rec := f.browser("GET", "/v1/messages", sessionA, nil)
	wantError(t, rec, http.StatusUnauthorized, "unauthorized")
}

func TestActivity(t *testing.T) {
	f := newFixture(t)
	f.sendOK(`{"route":"hooks","text":"a"}`)
	f.run()
	wantError(t, f.do("GET", "/v1/activity", "", ""), http.StatusUnauthorized, "unauthorized")
	rec := f.do("GET", "/v1/activity", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	got := decode[activityBody](t, rec).Minutes
	if len(got) != herald.ActivityMinutes {
		t.Fatalf("%d minutes, want %d", len(got), herald.ActivityMinutes)
	}
	if last := got[len(got)-1]; last.Sent != 1 || last.Succeeded != 1 || !last.Start.Equal(start.Truncate(60e9)) {
		t.Errorf("the minute under way = %+v, want 1 sent and 1 succeeded from %v", last, start.Truncate(60e9))
	}
}
