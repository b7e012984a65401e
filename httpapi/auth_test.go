package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestUnauthorized(t *testing.T) {
	f := newFixture(t)
	paths := []struct{ method, path string }{
		{"POST", "/v1/messages"}, {"GET", "/v1/messages"}, {"GET", "/v1/messages/x"},
		{"POST", "/v1/messages/x/cancel"}, {"POST", "/v1/messages/x/replay"}, {"GET", "/v1/messages/x/explain"},
		{"GET", "/v1/dead-letters"}, {"POST", "/v1/dead-letters/replay"}, {"DELETE", "/v1/dead-letters"},
		{"GET", "/v1/health"}, {"GET", "/v1/stats"}, {"GET", "/v1/lanes"}, {"GET", "/v1/no-such-thing"},
	}
	headers := map[string]string{
		"no header":      "",
		"unknown key":    "Bearer nope",
		"empty key":      "Bearer ",
		"another scheme": "Basic " + keyA,
		"bare key":       keyA,
	}
	for _, p := range paths {
		for name, h := range headers {
			req := httptest.NewRequest(p.method, p.path, nil)
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, req)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s %s with %s: status %d, want 401", p.method, p.path, name, rec.Code)
				continue
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != "Bearer" {
				t.Errorf("%s %s with %s: WWW-Authenticate %q", p.method, p.path, name, got)
			}
			if e := decode[errorBody](t, rec).Error; e.Code != "unauthorized" || e.Message == "" {
				t.Errorf("%s %s with %s: error %+v", p.method, p.path, name, e)
			}
		}
	}
}

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	f := newFixture(t)
	req := httptest.NewRequest("GET", "/v1/messages", nil)
	req.Header.Set("Authorization", "bearer "+keyA)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	wantStatus(t, rec, http.StatusOK)
}

func TestKeysWithoutTenantAreIgnored(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Keys["orphan"] = "" })
	wantError(t, f.do("GET", "/v1/messages", "orphan", ""), http.StatusUnauthorized, "unauthorized")
}

func TestProbesNeedNoKey(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		rec := f.do("GET", p, "", "")
		wantStatus(t, rec, http.StatusOK)
		if got := decode[statusBody](t, rec); got.Status != "ok" {
			t.Errorf("%s = %+v", p, got)
		}
	}
}
