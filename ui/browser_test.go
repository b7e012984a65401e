package ui_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/webhook"
	"github.com/heraldmq/herald/httpapi"
	"github.com/heraldmq/herald/store/sqlite"
	"github.com/heraldmq/herald/ui"
)

// The keys and tenants of the browser tests; keyReader is acme's
// read-only key, keyOps its admin key.
const (
	keyOps    = "acme-ops-0123456789"
	keyAcme   = "acme-key-0123456789"
	keyOther  = "globex-key-0123456789"
	keyReader = "acme-reader-0123456789"
	acme      = "acme"
	globex    = "globex"
)

// patience bounds every wait for the page or the engine.
const patience = 15 * time.Second

// chromium returns the path of the Chromium binary, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HERALD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (Debian: apt-get install chromium; .ci/run installs it): the admin page's browser tests need it")
	return ""
}

// sink is the webhook endpoint of routes "hooks" and "reports": it
// refuses every message of hooks with 400 while failing, and takes the
// others.
type sink struct{ failing atomic.Bool }

const sinkError = "meter rejected the command"

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hooks" && s.failing.Load() {
		http.Error(w, sinkError, http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// exchange is one request the server answered.
type exchange struct {
	method, path, origin, fetchSite string
	cookie                          bool
	status                          int
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// heraldServer is a running herald: an engine on SQLite, the API and the
// admin page on one loopback server, the page's sessions in the store, as
// herald serve mounts them.
type heraldServer struct {
	t      *testing.T
	engine *herald.Engine
	store  herald.Store
	sink   *sink
	url    string

	mu   sync.Mutex
	seen []exchange
}

func startHerald(t *testing.T) *heraldServer {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &heraldServer{t: t, sink: &sink{}, store: st}
	h.sink.failing.Store(true)
	sinkSrv := httptest.NewServer(h.sink)
	t.Cleanup(sinkSrv.Close)
	policy, err := herald.ProfilePolicy(herald.ProfileChannel)
	if err != nil {
		t.Fatal(err)
	}
	var routes []herald.Route
	for _, name := range []string{"hooks", "reports"} {
		c, err := webhook.New(webhook.Config{URL: sinkSrv.URL + "/" + name})
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, herald.Route{Name: name, Carrier: c, Policy: policy})
	}
	routes = append(routes, roomsRoute(t, st))
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h.engine, err = herald.New(herald.Config{Store: st, Routes: routes, Logger: logger, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.engine.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := h.engine.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	keys := map[string]string{keyAcme: acme, keyOther: globex, keyReader: acme, keyOps: acme}
	roles := map[string]httpapi.Role{keyReader: httpapi.RoleRead, keyOps: httpapi.RoleAdmin}
	admin := ui.New(ui.Config{Keys: keys, Roles: roles, Logger: logger, Sessions: st})
	mux := http.NewServeMux()
	mux.Handle(ui.Path, admin)
	mux.Handle(ui.Path+"/", admin)
	mux.Handle("/", httpapi.New(httpapi.Config{Engine: h.engine, Keys: keys, Roles: roles, Logger: logger, Sessions: admin}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		mux.ServeHTTP(rec, r)
		_, err := r.Cookie(ui.CookieName)
		h.mu.Lock()
		h.seen = append(h.seen, exchange{method: r.Method, path: r.URL.Path, origin: r.Header.Get("Origin"),
			fetchSite: r.Header.Get("Sec-Fetch-Site"), cookie: err == nil, status: rec.status})
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// send sends a message of tenant to route and target, and returns its id.
func (h *heraldServer) send(tenant, route, target, corr string) string {
	h.t.Helper()
	m, _, err := h.engine.Send(context.Background(), tenant, herald.SendRequest{Route: route, Target: target, Text: "token 1234-5678", CorrelationID: corr})
	if err != nil {
		h.t.Fatal(err)
	}
	return m.ID
}

// waitStatus waits until tenant's message id has status.
func (h *heraldServer) waitStatus(tenant, id string, status herald.Status) *herald.Message {
	h.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		m, err := h.engine.Get(context.Background(), tenant, id)
		if err == nil && m.Status == status {
			return m
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("message %s is not %s after %v (%v, %v)", id, status, patience, m, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// api calls the JSON API with tenant's bearer key.
func (h *heraldServer) api(key, method, path string, out any) int {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			h.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// exchanges returns the requests answered so far for method and path.
func (h *heraldServer) exchanges(method, path string) []exchange {
	return h.exchangesSince(0, method, path)
}

// mark returns a mark for exchangesSince: the number of requests answered so far.
func (h *heraldServer) mark() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// exchangesSince returns the requests answered since mark for method and
// path; an empty method or path matches any.
func (h *heraldServer) exchangesSince(mark int, method, path string) []exchange {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []exchange
	for _, e := range h.seen[mark:] {
		if (method == "" || e.method == method) && (path == "" || e.path == path) {
			out = append(out, e)
		}
	}
	return out
}

// browser is a headless Chromium that reaches loopback addresses only.
type browser struct {
	ctx       context.Context
	artefacts string
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromium(t)
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
		// Every address but loopback goes to a proxy that is not there.
		chromedp.Flag("proxy-server", "http://127.0.0.1:9"),
		chromedp.Flag("disable-component-update", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	dir := os.Getenv("HERALD_UI_ARTEFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of the admin page go to %s", dir)
	return &browser{ctx: ctx, artefacts: dir}
}

// tab is a page in a browser context of its own: its own cookies.
type tab struct {
	t   *testing.T
	ctx context.Context
	b   *browser

	mu     sync.Mutex
	errors []string
}

func (b *browser) newTab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute) // a tab may wait for 20,000 logins under the race detector
	tb := &tab{t: t, ctx: ctx, b: b}
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
	})
	err := chromedp.Listen(ctx, func(ev any) {
		if ev, ok := ev.(*runtime.EventExceptionThrown); ok {
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			tb.mu.Lock()
			tb.errors = append(tb.errors, fmt.Sprintf("%s:%d: %s", d.URL, d.LineNumber+1, msg))
			tb.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, e := range tb.errors {
			t.Errorf("the page threw: %s", e)
		}
	})
	return tb
}

func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, steps...); err != nil {
		tb.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression into a T.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// until waits until the JavaScript expression is truthy; what says what
// the test waits for.
func (tb *tab) until(what, expr string) {
	tb.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		_, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](expr,
			chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		// A navigation under way ends the poll in the old document: poll the new one.
		if time.Now().Before(deadline) && tb.ctx.Err() == nil && navigated(err) {
			time.Sleep(25 * time.Millisecond)
			continue
		}
		tb.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// navigated reports whether err says the page went away under a command.
func navigated(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "navigated or closed") || strings.Contains(msg, "context was destroyed") ||
		strings.Contains(msg, "Cannot find context")
}

// screenshot writes the whole page as a PNG artefact.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(tb.b.artefacts, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", path)
}

// login logs in with key through the form and waits for the overview.
func (tb *tab) login(base, key string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(base+"/ui"), chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), key), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	tb.until("the overview after login", `location.pathname === "/ui" && !document.querySelector("#page-overview").hidden`)
}

// accessible fails the test for a field without a label, a control
// without a name, an image without a text, or a visible control that the
// keyboard cannot reach.
func (tb *tab) accessible() {
	tb.t.Helper()
	problems := eval[[]string](tb, `(() => {
		const out = [];
		const visible = e => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
		for (const e of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
			if (visible(e) && !e.labels.length && !e.getAttribute("aria-label")) out.push("field without a label: " + e.outerHTML.slice(0, 80));
		}
		for (const e of document.querySelectorAll("button, a[href]")) {
			if (visible(e) && !(e.textContent.trim() || e.getAttribute("aria-label"))) out.push("control without a name: " + e.outerHTML.slice(0, 80));
			if (visible(e) && e.tabIndex < 0) out.push("control out of the tab order: " + e.outerHTML.slice(0, 80));
		}
		for (const e of document.querySelectorAll("svg[role=img]")) {
			const by = e.getAttribute("aria-labelledby");
			if (!by || !document.getElementById(by)?.textContent.trim()) out.push("chart without a text");
		}
		if (!document.documentElement.lang) out.push("no lang on <html>");
		if (document.querySelectorAll("main h1:not([hidden])").length < 1) out.push("no h1");
		return out; })()`)
	for _, p := range problems {
		tb.t.Errorf("accessibility: %s", p)
	}
}

// goHash moves the page to another view, as a link of its own does.
func (tb *tab) goHash(hash string) {
	tb.t.Helper()
	eval[chromedp.Void](tb, `location.hash = `+js(hash))
}

// markPage marks the document, so that stillSamePage can tell it was not reloaded.
func (tb *tab) markPage() { eval[chromedp.Void](tb, `window.__heraldTestMark = "not reloaded"`) }

func (tb *tab) stillSamePage() {
	tb.t.Helper()
	if got := eval[string](tb, `window.__heraldTestMark || ""`); got != "not reloaded" {
		tb.t.Fatal("the page was reloaded")
	}
}

// js quotes s as a JavaScript string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// statusCounts reads the overview's counts by status.
func statusCounts(tb *tab) map[string]int {
	return eval[map[string]int](tb, `Object.fromEntries([...document.querySelectorAll("#status-counts td[data-count]")]
		.map(td => [td.dataset.count, Number(td.textContent.replace(/[^0-9]/g, ""))]))`)
}

// routeCounts reads the overview's counts by route and status.
func routeCounts(tb *tab) map[string]map[string]int {
	return eval[map[string]map[string]int](tb, `(() => { const out = {};
		for (const td of document.querySelectorAll("#route-counts td[data-route][data-status]")) {
			(out[td.dataset.route] ||= {})[td.dataset.status] = Number(td.textContent.replace(/[^0-9]/g, ""));
		}
		return out; })()`)
}

// stats is the part of GET /v1/stats the overview shows.
type stats struct {
	ByStatus map[string]int            `json:"by_status"`
	ByRoute  map[string]map[string]int `json:"by_route"`
}

// withZeros fills in the statuses a route's counts lack.
func withZeros(byRoute map[string]map[string]int) map[string]map[string]int {
	out := map[string]map[string]int{}
	for r, counts := range byRoute {
		out[r] = map[string]int{}
		for _, s := range herald.Statuses {
			out[r][string(s)] = counts[string(s)]
		}
	}
	return out
}

// overviewMatches waits until the overview shows the counts of /v1/stats
// for key, and returns them.
func (tb *tab) overviewMatches(h *heraldServer, key string) stats {
	tb.t.Helper()
	var want stats
	h.api(key, "GET", "/v1/stats", &want)
	wantJSON, _ := json.Marshal(want.ByStatus)
	tb.until("the overview's counts by status to be those of /v1/stats "+string(wantJSON),
		`(() => { const want = `+string(wantJSON)+`;
			const cells = document.querySelectorAll("#status-counts td[data-count]");
			return cells.length === Object.keys(want).length &&
				[...cells].every(td => Number(td.textContent.replace(/[^0-9]/g, "")) === want[td.dataset.count]); })()`)
	got := statusCounts(tb)
	for s, n := range want.ByStatus {
		if got[s] != n {
			tb.t.Errorf("overview: %s = %d, /v1/stats says %d", s, got[s], n)
		}
	}
	if gotRoutes, wantRoutes := routeCounts(tb), withZeros(want.ByRoute); fmt.Sprint(gotRoutes) != fmt.Sprint(wantRoutes) {
		tb.t.Errorf("overview by route = %v, /v1/stats says %v", gotRoutes, wantRoutes)
	}
	return want
}

// listedIDs reads the ids of a table's rows.
func listedIDs(tb *tab, table string) []string {
	return eval[[]string](tb, `[...document.querySelectorAll(`+js(table+" tbody tr[data-id]")+`)].map(tr => tr.dataset.id)`)
}

// TestAdminPageInBrowser drives the admin page in headless Chromium
// against a running herald whose route "hooks" fails: the walk of an
// operator through every page, another tenant's view, and cross-site
// requests. The subtests share the server and run in order.
func TestAdminPageInBrowser(t *testing.T) {
	h := startHerald(t)
	b := startBrowser(t)

	// acme: three messages that fail, two that succeed; globex: one of
	// each, one of them to a target acme uses too.
	acmeFailed := map[string]string{} // target → id
	for _, target := range []string{"meter-4711", "meter-4712", "meter-4713"} {
		acmeFailed[target] = h.send(acme, "hooks", target, "order-"+target)
	}
	acmeOK := []string{h.send(acme, "reports", "meter-4711", "order-r1"), h.send(acme, "reports", "meter-4714", "")}
	globexIDs := []string{h.send(globex, "reports", "meter-4711", "")}
	for _, id := range acmeFailed {
		h.waitStatus(acme, id, herald.StatusDeliveryFailed)
	}
	for _, id := range acmeOK {
		h.waitStatus(acme, id, herald.StatusDeliverySuccessful)
	}
	h.waitStatus(globex, globexIDs[0], herald.StatusDeliverySuccessful)

	t.Run("WrongKeyCannotLogIn", func(t *testing.T) {
		tb := b.newTab(t)
		tb.do(chromedp.Navigate(h.url+"/ui"), chromedp.WaitVisible(chromedp.ID("key")))
		tb.screenshot("login")
		tb.do(chromedp.SendKeys(chromedp.ID("key"), keyAcme+"-wrong"), chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.ID("login-error")))
		tb.screenshot("login-failed")
		if msg := eval[string](tb, `document.getElementById("login-error").textContent`); msg != "That key is not valid." {
			t.Errorf("login error = %q", msg)
		}
		if n := eval[int](tb, `document.cookie.length`); n != 0 {
			t.Errorf("a cookie the page can read after a failed login: %d bytes", n)
		}
		if got := eval[int](tb, `fetch("/v1/stats").then(r => r.status)`); got != http.StatusUnauthorized {
			t.Errorf("GET /v1/stats after a failed login = %d, want 401", got)
		}
		tb.do(chromedp.Navigate(h.url + "/ui"))
		tb.until("the login form again", `location.pathname === "/ui/login" && !!document.getElementById("key")`)
	})

	t.Run("Operator", func(t *testing.T) {
		tb := b.newTab(t)
		tb.login(h.url, keyAcme)
		if got := eval[string](tb, `document.getElementById("tenant").textContent`); got != acme {
			t.Errorf("the page says tenant %q, want %q", got, acme)
		}
		if n := eval[int](tb, `document.cookie.length`); n != 0 {
			t.Error("the page's script can read the session cookie; it must be HttpOnly")
		}

		// Overview: the counts are those of /v1/stats, and follow them live.
		before := tb.overviewMatches(h, keyAcme)
		tb.until("the health state", `["healthy","warning","critical"].includes(document.getElementById("health-status").textContent)`)
		tb.screenshot("overview")
		tb.accessible()
		tb.markPage()
		acmeOK = append(acmeOK, h.send(acme, "reports", "meter-4715", ""))
		h.waitStatus(acme, acmeOK[len(acmeOK)-1], herald.StatusDeliverySuccessful)
		after := tb.overviewMatches(h, keyAcme)
		if after.ByStatus["DELIVERY_SUCCESSFUL"] != before.ByStatus["DELIVERY_SUCCESSFUL"]+1 {
			t.Errorf("delivered %d then %d, want one more", before.ByStatus["DELIVERY_SUCCESSFUL"], after.ByStatus["DELIVERY_SUCCESSFUL"])
		}
		tb.stillSamePage()

		// Messages: search by target.
		tb.do(chromedp.Click(chromedp.CSS(`a[data-nav="messages"]`)), chromedp.WaitVisible(chromedp.ID("f-target")))
		tb.until("the unfiltered list", `document.querySelectorAll("#results tbody tr[data-id]").length === 6`)
		tb.do(chromedp.SendKeys(chromedp.ID("f-target"), "meter-4712"), chromedp.Click(chromedp.CSS(`#search button[type="submit"]`)))
		failed := acmeFailed["meter-4712"]
		tb.until("the search by target", `(() => { const rows = document.querySelectorAll("#results tbody tr[data-id]");
			return location.hash.includes("target=meter-4712") && rows.length === 1 && rows[0].dataset.id === `+js(failed)+`; })()`)
		tb.screenshot("messages")
		tb.do(chromedp.SetValue(chromedp.ID("f-target"), "meter-4711"), chromedp.Click(chromedp.CSS(`#search button[type="submit"]`)))
		tb.until("the search for meter-4711", `location.hash.includes("target=meter-4711")`)
		want := []string{acmeOK[0], acmeFailed["meter-4711"]} // newest first; not globex's
		tb.until("acme's two messages to meter-4711", `JSON.stringify([...document.querySelectorAll("#results tbody tr[data-id]")].map(r => r.dataset.id)) === `+js(mustJSON(want)))

		// The id field takes a unique prefix of an id, as the CLI does.
		acmeIDs := slices.Concat(acmeOK, slices.Collect(maps.Values(acmeFailed)))
		prefix := uniquePrefix(failed, acmeIDs)
		searchID := func(prefix string) {
			t.Helper()
			eval[bool](tb, `(() => { document.getElementById("f-target").value = ""; document.getElementById("f-id").value = `+js(prefix)+`; return true; })()`)
			tb.do(chromedp.Click(chromedp.CSS(`#search button[type="submit"]`)))
		}
		searchID(prefix)
		tb.until("the message of the id prefix "+prefix, `location.hash === "#/messages/`+failed+`"`)
		tb.do(chromedp.Click(chromedp.CSS(`a[data-nav="messages"]`)), chromedp.WaitVisible(chromedp.ID("f-id")))
		cases := []struct{ prefix, says string }{
			{failed[:7], "too short"},
			{"ffffffff-ff", "No message's id starts with ffffffff-ff"},
		}
		if shared := len(prefix) - 1; shared >= 8 { // another id of acme starts so too
			cases = append(cases, struct{ prefix, says string }{failed[:shared], "names several messages"})
		}
		for _, c := range cases {
			searchID(c.prefix)
			tb.until("the id prefix "+c.prefix+" refused", `document.getElementById("flash").textContent.includes(`+js(c.says)+`) && location.hash.startsWith("#/messages")
				&& !location.hash.startsWith("#/messages/")`)
		}
		searchID("")

		// A failed message: its timeline, its explanation, its buttons.
		tb.do(chromedp.SetValue(chromedp.ID("f-target"), "meter-4712"), chromedp.Click(chromedp.CSS(`#search button[type="submit"]`)))
		tb.until("the search for meter-4712", `document.querySelector("#results tbody tr[data-id]")?.dataset.id === `+js(failed))
		tb.do(chromedp.Click(chromedp.CSS(`#results a[href="#/messages/` + failed + `"]`)))
		tb.until("the failed message's page", `document.getElementById("msg-status").dataset.status === "DELIVERY_FAILED" &&
			document.querySelectorAll("#timeline li").length === 3`)
		m := h.waitStatus(acme, failed, herald.StatusDeliveryFailed)
		type step struct {
			From, To, Text, At string
		}
		steps := eval[[]step](tb, `[...document.querySelectorAll("#timeline li")].map(li => ({
			From: li.dataset.from, To: li.dataset.to, Text: li.textContent, At: li.querySelector("time").getAttribute("datetime") }))`)
		if len(steps) != len(m.Timeline) {
			t.Fatalf("the page shows %d steps, the message has %d", len(steps), len(m.Timeline))
		}
		for i, e := range m.Timeline {
			s := steps[i]
			if s.From != string(e.From) || s.To != string(e.To) || !strings.Contains(s.Text, e.Reason) {
				t.Errorf("step %d = %+v, want %s → %s with reason %q", i, s, e.From, e.To, e.Reason)
			}
			if at, err := time.Parse(time.RFC3339Nano, s.At); err != nil || !at.Equal(e.At) {
				t.Errorf("step %d at %q, want %v", i, s.At, e.At)
			}
			if i > 0 && !strings.Contains(s.Text, "after the step before") {
				t.Errorf("step %d shows no duration since the step before: %q", i, s.Text)
			}
		}
		if last := steps[len(steps)-1]; last.To != "DELIVERY_FAILED" || !strings.Contains(last.Text, sinkError) || !strings.Contains(last.Text, "Carrier answered 400") {
			t.Errorf("the last step %+v does not show the sink's answer %q", last, sinkError)
		}
		if x := eval[string](tb, `document.getElementById("msg-explain-detail").textContent`); !strings.Contains(strings.ToLower(x), "permanent error") || !strings.Contains(x, sinkError) {
			t.Errorf("explain = %q", x)
		}
		if hidden := eval[[]bool](tb, `[document.getElementById("msg-replay").hidden, document.getElementById("msg-cancel").hidden]`); hidden[0] || !hidden[1] {
			t.Errorf("replay hidden %v, cancel hidden %v; want replay shown and cancel hidden", hidden[0], hidden[1])
		}
		tb.screenshot("message-failed")
		tb.accessible()

		// Replay it: the sink takes it now, and the page shows it delivered.
		h.sink.failing.Store(false)
		tb.markPage()
		tb.do(chromedp.Click(chromedp.ID("msg-replay")))
		tb.until("the replayed message delivered", `document.getElementById("msg-status").dataset.status === "DELIVERY_SUCCESSFUL"`)
		tb.stillSamePage()
		h.waitStatus(acme, failed, herald.StatusDeliverySuccessful)
		tb.until("the replay in the timeline", `[...document.querySelectorAll("#timeline li")].some(li => li.textContent.includes("replayed by user"))`)
		if hidden := eval[[]bool](tb, `[document.getElementById("msg-replay").hidden, document.getElementById("msg-cancel").hidden]`); !hidden[0] || !hidden[1] {
			t.Errorf("a delivered message offers replay (%v) or cancel (%v)", !hidden[0], !hidden[1])
		}
		tb.screenshot("message-replayed")

		// Dead letters, reached from the keyboard: the other two, grouped by their error.
		tb.do(chromedp.SendKeys(chromedp.CSS(`a[data-nav="dead-letters"]`), kb.Enter))
		dead := []string{acmeFailed["meter-4713"], acmeFailed["meter-4711"]}
		slices.Sort(dead)
		slices.Reverse(dead) // newest first
		tb.until("the two dead letters", `JSON.stringify([...document.querySelectorAll("#dl-list tbody tr[data-id]")].map(r => r.dataset.id)) === `+js(mustJSON(dead)))
		groups := eval[[][]string](tb, `[...document.querySelectorAll("#dl-groups tbody tr")].map(tr => [...tr.querySelectorAll("td")].slice(0, 2).map(td => td.textContent))`)
		if len(groups) != 1 || !strings.Contains(groups[0][0], sinkError) || groups[0][1] != "2" {
			t.Errorf("groups = %q, want one of 2 with %q", groups, sinkError)
		}
		tb.screenshot("dead-letters")
		tb.accessible()

		// Replay the selected one.
		tb.do(chromedp.SetValue(chromedp.ID("dl-rate"), "0"),
			chromedp.Click(chromedp.CSS(`#dl-list input[data-id="`+acmeFailed["meter-4713"]+`"]`)),
			chromedp.Click(chromedp.ID("dl-replay-selected")))
		tb.until("one dead letter left", `JSON.stringify([...document.querySelectorAll("#dl-list tbody tr[data-id]")].map(r => r.dataset.id)) === `+js(mustJSON([]string{acmeFailed["meter-4711"]})))
		h.waitStatus(acme, acmeFailed["meter-4713"], herald.StatusDeliverySuccessful)

		// Purge: nothing happens until it is confirmed.
		tb.do(chromedp.Click(chromedp.ID("dl-purge")))
		tb.until("the confirmation", `document.getElementById("confirm").open`)
		tb.screenshot("dead-letters-purge")
		tb.do(chromedp.Click(chromedp.ID("confirm-no")))
		tb.until("the confirmation closed", `!document.getElementById("confirm").open`)
		time.Sleep(200 * time.Millisecond)
		if _, err := h.engine.Get(context.Background(), acme, acmeFailed["meter-4711"]); err != nil {
			t.Fatalf("the purge went ahead without its confirmation: %v", err)
		}
		tb.do(chromedp.Click(chromedp.ID("dl-purge")))
		tb.until("the confirmation", `document.getElementById("confirm").open`)
		tb.do(chromedp.Click(chromedp.ID("confirm-yes")))
		tb.until("no dead letter left", `document.querySelectorAll("#dl-list tbody tr[data-id]").length === 0 &&
			document.getElementById("flash").textContent.includes("Purged 1 ")`)
		if _, err := h.engine.Get(context.Background(), acme, acmeFailed["meter-4711"]); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("the purged dead letter is still there: %v", err)
		}

		// Charts: the hour's numbers are the engine's, of the tenant's messages.
		tb.do(chromedp.Click(chromedp.CSS(`a[data-nav="charts"]`)))
		tb.until("the charts", `!!document.getElementById("flow-total") && !!document.querySelector("#chart-latency path[data-series=p50]")`)
		var sent, succeeded, failedN, retried int64
		for _, a := range h.engine.Activity(acme) {
			sent, succeeded, failedN, retried = sent+a.Sent, succeeded+a.Succeeded, failedN+a.Failed, retried+a.Retried
		}
		shown := eval[map[string]string](tb, `({...document.getElementById("flow-total").dataset})`)
		if fmt.Sprint(shown) != fmt.Sprint(map[string]string{"sent": fmt.Sprint(sent), "succeeded": fmt.Sprint(succeeded), "failed": fmt.Sprint(failedN), "retried": fmt.Sprint(retried)}) {
			t.Errorf("charts' totals = %v, the engine's = sent %d succeeded %d failed %d retried %d", shown, sent, succeeded, failedN, retried)
		}
		if d := eval[string](tb, `document.querySelector("#chart-flow path[data-series=sent]").getAttribute("d")`); !strings.HasPrefix(d, "M") || !strings.Contains(d, "L") {
			t.Errorf("the sends' line is %q", d)
		}
		tb.screenshot("charts")
		tb.accessible()

		// Logout ends the session, for the API too.
		tb.do(chromedp.Click(chromedp.CSS(`form.logout button`)))
		tb.until("the login form after logout", `location.pathname === "/ui/login" && !!document.getElementById("key")`)
		if got := eval[int](tb, `fetch("/v1/stats").then(r => r.status)`); got != http.StatusUnauthorized {
			t.Errorf("GET /v1/stats after logout = %d, want 401", got)
		}
	})

	t.Run("TenantSeesOnlyItsOwn", func(t *testing.T) {
		h.sink.failing.Store(true)
		globexFailed := h.send(globex, "hooks", "meter-4711", "")
		h.waitStatus(globex, globexFailed, herald.StatusDeliveryFailed)
		globexIDs = append(globexIDs, globexFailed)
		var acmeAll []string
		for _, id := range acmeFailed {
			acmeAll = append(acmeAll, id)
		}
		acmeAll = append(acmeAll, acmeOK...)

		tb := b.newTab(t)
		tb.login(h.url, keyOther)
		tb.overviewMatches(h, keyOther)

		tb.goHash("#/messages")
		tb.until("globex's messages", `document.querySelectorAll("#results tbody tr[data-id]").length === 2`)
		listed := listedIDs(tb, "#results")
		for _, id := range acmeAll {
			if slices.Contains(listed, id) {
				t.Errorf("globex's page lists acme's message %s", id)
			}
		}
		if slices.Sort(listed); fmt.Sprint(listed) != fmt.Sprint(slices.Sorted(slices.Values(globexIDs))) {
			t.Errorf("globex's page lists %v, want %v", listed, globexIDs)
		}
		tb.goHash("#/messages?target=meter-4711")
		tb.until("the search for meter-4711", `document.getElementById("results-summary").textContent.includes("matching")`)
		if got := listedIDs(tb, "#results"); len(got) != 2 || slices.Contains(got, acmeOK[0]) {
			t.Errorf("globex's search for meter-4711 lists %v: want its own 2, none of acme's", got)
		}
		tb.goHash("#/messages/" + acmeOK[0])
		tb.until("acme's message not found", `!document.getElementById("msg-missing").hidden`)
		tb.screenshot("other-tenant-message")

		// Replay all of globex's dead letters matching the filter, at a rate.
		h.sink.failing.Store(false)
		tb.goHash("#/dead-letters?route=hooks")
		tb.until("globex's dead letter", `JSON.stringify([...document.querySelectorAll("#dl-list tbody tr[data-id]")].map(r => r.dataset.id)) === `+js(mustJSON([]string{globexFailed})))
		tb.do(chromedp.SetValue(chromedp.ID("dl-rate"), "5"), chromedp.Click(chromedp.ID("dl-replay-all")))
		tb.until("the confirmation", `document.getElementById("confirm").open`)
		tb.do(chromedp.Click(chromedp.ID("confirm-yes")))
		tb.until("the replay", `document.getElementById("flash").textContent.includes("Replayed 1 dead letter")`)
		h.waitStatus(globex, globexFailed, herald.StatusDeliverySuccessful)
		replays := h.exchanges("POST", "/v1/dead-letters/replay")
		if len(replays) != 1 || replays[0].status != http.StatusOK || !replays[0].cookie {
			t.Errorf("replay requests %+v, want one answered 200 with the cookie", replays)
		}
	})

	t.Run("CrossSiteRequestsAreRefused", func(t *testing.T) {
		h.sink.failing.Store(true)
		id := h.send(acme, "hooks", "meter-4799", "")
		h.waitStatus(acme, id, herald.StatusDeliveryFailed)
		replayPath := "/v1/messages/" + id + "/replay"

		// Without a browser: the cookie alone, the token from another
		// origin, the token without the cookie.
		cookie, token := loginHTTP(t, h.url, keyAcme)
		for name, c := range map[string]struct {
			cookie        bool
			token, origin string
			site          string
			want          int
		}{
			"cookie without the token":  {true, "", h.url, "same-origin", http.StatusForbidden},
			"token from another origin": {true, token, "http://evil.example", "cross-site", http.StatusForbidden},
			"token from a sibling port": {true, token, "http://127.0.0.1:1", "same-site", http.StatusForbidden},
			"token without the cookie":  {false, token, h.url, "same-origin", http.StatusUnauthorized},
			"no origin at all":          {true, token, "", "", http.StatusForbidden},
		} {
			req, _ := http.NewRequest("POST", h.url+replayPath, nil)
			if c.cookie {
				req.AddCookie(cookie)
			}
			for k, v := range map[string]string{httpapi.CSRFHeader: c.token, "Origin": c.origin, "Sec-Fetch-Site": c.site} {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s: POST %s = %d, want %d", name, replayPath, resp.StatusCode, c.want)
			}
		}
		h.waitStatus(acme, id, herald.StatusDeliveryFailed)

		// In the browser: a logged-in operator opens a page of another
		// origin (another port of the same host: the same site, so the
		// SameSite cookie goes along) that posts to herald.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><title>evil</title><form id="f" method="post" action="%[1]s/v1/dead-letters/replay"></form>
<script>
Promise.allSettled([
  fetch(%[2]q, {method: "POST", mode: "no-cors", credentials: "include"}),
  fetch(%[3]q, {method: "DELETE", credentials: "include"}),
]).then(() => { document.title = "fetched"; document.getElementById("f").submit(); });
</script>`, h.url, h.url+replayPath, h.url+"/v1/dead-letters")
		}))
		defer evil.Close()
		tb := b.newTab(t)
		tb.login(h.url, keyAcme)
		mark := h.mark()
		tb.do(chromedp.Navigate(evil.URL))
		deadline := time.Now().Add(patience)
		for len(h.exchangesSince(mark, "POST", "/v1/dead-letters/replay")) < 1 || len(h.exchangesSince(mark, "POST", replayPath)) < 1 {
			if time.Now().After(deadline) {
				t.Fatalf("the other origin's requests did not arrive: %+v", h.exchangesSince(mark, "", ""))
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, e := range h.exchangesSince(mark, "", "") {
			if !strings.HasPrefix(e.path, "/v1/") {
				continue
			}
			t.Logf("from the other origin: %s %s cookie %v origin %q fetch-site %q: %d", e.method, e.path, e.cookie, e.origin, e.fetchSite, e.status)
			switch {
			case e.method == "OPTIONS": // a preflight, without cookies: refused, so the DELETE never goes
				if e.status < 400 {
					t.Errorf("the preflight of %s answered %d", e.path, e.status)
				}
			case e.cookie && e.status != http.StatusForbidden:
				t.Errorf("%s %s from another origin, with the cookie, answered %d; want 403", e.method, e.path, e.status)
			case !e.cookie && e.status != http.StatusUnauthorized:
				t.Errorf("%s %s from another origin, without the cookie, answered %d; want 401", e.method, e.path, e.status)
			}
		}
		if got := h.exchangesSince(mark, "DELETE", "/v1/dead-letters"); len(got) != 0 {
			t.Errorf("the other origin's DELETE reached herald: %+v", got)
		}
		time.Sleep(100 * time.Millisecond)
		h.waitStatus(acme, id, herald.StatusDeliveryFailed)

		// The same request from the page itself goes through.
		tb.do(chromedp.Navigate(h.url + "/ui#/messages/" + id))
		tb.until("the failed message", `document.getElementById("msg-status").dataset.status === "DELIVERY_FAILED"`)
		h.sink.failing.Store(false)
		tb.do(chromedp.Click(chromedp.ID("msg-replay")))
		tb.until("the replayed message delivered", `document.getElementById("msg-status").dataset.status === "DELIVERY_SUCCESSFUL"`)
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// loginHTTP logs in with key as a browser would, without one, and returns
// the session cookie and the page's CSRF token.
func loginHTTP(t *testing.T, base, key string) (*http.Cookie, string) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", base+"/ui/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == ui.CookieName {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("login answered %d without a cookie", resp.StatusCode)
	}
	req, _ = http.NewRequest("GET", base+"/ui", nil)
	req.AddCookie(cookie)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	m := csrfMeta.FindSubmatch(page)
	if m == nil {
		t.Fatalf("GET /ui answered %d without the CSRF token", resp.StatusCode)
	}
	return cookie, string(m[1])
}

// uniquePrefix returns the shortest prefix of id, 8 characters at least,
// that starts none of others but id itself.
func uniquePrefix(id string, others []string) string {
	for n := 8; n < len(id); n++ {
		if !slices.ContainsFunc(others, func(o string) bool { return o != id && strings.HasPrefix(o, id[:n]) }) {
			return id[:n]
		}
	}
	return id
}
