package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/openapitest"
	"github.com/heraldmq/herald/metrics"
)

// specDoc returns api/openapi.json, parsed for checking.
func specDoc(t testing.TB) *openapitest.Doc {
	t.Helper()
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatalf("api/openapi.json: %v", err)
	}
	return doc
}

// checkAnswer fails the test unless req, with its body, and its answer rec
// are as the OpenAPI document says.
func checkAnswer(t testing.TB, req *http.Request, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	_, err := specDoc(t).Check(openapitest.Exchange{Method: req.Method, URL: req.URL, Header: req.Header, Body: body,
		Status: rec.Code, AnswerHeader: rec.Header(), Answer: rec.Body.Bytes()})
	if err != nil {
		t.Errorf("the answer is not as api/openapi.json says: %v", err)
	}
}

// servedPatterns returns the patterns ("METHOD /path") that New registers.
func servedPatterns(rs []route) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.method + " " + r.path
	}
	return out
}

// TestOpenAPIDocumentsEveryRoute: every route of the API is documented in
// api/openapi.json, and every operation documented as served by httpapi
// is a route. A route added without its documentation fails here, as does
// an operation documented and not served.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc := specDoc(t)
	for _, p := range doc.RouteProblems("httpapi", servedPatterns(routes)) {
		t.Error(p)
	}

	// The check fails when it should: a handler added without documentation...
	added := append(slices.Clone(routes), route{"POST", "/v1/messages/{id}/snooze", (*api).cancel})
	if got := doc.RouteProblems("httpapi", servedPatterns(added)); len(got) != 1 || !strings.Contains(got[0], "POST /v1/messages/{id}/snooze is served") {
		t.Errorf("a route without documentation: problems %q", got)
	}
	// ... and an operation documented without a handler.
	var raw map[string]any
	if err := json.Unmarshal(mustRead(t, "../api/openapi.json"), &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw["paths"].(map[string]any)["/v1/messages/{id}"].(map[string]any), "get")
	raw["paths"].(map[string]any)["/v1/messages/{id}/snooze"] = map[string]any{
		"post": map[string]any{"operationId": "snooze", "responses": map[string]any{"200": map[string]any{"description": "x"}}},
	}
	b, _ := json.Marshal(raw)
	mutated, err := openapitest.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	got := mutated.RouteProblems("httpapi", servedPatterns(routes))
	want := []string{
		"GET /v1/messages/{id} is served by httpapi but not documented in api/openapi.json",
		"POST /v1/messages/{id}/snooze is documented in api/openapi.json but httpapi does not serve it",
	}
	if !slices.Equal(got, want) {
		t.Errorf("a document that drifted: problems\n%q\nwant\n%q", got, want)
	}
}

// patternTracer notes the pattern of the route that served each request.
type patternTracer struct{ last string }

func (p *patternTracer) StartRequest(r *http.Request) (context.Context, func(string, int)) {
	p.last = "(not answered)"
	return r.Context(), func(pattern string, _ int) { p.last = pattern }
}

// TestOpenAPIRoutesAreServed: every operation documented as served by
// httpapi reaches the route of its own pattern in the handler New returns
// (the real mux, not the table), with GET /metrics served when
// Config.Metrics is set and 404 when it is not.
func TestOpenAPIRoutesAreServed(t *testing.T) {
	pt := &patternTracer{}
	f := newFixture(t, func(c *Config) { c.Tracer, c.Metrics = pt, metrics.New().Handler() })
	placeholder := regexp.MustCompile(`\{[^}]*\}`)
	n := 0
	for _, op := range specDoc(t).Operations() {
		if op.Handler != "httpapi" {
			continue
		}
		n++
		path := placeholder.ReplaceAllString(op.Path, "x1")
		f.do(op.Method, path, keyA, "")
		if pt.last != op.Pattern() {
			t.Errorf("%s %s was served by %q, want %q", op.Method, path, pt.last, op.Pattern())
		}
	}
	if n != len(routes) {
		t.Errorf("%d operations documented for httpapi, %d routes", n, len(routes))
	}

	bare := newFixture(t)
	wantError(t, bare.do("GET", metricsPath, "", ""), http.StatusNotFound, codeNotFound)
}

