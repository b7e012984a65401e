package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/ui"
)

// submitLogin submits the login form with key, waits for the page the
// server answers with, and returns the error it shows.
func (tb *tab) submitLogin(key string) string {
	tb.t.Helper()
	tb.markPage()
	tb.do(chromedp.SetValue(chromedp.ID("key"), key), chromedp.Submit(chromedp.ID("key")))
	tb.until("the answer to the login", `!window.__heraldTestMark && document.readyState === "complete" && !!document.querySelector("body")`)
	return eval[string](tb, `document.getElementById("login-error")?.textContent || ""`)
}

// visible reads whether each element that sel matches is shown.
func visible(tb *tab, sel string) []bool {
	tb.t.Helper()
	return eval[[]bool](tb, `[...document.querySelectorAll(`+js(sel)+`)].map(e => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length))`)
}

// TestAdminPageHardening drives the admin page in headless Chromium: a
// read-only key's page shows no buttons and its changes are refused;
// malformed addresses leave the page working; one tenant logging in
// 20,000 times ends none of another tenant's sessions; and 50 wrong
// logins from the browser are throttled. The subtests share the server
// (the throttle last: its address is then held back) and run in order.
func TestAdminPageHardening(t *testing.T) {
	h := startHerald(t)
	b := startBrowser(t)
	failed := h.send(acme, "hooks", "meter-4711", "order-1")
	h.waitStatus(acme, failed, herald.StatusDeliveryFailed)

	t.Run("ReadOnlyKeyHidesButtons", func(t *testing.T) {
		tb := b.newTab(t)
		tb.login(h.url, keyReader)
		if got := eval[string](tb, `document.getElementById("role")?.textContent || ""`); got != "read only" {
			t.Errorf("the page says role %q, want read only", got)
		}
		tb.goHash("#/messages/" + failed)
		tb.until("the failed message", `document.getElementById("msg-status").dataset.status === "DELIVERY_FAILED"`)
		if shown := visible(tb, "#msg-replay, #msg-cancel"); len(shown) != 2 || shown[0] || shown[1] {
			t.Errorf("replay and cancel shown: %v, want neither", shown)
		}
		tb.goHash("#/dead-letters")
		tb.until("the dead letter", `document.querySelectorAll("#dl-list tbody tr[data-id]").length === 1 &&
			document.querySelectorAll("#dl-groups tbody button").length === 2`)
		for _, sel := range []string{"#dl-replay-selected", "#dl-replay-all", "#dl-purge", "#dl-rate", "#dl-all",
			"#dl-list tbody input[type=checkbox]", "#dl-list tbody button", `#dl-groups button[data-key^="replay:"]`} {
			if shown := visible(tb, sel); len(shown) == 0 || shown[0] {
				t.Errorf("%s: shown %v, want hidden", sel, shown)
			}
		}
		if shown := visible(tb, `#dl-groups button[data-key^="show:"]`); len(shown) != 1 || !shown[0] {
			t.Errorf("the dead letters' filter button: shown %v, want shown (it changes nothing)", shown)
		}
		tb.screenshot("read-only-dead-letters")
		tb.accessible()
		// What a button would have sent is refused anyway.
		got := eval[int](tb, `fetch("/v1/messages/`+failed+`/replay", {method: "POST",
			headers: {"X-CSRF-Token": document.querySelector('meta[name="csrf-token"]').content}}).then(r => r.status)`)
		if got != http.StatusForbidden {
			t.Errorf("a replay from the read-only page: %d, want 403", got)
		}
		if m := h.waitStatus(acme, failed, herald.StatusDeliveryFailed); m.Attempt != 1 {
			t.Errorf("the dead letter was sent again: attempt %d", m.Attempt)
		}
	})

	t.Run("MalformedAddresses", func(t *testing.T) {
		tb := b.newTab(t)
		tb.login(h.url, keyAcme)
		for _, hash := range []string{"#/messages/%E0%A4%A", "#/%", "#/constructor", "#/__proto__", "#/toString/x",
			"#/messages?status=%ZZ&target=%", "#/dead-letters?route=%E0", "#%%%/??/%"} {
			tb.goHash(hash)
			tb.until("a page for "+hash, `[...document.querySelectorAll("[data-page]")].filter(s => !s.hidden).length === 1`)
			tb.goHash("#/dead-letters")
			tb.until("the dead letters after "+hash, `!document.getElementById("page-dead-letters").hidden &&
				document.querySelectorAll("#dl-list tbody tr[data-id]").length === 1`)
		}
		// The tab fails the test for any exception the page threw.
	})

	t.Run("ManyLoginsOfOneTenant", func(t *testing.T) {
		tb := b.newTab(t)
		tb.login(h.url, keyOther)
		const logins, workers = 20000, 8
		var (
			next       atomic.Int64
			mu         sync.Mutex
			first, end *http.Cookie
			firstN     int64 = -1
		)
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		var wg sync.WaitGroup
		var failures atomic.Int64
		for range workers {
			wg.Go(func() {
				for {
					n := next.Add(1)
					if n > logins {
						return
					}
					req, _ := http.NewRequest("POST", h.url+"/ui/login", strings.NewReader(url.Values{"key": {keyAcme}}.Encode()))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					req.Header.Set("Origin", h.url)
					resp, err := client.Do(req)
					if err != nil || resp.StatusCode != http.StatusSeeOther {
						failures.Add(1)
						if resp != nil {
							resp.Body.Close()
						}
						continue
					}
					resp.Body.Close()
					for _, c := range resp.Cookies() {
						if c.Name != ui.CookieName {
							continue
						}
						mu.Lock()
						if firstN < 0 || n < firstN {
							first, firstN = c, n
						}
						end = c
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		if n := failures.Load(); n != 0 {
			t.Fatalf("%d of %d logins failed", n, logins)
		}
		// globex's page goes on: its session lives.
		tb.markPage()
		if got := eval[int](tb, `fetch("/v1/stats").then(r => r.status)`); got != http.StatusOK {
			t.Errorf("globex's session after acme's %d logins: /v1/stats %d, want 200", logins, got)
		}
		tb.goHash("#/messages")
		tb.until("globex's messages page", `!document.getElementById("page-messages").hidden && document.getElementById("results-summary").textContent !== ""`)
		tb.stillSamePage()
		status := func(c *http.Cookie) int {
			req, _ := http.NewRequest("GET", h.url+"/v1/stats", nil)
			req.AddCookie(c)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := status(end); got != http.StatusOK {
			t.Errorf("acme's latest session: %d, want 200", got)
		}
		if got := status(first); got != http.StatusUnauthorized {
			t.Errorf("acme's first of %d sessions: %d, want 401: a tenant's sessions are bounded", logins, got)
		}
	})

	t.Run("WrongLoginsAreThrottled", func(t *testing.T) {
		tb := b.newTab(t)
		tb.do(chromedp.Navigate(h.url+"/ui/login"), chromedp.WaitVisible(chromedp.ID("key")))
		mark := h.mark()
		told := 0 // pages that say to wait
		for i := range 50 {
			if msg := tb.submitLogin(fmt.Sprintf("%s-wrong-%02d", keyAcme, i)); strings.Contains(msg, "Too many failed logins") {
				told++
				if told == 1 {
					tb.screenshot("login-throttled")
				}
			}
		}
		counts := map[int]int{}
		for _, e := range h.exchangesSince(mark, "POST", "/ui/login") {
			counts[e.status]++
		}
		if counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests] != 50 || counts[http.StatusUnauthorized] > 10 || counts[http.StatusTooManyRequests] < 40 {
			t.Errorf("50 wrong logins answered %v; want at most 10 checked (401), the rest throttled (429)", counts)
		}
		if told != counts[http.StatusTooManyRequests] {
			t.Errorf("%d pages say to wait, of %d answered 429", told, counts[http.StatusTooManyRequests])
		}
		if n := eval[int](tb, `fetch("/v1/stats").then(r => r.status)`); n != http.StatusUnauthorized {
			t.Errorf("GET /v1/stats after the throttled logins: %d, want 401", n)
		}
		// That the right key waits too is TestFailedLoginsAreThrottledPerAddress's, on a clock of its own.
	})
}
