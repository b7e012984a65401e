package api_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/heraldmq/herald/api"
	"github.com/heraldmq/herald/internal/openapitest"
	"github.com/heraldmq/herald/ui"
)

// TestDocumentIsOpenAPI31: the document validates against the official
// schema of OpenAPI 3.1 documents (its Schema Objects against the OpenAPI
// dialect of JSON Schema 2020-12), has no key twice, every $ref leads
// somewhere, every schema compiles, and the lint rules hold.
func TestDocumentIsOpenAPI31(t *testing.T) {
	data := api.OpenAPI()
	if err := openapitest.ValidateOpenAPI31(data); err != nil {
		t.Fatalf("api/openapi.json is not a valid OpenAPI 3.1 document:\n%v", err)
	}
	doc, err := openapitest.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range doc.Lint() {
		t.Error(p)
	}
}

// TestOpenAPIIsTheFile: OpenAPI returns openapi.json as committed, and a
// copy: changing it changes nothing for the next caller.
func TestOpenAPIIsTheFile(t *testing.T) {
	want, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	got := api.OpenAPI()
	if !bytes.Equal(got, want) {
		t.Fatal("OpenAPI() differs from openapi.json")
	}
	got[0] = 'x'
	if !bytes.Equal(api.OpenAPI(), want) {
		t.Fatal("changing what OpenAPI returned changed the document")
	}
}

// TestValidatorCatchesDrift: the checks that keep the document true can
// fail. A broken document is refused by the OpenAPI schema; a lint rule
// catches a request body that takes unknown fields; an answer with a field
// the document does not name, without one it requires, or with a status it
// does not list, is refused.
func TestValidatorCatchesDrift(t *testing.T) {
	var raw map[string]any
	if err := json.Unmarshal(api.OpenAPI(), &raw); err != nil {
		t.Fatal(err)
	}
	mutated := func(change func(doc map[string]any)) []byte {
		var doc map[string]any
		_ = json.Unmarshal(api.OpenAPI(), &doc)
		change(doc)
		b, _ := json.Marshal(doc)
		return b
	}
	schemas := func(doc map[string]any) map[string]any {
		return doc["components"].(map[string]any)["schemas"].(map[string]any)
	}

	if err := openapitest.ValidateOpenAPI31(mutated(func(doc map[string]any) { doc["openapi"] = "3.0.3" })); err == nil {
		t.Error("a document of OpenAPI 3.0.3 passes as 3.1")
	}
	if err := openapitest.ValidateOpenAPI31(mutated(func(doc map[string]any) {
		schemas(doc)["Status"].(map[string]any)["type"] = "text"
	})); err == nil {
		t.Error("a schema of type \"text\" passes")
	}
	if _, err := openapitest.Parse([]byte(`{"openapi":"3.1.0","openapi":"3.1.1"}`)); err == nil {
		t.Error("a key twice passes")
	}

	open, err := openapitest.Parse(mutated(func(doc map[string]any) {
		delete(schemas(doc)["SendRequest"].(map[string]any), "additionalProperties")
	}))
	if err != nil {
		t.Fatal(err)
	}
	if problems := open.Lint(); len(problems) != 1 || !strings.Contains(problems[0], "SendRequest") {
		t.Errorf("a send request that takes unknown fields: lint says %q", problems)
	}

	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	header := http.Header{"Content-Type": {"application/json"}, "Www-Authenticate": {"Bearer"}}
	stats := `{"by_status":{"QUEUED":0,"SENT_TO_NS":0,"DELIVERED_TO_NS":0,"SENT_TO_DEVICE":0,"TO_RETRY":0,` +
		`"DELIVERY_SUCCESSFUL":0,"DELIVERY_FAILED":0,"CANCELLED":0},"by_route":{},"oldest_queued_seconds":0,` +
		`"success_rate":1,"latency_p50_ms":0,"latency_p99_ms":0,"dead_letters":0,"waiting":0,` +
		`"enqueued":0,"succeeded":0,"retried":0,"dead_lettered":0,"deduplicated":0,"coalesced":0%s}`
	for _, c := range []struct {
		name   string
		path   string
		status int
		body   string
		ok     bool
	}{
		{"as documented", "/v1/stats", 200, strings.Replace(stats, "%s", "", 1), true},
		{"an undocumented field", "/v1/stats", 200, strings.Replace(stats, "%s", `,"surprise":1`, 1), false},
		{"a required field missing", "/v1/stats", 200, strings.Replace(strings.Replace(stats, "%s", "", 1), `"waiting":0,`, "", 1), false},
		{"a value out of range", "/v1/stats", 200, strings.Replace(strings.Replace(stats, "%s", "", 1), `"success_rate":1`, `"success_rate":2`, 1), false},
		{"health as documented", "/v1/health", 200, strings.Replace(stats, "%s", `,"status":"healthy","message":"Healthy","warnings":[]`, 1), true},
		{"health with an undocumented field", "/v1/health", 200, strings.Replace(stats, "%s", `,"status":"healthy","message":"Healthy","warnings":[],"x":1`, 1), false},
		{"health without its status", "/v1/health", 200, strings.Replace(stats, "%s", `,"message":"Healthy","warnings":[]`, 1), false},
		{"an undocumented status", "/v1/stats", 418, `{"error":{"code":"internal","message":"teapot"}}`, false},
		{"an error as documented", "/v1/stats", 401, `{"error":{"code":"unauthorized","message":"x"}}`, true},
		{"a code the status does not answer", "/v1/stats", 401, `{"error":{"code":"not_found","message":"x"}}`, false},
		{"an error with an undocumented field", "/v1/stats", 401, `{"error":{"code":"unauthorized","message":"x","hint":"y"}}`, false},
	} {
		_, err := doc.Check(openapitest.Exchange{Method: "GET", URL: &url.URL{Path: c.path}, Header: http.Header{},
			Status: c.status, AnswerHeader: header, Answer: []byte(c.body)})
		if (err == nil) != c.ok {
			t.Errorf("%s: error %v", c.name, err)
		}
	}
}