// TestRoutesOnlyFromTheTable: the package registers handlers in one place,
// New's loop over routes, so the table is the whole API (and
// TestOpenAPIDocumentsEveryRoute sees every route); and its error codes are
// those the document lists.
func TestRoutesOnlyFromTheTable(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var registrations []string
	codes := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Handle" || sel.Sel.Name == "HandleFunc") {
					registrations = append(registrations, fset.Position(n.Pos()).String())
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if strings.HasPrefix(id.Name, "code") && i < len(n.Values) {
						if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							code, _ := strconv.Unquote(lit.Value)
							codes[code] = true
						}
					}
				}
			}
			return true
		})
	}
	if len(registrations) != 1 || !strings.HasPrefix(registrations[0], "httpapi.go:") {
		t.Errorf("handlers registered at %v; want only New's loop over routes in httpapi.go", registrations)
	}

	enum, ok := specDoc(t).Lookup("/components/schemas/ErrorCode/enum")
	if !ok {
		t.Fatal("the document has no ErrorCode enum")
	}
	documented := map[string]bool{}
	for _, c := range enum.([]any) {
		documented[c.(string)] = true
	}
	for c := range codes {
		if !documented[c] {
			t.Errorf("error code %q is not in the document's ErrorCode", c)
		}
	}
	for c := range documented {
		if !codes[c] {
			t.Errorf("the document's ErrorCode lists %q, which the API never answers", c)
		}
	}
}

// TestOpenAPIAuthentication: the document says which operations need a
// key as needsKey does; those answer 401, and those that change anything
// take the session cookie only with its CSRF token, and answer 403.
func TestOpenAPIAuthentication(t *testing.T) {
	for _, op := range specDoc(t).Operations() {
		if op.Handler != "httpapi" {
			continue
		}
		sec, statuses := op.Security(), op.Statuses()
		bearer := slices.ContainsFunc(sec, func(alt []string) bool { return slices.Equal(alt, []string{"bearerAuth"}) })
		if needsKey(op.Path) != bearer {
			t.Errorf("%s: needs a key: %v; the document's security: %v", op.Pattern(), needsKey(op.Path), sec)
		}
		if !needsKey(op.Path) {
			continue
		}
		if !slices.Contains(statuses, "401") {
			t.Errorf("%s lists no 401", op.Pattern())
		}
		session := []string{"sessionCookie"}
		if op.Method != "GET" {
			session = []string{"csrfToken", "sessionCookie"}
			if !slices.Contains(statuses, "403") {
				t.Errorf("%s changes something and lists no 403", op.Pattern())
			}
		}
		if !slices.ContainsFunc(sec, func(alt []string) bool { return slices.Equal(alt, session) }) {
			t.Errorf("%s: security %v, want the alternative %v", op.Pattern(), sec, session)
		}
	}
	doc := specDoc(t)
	send, _ := doc.Match("POST", "/v1/messages")
	if !send.HeaderParam("traceparent") {
		t.Error("POST /v1/messages does not document the traceparent header")
	}
}

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOpenAPIServedWithoutKey: GET /v1/openapi.json answers the committed
// document, as JSON, to anyone.
func TestOpenAPIServedWithoutKey(t *testing.T) {
	f := newFixture(t)
	rec := f.do("GET", openAPIPath, "", "")
	wantStatus(t, rec, http.StatusOK)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if !bytes.Equal(rec.Body.Bytes(), mustRead(t, "../api/openapi.json")) {
		t.Error("the document served differs from api/openapi.json")
	}
	wantStatus(t, f.do("GET", openAPIPath, "not-a-key", ""), http.StatusOK)
	wantError(t, f.do("POST", openAPIPath, "", ""), http.StatusMethodNotAllowed, codeMethodNotAllowed)
}

