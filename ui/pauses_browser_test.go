package ui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldmq/herald"
)

// TestPausesAndOrphansInBrowser drives the overview in headless Chromium:
// a route missing from the configuration is shown with its pending
// messages; a route paused from the page holds its messages until the
// page resumes it (an admin key's page); a tenant's write key's page and
// a read-only key's list the pauses without the form and the buttons.
func TestPausesAndOrphansInBrowser(t *testing.T) {
	h := startHerald(t)
	ctx := context.Background()
	now := time.Now()
	orphan := &herald.Message{ID: "orphan-0001", Tenant: acme, Route: "gone", Target: "x", Lane: "gone", Text: "x",
		MaxAttempts: 3, Status: herald.StatusQueued, CreatedAt: now, UpdatedAt: now, DueAt: now}
	if _, _, err := h.store.Create(ctx, orphan, herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)

	t.Run("Admin", func(t *testing.T) {
		tb := b.newTab(t)
		tb.login(h.url, keyOps)
		tb.goHash("#/overview")
		tb.until("the orphaned route", `!document.getElementById("orphans").hidden &&
			(document.querySelector('#orphans-list li[data-route="gone"]')?.textContent || "").includes("1 pending message")`)
		if m := h.waitStatus(acme, orphan.ID, herald.StatusQueued); m.Attempt != 0 {
			t.Errorf("the orphan was sent: attempt %d", m.Attempt)
		}

		tb.do(chromedp.SendKeys(chromedp.ID("p-route"), "reports"), chromedp.SendKeys(chromedp.ID("p-reason"), "maintenance"),
			chromedp.Click(chromedp.ID("p-submit")))
		tb.until("the pause listed", `(document.querySelector('#pauses tbody tr[data-route="reports"]')?.textContent || "").includes("maintenance")`)
		if row := eval[string](tb, `document.querySelector('#pauses tbody tr[data-route="reports"]').textContent`); !strings.Contains(row, "the whole route") ||
			!strings.Contains(row, "until resumed") {
			t.Errorf("the pause's row %q says not what it holds and until when", row)
		}
		tb.screenshot("pauses")
		tb.accessible()
		held := h.send(acme, "reports", "meter-1", "held-1")
		time.Sleep(300 * time.Millisecond)
		if m := h.waitStatus(acme, held, herald.StatusQueued); m.Attempt != 0 {
			t.Errorf("a paused route's message was sent: attempt %d", m.Attempt)
		}
		x, err := h.engine.Explain(ctx, acme, held)
		if err != nil || x.Reason != "lane_paused" || !strings.Contains(x.Detail, "paused by an operator: maintenance") {
			t.Errorf("explain = %+v, %v", x, err)
		}

		tb.do(chromedp.Click(chromedp.CSS(`#pauses tbody tr[data-route="reports"] button`)))
		tb.until("the pause gone", `document.querySelectorAll('#pauses tbody tr[data-route]').length === 0`)
		h.waitStatus(acme, held, herald.StatusDeliverySuccessful)
	})

	if err := h.engine.PauseLane(ctx, herald.LanePause{Route: "hooks", Lane: "meter-9", Reason: "firmware"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, key string }{{"Write", keyAcme}, {"ReadOnly", keyReader}} {
		t.Run(c.name, func(t *testing.T) {
			tb := b.newTab(t)
			tb.login(h.url, c.key)
			tb.goHash("#/overview")
			tb.until("the pause listed", `document.querySelectorAll('#pauses tbody tr[data-route="hooks"]').length === 1`)
			for _, sel := range []string{"#pause-form", "#pauses tbody button"} {
				if shown := visible(tb, sel); len(shown) == 0 || shown[0] {
					t.Errorf("%s: shown %v, want hidden", sel, shown)
				}
			}
			tb.accessible()
		})
	}
}
