package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
)

// usesKeys reports whether an operation takes an API key (or a session).
func usesKeys(security [][]string) bool {
	return slices.ContainsFunc(security, func(alt []string) bool { return slices.Contains(alt, "bearerAuth") })
}

// TestReadOnlyKeyMayOnlyRead: every POST and DELETE of the OpenAPI
// document that takes an API key is refused 403 to a read-only key, and
// to its browser session, with nothing changed; its GETs are answered.
func TestReadOnlyKeyMayOnlyRead(t *testing.T) {
	problems := map[string]int{}
	f := newFixture(t, withReader, func(c *Config) {
		c.Sessions = fakeSessions{"reader": {tenantA, "reader-token", string(RoleRead)}}
		c.Problem = func(kind string) { problems[kind]++ }
	})
	own := f.sendOK(`{"route":"hooks","target":"fail","text":"mine"}`)
	f.run()
	wantStatus(t, f.do("POST", "/v1/rooms", keyA, `{"name":"orders"}`), http.StatusCreated)
	sub := decode[subscriptionView](t, f.do("POST", "/v1/rooms/orders/subscriptions", keyA, `{"type":"pull"}`)).ID
	ev := decode[herald.RoomEventView](t, f.do("POST", "/v1/rooms/orders/events", keyA, `{"type":"t"}`)).ID
	fill := strings.NewReplacer("{id}", own.ID, "{name}", "orders", "{room}", "orders", "{route}", "lora")
	session := map[string]string{CSRFHeader: "reader-token", "Origin": origin, "Sec-Fetch-Site": "same-origin"}
	refused := 0
	for _, op := range specDoc(t).Operations() {
		if op.Handler != "httpapi" || !usesKeys(op.Security()) {
			continue
		}
		path := fill.Replace(op.Path)
		switch {
		case strings.HasPrefix(op.Path, "/v1/subscriptions/"):
			path = strings.ReplaceAll(op.Path, "{id}", sub)
		case strings.HasPrefix(op.Path, "/v1/rooms/{room}/events/"):
			path = strings.NewReplacer("{room}", "orders", "{id}", ev).Replace(op.Path)
		}
		if op.Method == "GET" {
			wantStatus(t, f.do("GET", path, keyRead, ""), http.StatusOK)
			continue
		}
		e := wantError(t, f.do(op.Method, path, keyRead, `{}`), http.StatusForbidden, codeForbidden)
		if !strings.Contains(e.Message, "role read") {
			t.Errorf("%s %s: %q does not say why", op.Method, path, e.Message)
		}
		wantError(t, f.browser(op.Method, path, "reader", session), http.StatusForbidden, codeForbidden)
		refused++
	}
	if refused < 18 {
		t.Errorf("%d POST and DELETE operations refused, want every one (at least 18)", refused)
	}
	if v := decode[listBody](t, f.do("GET", "/v1/dead-letters", keyA, "")).Messages; len(v) != 1 {
		t.Errorf("dead letters after the refusals: %d, want the one still there", len(v))
	}
	if n := len(decode[map[string][]subscriptionView](t, f.do("GET", "/v1/rooms/orders/subscriptions", keyA, ""))["subscriptions"]); n != 1 {
		t.Errorf("%d subscriptions after the refusals, want 1", n)
	}
	if !strings.Contains(f.logs.String(), "read-only key may not change anything") {
		t.Error("no log line for the refusals")
	}
	if problems[problemReadOnly] != 2*refused {
		t.Errorf("%d refusals counted (%s), want %d", problems[problemReadOnly], problemReadOnly, 2*refused)
	}
}

// TestMetricsKey: with a metrics key, /metrics answers 401 without it,
// with another key or with an API key, and serves the metrics with it.
func TestMetricsKey(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("herald_up 1\n")) })
	problems := map[string]int{}
	f := newFixture(t, func(c *Config) {
		c.Metrics, c.MetricsKey = metrics, "scrape-secret"
		c.Problem = func(kind string) { problems[kind]++ }
	})
	for _, key := range []string{"", "wrong", keyA, "scrape-secret-and-more"} {
		rec := f.do("GET", "/metrics", key, "")
		wantError(t, rec, http.StatusUnauthorized, "unauthorized")
		if rec.Header().Get("WWW-Authenticate") != "Bearer" || strings.Contains(rec.Body.String(), "herald_up") {
			t.Errorf("/metrics with %q: %s", key, rec.Body)
		}
	}
	rec := f.do("GET", "/metrics", "scrape-secret", "")
	wantStatus(t, rec, http.StatusOK)
	if rec.Body.String() != "herald_up 1\n" {
		t.Errorf("/metrics with its key: %q", rec.Body)
	}
	if problems[problemMetricsKey] != 4 {
		t.Errorf("%d refusals counted (%s), want 4", problems[problemMetricsKey], problemMetricsKey)
	}
}

// TestJSONAnswersAreNotSniffed: every JSON answer, errors too, tells
// browsers not to read it as anything else.
func TestJSONAnswersAreNotSniffed(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ method, path, key string }{
		{"GET", "/v1/stats", keyA}, {"GET", "/v1/messages/nope", keyA}, {"GET", "/v1/stats", ""},
		{"GET", "/healthz", ""}, {"DELETE", "/v1/messages", keyA}, {"GET", "/nowhere", ""},
	} {
		if got := f.do(c.method, c.path, c.key, "").Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options %q, want nosniff", c.method, c.path, got)
		}
	}
}