// TestOpenAPIEndToEnd goes through the whole API as a user would, every
// answer checked against the document by the fixture (its schema for the
// path, method and status, strictly: no field it does not name), and then
// checks that every documented success answer of every operation was
// seen.
func TestOpenAPIEndToEnd(t *testing.T) {
	f := newFixture(t, withAdmin, func(c *Config) { c.Metrics = metrics.New().Handler() })
	call := func(method, path, key, body string, status int, header ...string) *httptest.ResponseRecorder {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req := httptest.NewRequest(method, path, r)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		wantStatus(t, rec, status)
		return rec
	}
	id := func(rec *httptest.ResponseRecorder) string { return decode[herald.MessageView](t, rec).ID }
	settle := func() {
		f.clock.Advance(1500 * time.Millisecond)
		f.run()
	}

	// Probes, metrics and the document, without a key.
	call("GET", "/healthz", "", "", 200)
	call("GET", "/readyz", "", "", 200)
	call("GET", "/metrics", "", "", 200)
	call("GET", "/v1/openapi.json", "", "", 200)

	// Messages.
	first := id(call("POST", "/v1/messages", keyA, `{"route":"hooks","text":"hi","correlation_id":"c1","idempotency_key":"k1"}`, 202,
		"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
	call("POST", "/v1/messages", keyA, `{"route":"hooks","text":"hi","correlation_id":"c1","idempotency_key":"k1"}`, 200)
	device := id(call("POST", "/v1/messages", keyA, `{"route":"devices","target":"0102030405060708","payload":"AQID",`+
		`"params":{"f_port":"2"},"priority":-5,"lane":"gw-1","coalesce_key":"valve","expires_at":"2030-01-01T00:00:00Z"}`, 202))
	call("GET", "/v1/messages/"+first, keyA, "", 200)
	call("GET", "/v1/messages?status=QUEUED&route=hooks&correlation_id=c1&target=&limit=10", keyA, "", 200)
	call("GET", "/v1/messages/"+first+"/explain", keyA, "", 200)
	call("POST", "/v1/messages/"+first+"/cancel", keyA, "", 200)
	call("POST", "/v1/messages/"+first+"/cancel", keyA, "", 409)
	call("POST", "/v1/messages/"+first+"/replay", keyA, "", 200)
	call("POST", "/v1/messages/"+first+"/replay", keyA, "", 409)
	later := id(call("POST", "/v1/messages", keyA, `{"route":"hooks","text":"later","send_at":"2025-06-01T00:00:00Z"}`, 202))
	call("GET", "/v1/messages/"+later+"/explain", keyA, "", 200)
	call("POST", "/v1/messages/"+later+"/send-now", keyA, "", 200)
	call("POST", "/v1/messages/"+later+"/send-now", keyA, "", 409)
	call("POST", "/v1/messages", keyA, `{"route":"hooks","text":"later","send_at":"2025-06-01T00:00:00Z"}`, 202)
	call("POST", "/v1/messages/cancel", keyA, `{"route":"hooks","status":"QUEUED","before":"2040-01-01T00:00:00Z","lane":"hooks","target":""}`, 200)
	call("POST", "/v1/messages/cancel", keyA, `{"lane":"hooks"}`, 400)
	failed := id(call("POST", "/v1/messages", keyA, `{"route":"hooks","target":"fail","text":"no"}`, 202))
	call("POST", "/v1/messages", keyA, `{"route":"gw","target":"t1","text":"held"}`, 202)
	settle()
	call("GET", "/v1/messages/"+device, keyA, "", 200)
	call("GET", "/v1/messages/"+failed+"/explain", keyA, "", 200)
	page := decode[listBody](t, call("GET", "/v1/messages?limit=1", keyA, "", 200))
	call("GET", "/v1/messages?limit=1&cursor="+page.NextCursor, keyA, "", 200)

	// Dead letters.
	call("GET", "/v1/dead-letters?route=hooks&reason=refused&limit=5", keyA, "", 200)
	call("POST", "/v1/dead-letters/replay", keyA, `{"route":"hooks","target":"fail","reason":"refused","since":"2020-01-01T00:00:00Z","until":"2030-01-01T00:00:00Z","rate_per_s":5}`, 200)
	call("POST", "/v1/dead-letters/replay", keyA, "", 200)
	settle()
	call("DELETE", "/v1/dead-letters?route=hooks&before=2030-01-01T00:00:00Z", keyA, "", 200)

	// Dead outcome events.
	dead := f.deadEvent("legacy")
	call("GET", "/v1/outcome-events?status=dead&since=2020-01-01T00:00:00Z&until=2040-01-01T00:00:00Z&limit=5", keyA, "", 200)
	call("POST", "/v1/outcome-events/replay", keyA, `{"ids":["`+dead+`"]}`, 200)
	call("POST", "/v1/outcome-events/replay", keyA, `{"since":"2020-01-01T00:00:00Z","until":"2040-01-01T00:00:00Z"}`, 200)

	// Observability.
	call("GET", "/v1/stats", keyA, "", 200)
	call("GET", "/v1/health", keyA, "", 200)
	call("GET", "/v1/lanes?route=gw&limit=5", keyA, "", 200)
	call("GET", "/v1/activity", keyA, "", 200)
	call("GET", "/v1/routes", keyA, "", 200)

	// Operations.
	call("POST", "/v1/lanes/pause", keyAdmin, `{"route":"gw","lane":"gateway-9","until":"2040-01-01T00:00:00Z","reason":"maintenance"}`, 200)
	call("POST", "/v1/lanes/pause", keyAdmin, `{"lane":"gateway-9"}`, 400)
	call("GET", "/v1/lanes?route=gw", keyA, "", 200)
	call("POST", "/v1/lanes/resume", keyAdmin, `{"route":"gw","lane":"gateway-9"}`, 200)
	call("POST", "/v1/dead-letters/fail-orphans", keyA, `{"route":"gone"}`, 200)
	call("POST", "/v1/dead-letters/fail-orphans", keyA, `{"route":"hooks"}`, 409)

	// Rooms, subscriptions, events, pulls.
	call("POST", "/v1/rooms", keyA, `{"name":"orders","expiration":"1h","delivery":{"delay":"1s","multiplier":2,"attempts":3}}`, 201)
	call("POST", "/v1/rooms", keyA, `{"name":"orders"}`, 409)
	call("GET", "/v1/rooms", keyA, "", 200)
	call("GET", "/v1/rooms/orders", keyA, "", 200)
	pull := decode[subscriptionView](t, call("POST", "/v1/rooms/orders/subscriptions", keyA,
		`{"type":"pull","event_types":[{"type":"order.created","version":1}],"delivery":{"attempts":2}}`, 201)).ID
	push := decode[subscriptionView](t, call("POST", "/v1/rooms/orders/subscriptions", keyA,
		`{"type":"push","url":"https://example.com/hook","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","event_types":[{"type":"order.created"}]}`, 201)).ID
	call("GET", "/v1/rooms/orders/subscriptions", keyA, "", 200)
	call("GET", "/v1/subscriptions/"+pull, keyA, "", 200)
	ev := decode[herald.RoomEventView](t, call("POST", "/v1/rooms/orders/events", keyA,
		`{"type":"order.created","version":1,"data":{"order":7},"correlation_id":"o-7"}`, 202,
		"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
	call("GET", "/v1/rooms/orders/events/"+ev.ID, keyA, "", 200)
	leased := decode[map[string][]herald.DeliveryView](t, call("POST", "/v1/subscriptions/"+pull+"/pull", keyA, `{"max":5,"lease":"30s"}`, 200))["deliveries"]
	if len(leased) != 1 {
		t.Fatalf("pulled %d deliveries, want 1", len(leased))
	}
	call("POST", "/v1/subscriptions/"+pull+"/ack", keyA, `{"lease_ids":["`+leased[0].LeaseID+`","`+leased[0].ID+`.0123456789abcdef"]}`, 200)
	call("POST", "/v1/subscriptions/"+pull+"/ack", keyA, `{"ids":["`+leased[0].ID+`"]}`, 400)
	call("GET", "/v1/messages/"+leased[0].ID, keyA, "", 200)
	call("POST", "/v1/rooms/orders/events", keyA, `{"type":"order.created","version":"1"}`, 202)
	leased = decode[map[string][]herald.DeliveryView](t, call("POST", "/v1/subscriptions/"+pull+"/pull", keyA, "", 200))["deliveries"]
	call("POST", "/v1/subscriptions/"+pull+"/nack", keyA, `{"lease_ids":["`+leased[0].LeaseID+`"]}`, 200)
	call("POST", "/v1/subscriptions/"+push+"/pull", keyA, "", 409)
	settle()
	call("DELETE", "/v1/subscriptions/"+push, keyA, "", 204)
	call("DELETE", "/v1/rooms/orders", keyA, "", 204)

	// The ingress.
	call("POST", "/v1/ingress/lora?event=join", "", `{}`, 401)
	call("POST", "/v1/ingress/lora?event=join", ingressSecret, `{}`, 204)
	call("POST", "/v1/ingress/hooks?event=join", ingressSecret, `{}`, 404)
	call("POST", "/v1/ingress/lora", ingressSecret, `{}`, 400)

	// Errors.
	call("POST", "/v1/messages", keyA, `{"route":"hooks","text":"hi","coalesce-key":"k"}`, 400)
	call("POST", "/v1/messages", keyA, `{"route":"nowhere","text":"hi"}`, 400)
	call("GET", "/v1/messages?cursor=page-2", keyA, "", 400)
	call("GET", "/v1/messages", "", "", 401)
	call("GET", "/v1/messages/"+first, keyB, "", 404)
	call("GET", "/v1/no-such-thing", keyA, "", 404)
	call("DELETE", "/v1/messages", keyA, "", 405)
	f.store.err = herald.ErrStoreUnavailable
	call("GET", "/v1/messages/"+first, keyA, "", 503)
	call("GET", "/readyz", "", "", 503)
	f.store.err = nil

	// Every documented success of every operation of httpapi was answered
	// and checked.
	for _, op := range specDoc(t).Operations() {
		if op.Handler != "httpapi" {
			continue
		}
		for _, s := range op.Statuses() {
			if strings.HasPrefix(s, "2") && !f.answered[op.Pattern()+" "+s] {
				t.Errorf("%s %s: documented, never answered by this test", op.Pattern(), s)
			}
		}
	}
}
