package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestKeysRolesAndTheMetricsKey: the config's roles, metrics key and
// trusted proxies reach the server: a read key may read and not send, an
// admin key sees every tenant's figures, /metrics needs its own key, and
// a login through a trusted proxy that says https gets a Secure cookie.
func TestKeysRolesAndTheMetricsKey(t *testing.T) {
	t.Setenv("HERALD_TEST_SCRAPE_KEY", "scrape-key")
	writer := startConfigServer(t, "k1", `api_keys: [{key: k1, tenant: acme}, {key: k2, tenant: other},
  {key: r1, tenant: acme, role: read}, {key: x1, tenant: ops, role: admin}]
metrics: {key_env: HERALD_TEST_SCRAPE_KEY}
http: {trusted_proxies: [127.0.0.1]}
routes:
  - {name: hooks, carrier: webhook, url: "http://127.0.0.1:9/in"}
`)
	as := func(key string) *serverProc { return &serverProc{t: t, base: writer.base, key: key} }
	mustCall(t, writer, "POST", "/v1/messages", map[string]any{"route": "hooks", "text": "a"}, nil, http.StatusAccepted)
	mustCall(t, as("k2"), "POST", "/v1/messages", map[string]any{"route": "hooks", "text": "b"}, nil, http.StatusAccepted)
	mustCall(t, as("r1"), "POST", "/v1/messages", map[string]any{"route": "hooks", "text": "c"}, nil, http.StatusForbidden)
	var list struct{ Messages []struct{ ID string } }
	mustCall(t, as("r1"), "GET", "/v1/messages", nil, &list, http.StatusOK)
	if len(list.Messages) != 1 {
		t.Errorf("the read key lists %d messages, want acme's 1", len(list.Messages))
	}
	enqueued := func(key string) int {
		var s struct{ Enqueued int }
		mustCall(t, as(key), "GET", "/v1/stats", nil, &s, http.StatusOK)
		return s.Enqueued
	}
	if a, x := enqueued("k1"), enqueued("x1"); a != 1 || x != 2 {
		t.Errorf("enqueued: acme's key %d, the admin key %d; want 1 and 2", a, x)
	}
	for key, want := range map[string]int{"": 401, "k1": 401, "scrape-key": 200} {
		if code, _ := as(key).call("GET", "/metrics", nil, nil); code != want {
			t.Errorf("/metrics with %q: %d, want %d", key, code, want)
		}
	}
	for proto, secure := range map[string]bool{"https": true, "http": false} {
		req, _ := http.NewRequest("POST", writer.base+"/ui/login", strings.NewReader("key=k1"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", writer.base)
		req.Header.Set("X-Forwarded-Proto", proto)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if c := resp.Cookies(); len(c) != 1 || c[0].Secure != secure {
			t.Errorf("login through the proxy saying %s: cookies %v, want Secure %v", proto, c, secure)
		}
	}
}
