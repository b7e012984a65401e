package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldmq/herald"
)

// TestSendNowButton drives the admin page in headless Chromium: a
// scheduled message shows "Send now" to a key that may write, and not to
// a read-only key; the button sends it at once, and its timeline shows the
// operator's send-now and the carrier's answer.
func TestSendNowButton(t *testing.T) {
	h := startHerald(t)
	b := startBrowser(t)
	m, _, err := h.engine.Send(context.Background(), acme, herald.SendRequest{Route: "reports", Target: "meter-4715", Text: "later",
		SendAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}

	reader := b.newTab(t)
	reader.login(h.url, keyReader)
	reader.goHash("#/messages/" + m.ID)
	reader.until("the scheduled message", `document.getElementById("msg-explain-headline").textContent.includes("scheduled")`)
	if shown := visible(reader, "#msg-send-now, #msg-cancel"); len(shown) != 2 || shown[0] || shown[1] {
		t.Errorf("send now and cancel shown to a read-only key: %v, want neither", shown)
	}

	tb := b.newTab(t)
	tb.login(h.url, keyAcme)
	tb.goHash("#/messages/" + m.ID)
	tb.until("the scheduled message", `document.getElementById("msg-status").dataset.status === "QUEUED"`)
	if shown := visible(tb, "#msg-send-now"); len(shown) != 1 || !shown[0] {
		t.Fatalf("send now shown %v, want shown", shown)
	}
	tb.do(chromedp.Click(chromedp.ID("msg-send-now")))
	h.waitStatus(acme, m.ID, herald.StatusDeliverySuccessful)
	tb.until("the delivered message's timeline", `document.getElementById("msg-status").dataset.status === "DELIVERY_SUCCESSFUL" &&
		document.getElementById("timeline").textContent.includes("sent now by an operator") &&
		document.getElementById("timeline").textContent.includes("Carrier answered 2") &&
		document.getElementById("msg-send-now").hidden`)
	tb.screenshot("message-sent-now")
}
