package ui_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/webhook"
	"github.com/heraldmq/herald/httpapi"
	"github.com/heraldmq/herald/internal/redistest"
	"github.com/heraldmq/herald/store/redis"
	"github.com/heraldmq/herald/store/sqlite"
	"github.com/heraldmq/herald/ui"
)

// node is one herald server: an engine on st, with the API and the admin
// page, its sessions kept in st, as herald serve mounts them.
type node struct {
	url  string
	stop func()
}

func startNode(t *testing.T, st herald.Store) *node {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := webhook.New(webhook.Config{URL: "http://127.0.0.1:1/unused"})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := herald.ProfilePolicy(herald.ProfileChannel)
	if err != nil {
		t.Fatal(err)
	}
	e, err := herald.New(herald.Config{Store: st, Logger: logger, Routes: []herald.Route{{Name: "hooks", Carrier: c, Policy: policy}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{keyAcme: acme, keyOther: globex}
	admin := ui.New(ui.Config{Keys: keys, Logger: logger, Sessions: st.(herald.SessionStore)})
	mux := http.NewServeMux()
	mux.Handle(ui.Path, admin)
	mux.Handle(ui.Path+"/", admin)
	mux.Handle("/", httpapi.New(httpapi.Config{Engine: e, Keys: keys, Logger: logger, Sessions: admin}))
	srv := httptest.NewServer(mux)
	n := &node{url: srv.URL}
	stopped := false
	n.stop = func() {
		if stopped {
			return
		}
		stopped = true
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	t.Cleanup(n.stop)
	return n
}

// noRedirects is a client that shows each answer as it is.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// loginAt logs in at base with key and returns the session cookie.
func loginAt(t *testing.T, base, key string) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/ui/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == ui.CookieName && resp.StatusCode == http.StatusSeeOther {
			return c
		}
	}
	t.Fatalf("login at %s: %d without a session cookie", base, resp.StatusCode)
	return nil
}

// withCookie calls base's API (or page) at path with cookie c, as the
// page's own origin would, and returns the status.
func withCookie(t *testing.T, method, base, path string, c *http.Cookie, csrf string) int {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, nil)
	req.AddCookie(c)
	if method != "GET" {
		req.Header.Set("Origin", base)
		req.Header.Set(httpapi.CSRFHeader, csrf)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// csrfOf reads the CSRF token of c's page at base.
func csrfOf(t *testing.T, base string, c *http.Cookie) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/ui", nil)
	req.AddCookie(c)
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	_, rest, ok := strings.Cut(string(body), `<meta name="csrf-token" content="`)
	token, _, _ := strings.Cut(rest, `"`)
	if resp.StatusCode != http.StatusOK || !ok || token == "" {
		t.Fatalf("GET /ui at %s: %d, no CSRF token", base, resp.StatusCode)
	}
	return token
}

// TestSessionSharedByNodesOnRedis: a login on one node is a session every
// node sharing the Redis serves, page and API, with the same CSRF token;
// a logout on the other ends it on both.
func TestSessionSharedByNodesOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	open := func() herald.Store {
		st, err := redis.Open(srv.URL() + "?prefix=shared")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	one, two := startNode(t, open()), startNode(t, open())
	c := loginAt(t, one.url, keyAcme)
	if got := withCookie(t, "GET", two.url, "/v1/stats", c, ""); got != http.StatusOK {
		t.Fatalf("the other node's API with the cookie: %d, want 200", got)
	}
	token := csrfOf(t, one.url, c)
	if got := csrfOf(t, two.url, c); got != token {
		t.Error("the nodes give the session different CSRF tokens")
	}
	// A change on the other node, with the token the first gave.
	if got := withCookie(t, "DELETE", two.url, "/v1/dead-letters", c, token); got != http.StatusOK {
		t.Errorf("a change on the other node with the session's token: %d, want 200", got)
	}
	// Logged out on the other node: ended on both.
	req, _ := http.NewRequest("POST", two.url+"/ui/logout", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", two.url)
	req.AddCookie(c)
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d, want 303", resp.StatusCode)
	}
	for _, n := range []*node{one, two} {
		if got := withCookie(t, "GET", n.url, "/v1/stats", c, ""); got != http.StatusUnauthorized {
			t.Errorf("the API with the cookie after the logout: %d, want 401", got)
		}
	}
}

// TestSessionOutlivesARestartOnSQLite: a server stopped and started again
// on the same database still serves the sessions it made.
func TestSessionOutlivesARestartOnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	open := func() *sqlite.Store {
		st, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	n := startNode(t, st)
	c := loginAt(t, n.url, keyAcme)
	token := csrfOf(t, n.url, c)
	n.stop()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = open()
	t.Cleanup(func() { st.Close() })
	n = startNode(t, st)
	if got := withCookie(t, "GET", n.url, "/v1/stats", c, ""); got != http.StatusOK {
		t.Fatalf("the API with the cookie after a restart: %d, want 200", got)
	}
	if got := csrfOf(t, n.url, c); got != token {
		t.Error("the session's CSRF token changed with the restart")
	}
	if got := withCookie(t, "GET", n.url, "/v1/stats", &http.Cookie{Name: ui.CookieName, Value: c.Value + "x"}, ""); got != http.StatusUnauthorized {
		t.Errorf("a forged cookie after the restart: %d, want 401", got)
	}
}