// TestAdminPageRoutes: the admin page's login and logout, which the
// document describes for the session cookie's sake, are served by package
// ui with the answers documented.
func TestAdminPageRoutes(t *testing.T) {
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	admin := ui.New(ui.Config{Keys: map[string]string{"key-a": "tenant-a"}, Logger: slog.New(slog.DiscardHandler)})
	var served []string
	var problems []string
	checked := doc.Handler(admin, func(op *openapitest.Operation, status int, err error) {
		if op != nil && op.Handler == "ui" && status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			served = append(served, op.Pattern())
		}
		if err != nil {
			problems = append(problems, err.Error())
		}
	})
	post := func(path, form string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://example.com")
		for _, c := range cookies {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		checked.ServeHTTP(rec, req)
		return rec
	}
	if rec := post("/ui/login", "key=wrong"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a wrong key: %d", rec.Code)
	}
	rec := post("/ui/login", "key=key-a")
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("login: %d", rec.Code)
	}
	var session *http.Cookie
	for _, c := range rec.Result().Cookies() {
		if c.Name == ui.CookieName {
			session = c
		}
	}
	if session == nil {
		t.Fatal("login set no session cookie")
	}
	if rec := post("/ui/logout", "csrf=wrong", session); rec.Code != http.StatusForbidden {
		t.Errorf("logout without the token: %d", rec.Code)
	}
	if rec := post("/ui/logout", "", session); rec.Code != http.StatusForbidden {
		t.Errorf("logout without a form: %d", rec.Code)
	}
	if rec := post("/ui/logout", ""); rec.Code != http.StatusSeeOther {
		t.Errorf("logout without a session: %d", rec.Code)
	}
	for _, p := range problems {
		t.Error(p)
	}
	var patterns []string
	for _, p := range served {
		if !slices.Contains(patterns, p) {
			patterns = append(patterns, p)
		}
	}
	for _, p := range doc.RouteProblems("ui", patterns) {
		t.Error(p)
	}
}
