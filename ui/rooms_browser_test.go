package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/room"
)

// roomsRoute is the route of the rooms' deliveries, as herald serve makes
// it, allowed to reach loopback addresses.
func roomsRoute(t *testing.T, st room.Store) herald.Route {
	t.Helper()
	c, err := room.New(room.Config{Store: st, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := herald.ProfilePolicy(herald.ProfileRoom)
	if err != nil {
		t.Fatal(err)
	}
	return herald.Route{Name: herald.RoomRoutePrefix, Prefix: true, Carrier: c, Policy: policy}
}

// roomFixture is a room of acme's with a push subscription whose endpoint
// refuses everything and a pull subscription; one event delivered to both
// failed (the push one refused, the pull one handed back), another waits
// to be pulled.
type roomFixture struct {
	push, pull           *herald.Subscription
	pushDead, pullDead   string // the dead deliveries
	pullQueued           string // the pull subscription's waiting one
	firstEvent, endpoint string
}

// The parts of the push subscription's URL that the page never shows.
const (
	urlPath  = "/hooks/s3cr3t-path"
	urlQuery = "token=hunter2"
)

func newRoomFixture(t *testing.T, h *heraldServer) roomFixture {
	t.Helper()
	ctx := context.Background()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such order", http.StatusBadRequest)
	}))
	t.Cleanup(refuse.Close)
	none := 0
	if _, err := h.engine.CreateRoom(ctx, acme, herald.RoomRequest{Name: "orders", Expiration: time.Hour,
		Delivery: herald.DeliveryOverrides{Attempts: &none}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.engine.CreateRoom(ctx, acme, herald.RoomRequest{Name: "audit"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.engine.CreateRoom(ctx, globex, herald.RoomRequest{Name: "globex-only"}); err != nil {
		t.Fatal(err)
	}
	var f roomFixture
	var err error
	f.endpoint = strings.TrimPrefix(refuse.URL, "http://")
	three := 3.0
	f.push, err = h.engine.CreateSubscription(ctx, acme, "orders", herald.SubscriptionRequest{Type: herald.SubscriptionPush,
		URL: refuse.URL + urlPath + "?" + urlQuery, EventTypes: []herald.EventType{{Type: "order.created", Version: "1"}},
		Delivery: herald.DeliveryOverrides{Multiplier: &three}})
	if err != nil {
		t.Fatal(err)
	}
	f.pull, err = h.engine.CreateSubscription(ctx, acme, "orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := h.engine.Publish(ctx, acme, "orders", herald.PublishRequest{Type: "order.created", Version: "1", Data: json.RawMessage(`{"order":42}`)})
	if err != nil {
		t.Fatal(err)
	}
	f.firstEvent = ev.ID
	for _, d := range ev.Deliveries {
		if d.SubscriptionID == f.push.ID {
			f.pushDead = d.MessageID
		} else {
			f.pullDead = d.MessageID
		}
	}
	h.waitStatus(acme, f.pushDead, herald.StatusDeliveryFailed)
	leased, err := h.engine.Pull(ctx, acme, f.pull.ID, 10, time.Minute)
	if err != nil || len(leased) != 1 {
		t.Fatalf("pull: %d, %v", len(leased), err)
	}
	if n, _, err := h.engine.Nack(ctx, acme, f.pull.ID, []string{leased[0].LeaseID()}); err != nil || n != 1 {
		t.Fatalf("nack: %d, %v", n, err)
	}
	h.waitStatus(acme, f.pullDead, herald.StatusDeliveryFailed)
	ev, err = h.engine.Publish(ctx, acme, "orders", herald.PublishRequest{Type: "order.shipped"})
	if err != nil || len(ev.Deliveries) != 1 {
		t.Fatalf("the second event: %v, %v", ev, err)
	}
	f.pullQueued = ev.Deliveries[0].MessageID
	return f
}

// TestRoomsInBrowser drives the Rooms view in headless Chromium: the
// tenant's rooms with their subscriptions counted, a room's subscriptions
// (a push one's host only, never its URL's path or query), a
// subscription's deliveries, each opening its message, its queue's depth,
// and the replay of its dead deliveries; a read-only key's view has no
// replay button.
func TestRoomsInBrowser(t *testing.T) {
	h := startHerald(t)
	f := newRoomFixture(t, h)
	b := startBrowser(t)

	t.Run("Write", func(t *testing.T) {
		tb := b.newTab(t)
		tb.login(h.url, keyAcme)
		tb.do(chromedp.Click(chromedp.CSS(`a[data-nav="rooms"]`)))
		tb.until("the rooms", `document.querySelectorAll("#rooms-list tbody tr[data-room]").length === 2`)
		rooms := eval[map[string]string](tb, `Object.fromEntries([...document.querySelectorAll("#rooms-list tbody tr[data-room]")]
			.map(r => [r.dataset.room, r.querySelector("[data-subscriptions]").dataset.subscriptions]))`)
		if len(rooms) != 2 || rooms["orders"] != "2" || rooms["audit"] != "0" {
			t.Errorf("rooms listed with their subscriptions: %v, want orders 2 and audit 0 (not globex's)", rooms)
		}
		if row := eval[string](tb, `document.querySelector('#rooms-list tr[data-room="orders"]').textContent`); !strings.Contains(row, "1h0m0s") ||
			!strings.Contains(row, "0 redeliveries") {
			t.Errorf("the room's row %q shows not its expiration and policy", row)
		}
		tb.screenshot("rooms")
		tb.accessible()

		tb.do(chromedp.Click(chromedp.CSS(`#rooms-list a[href="#/rooms/orders"]`)))
		tb.until("the room's subscriptions", `document.querySelectorAll("#room-subs tbody tr[data-id]").length === 2`)
		push := eval[string](tb, `document.querySelector('#room-subs tr[data-id="`+f.push.ID+`"]').textContent`)
		if !strings.Contains(push, f.endpoint) || !strings.Contains(push, "order.created v1") || !strings.Contains(push, "multiplier 3") {
			t.Errorf("the push subscription's row %q: want its host %s, its event type and its override", push, f.endpoint)
		}
		if pull := eval[string](tb, `document.querySelector('#room-subs tr[data-id="`+f.pull.ID+`"]').textContent`); !strings.Contains(pull, "every event") ||
			!strings.Contains(pull, "the room's") {
			t.Errorf("the pull subscription's row %q", pull)
		}
		if html := eval[string](tb, `document.documentElement.outerHTML`); strings.Contains(html, "s3cr3t") || strings.Contains(html, "hunter2") {
			t.Error("the page shows the push URL's path or query")
		}
		tb.screenshot("room")
		tb.accessible()

		tb.do(chromedp.Click(chromedp.CSS(`#room-subs a[href="#/subscriptions/` + f.pull.ID + `"]`)))
		tb.until("the subscription's deliveries", `document.querySelectorAll("#sub-deliveries tbody tr[data-id]").length === 2 &&
			document.getElementById("sub-queued")?.dataset.queued === "1" && !document.getElementById("sub-replay-dead").disabled`)
		rows := eval[map[string]string](tb, `Object.fromEntries([...document.querySelectorAll("#sub-deliveries tbody tr[data-id]")]
			.map(r => [r.dataset.id, r.textContent]))`)
		if dead := rows[f.pullDead]; !strings.Contains(dead, f.firstEvent) || !strings.Contains(dead, "order.created v1") || !strings.Contains(dead, "Failed") {
			t.Errorf("the dead delivery's row %q: want its event, its type and its status", dead)
		}
		if queued := rows[f.pullQueued]; !strings.Contains(queued, "order.shipped") || !strings.Contains(queued, "Queued") {
			t.Errorf("the waiting delivery's row %q", queued)
		}
		tb.screenshot("subscription")
		tb.accessible()

		// Replay its dead ones: only after the confirmation, and only its own.
		tb.do(chromedp.Click(chromedp.ID("sub-replay-dead")))
		tb.until("the confirmation", `document.getElementById("confirm").open`)
		tb.do(chromedp.Click(chromedp.ID("confirm-no")))
		tb.until("the confirmation closed", `!document.getElementById("confirm").open`)
		time.Sleep(200 * time.Millisecond)
		h.waitStatus(acme, f.pullDead, herald.StatusDeliveryFailed)
		tb.do(chromedp.Click(chromedp.ID("sub-replay-dead")))
		tb.until("the confirmation", `document.getElementById("confirm").open`)
		tb.do(chromedp.Click(chromedp.ID("confirm-yes")))
		tb.until("the replay's answer", `document.getElementById("flash").textContent.includes("Replayed 1 dead delivery")`)
		if m := h.waitStatus(acme, f.pullDead, herald.StatusQueued); m.Attempt != 0 {
			t.Errorf("the replayed delivery's attempt: %d, want 0", m.Attempt)
		}
		m, err := h.engine.Get(context.Background(), acme, f.pushDead)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range m.Timeline {
			if e.Reason == "dead letter replayed" {
				t.Errorf("the other subscription's dead delivery was replayed too: %+v", m.Timeline)
			}
		}
		tb.until("the replayed delivery queued", `document.getElementById("sub-queued")?.dataset.queued === "2" &&
			document.querySelector('#sub-deliveries tr[data-id="`+f.pullDead+`"] .badge').dataset.status === "QUEUED" &&
			document.getElementById("sub-replay-dead").disabled`)

		// A delivery opens the message view.
		tb.do(chromedp.Click(chromedp.CSS(`#sub-deliveries a[href="#/messages/` + f.pullDead + `"]`)))
		tb.until("the delivery's message", `!document.getElementById("page-message").hidden &&
			document.getElementById("msg-status").dataset.status === "QUEUED"`)
		if tl := eval[string](tb, `document.getElementById("timeline").textContent`); !strings.Contains(tl, "dead letter replayed") {
			t.Errorf("the delivery's timeline %q does not show the replay", tl)
		}

		// A status filter keeps its deliveries of that status.
		tb.goHash("#/subscriptions/" + f.push.ID + "?status=DELIVERY_FAILED")
		tb.until("the push subscription's dead delivery", `document.querySelectorAll("#sub-deliveries tbody tr[data-id]").length === 1 &&
			!!document.querySelector('#sub-deliveries tr[data-id="`+f.pushDead+`"]') && document.getElementById("sub-status").value === "DELIVERY_FAILED"`)
		if d := eval[string](tb, `document.getElementById("sub-details").textContent`); !strings.Contains(d, f.endpoint) || strings.Contains(d, "Waiting to be pulled") {
			t.Errorf("the push subscription's details %q: want its host, no queue", d)
		}
	})

	t.Run("ReadOnly", func(t *testing.T) {
		tb := b.newTab(t)
		tb.login(h.url, keyReader)
		tb.goHash("#/subscriptions/" + f.push.ID)
		tb.until("the read-only page's deliveries", `document.querySelectorAll("#sub-deliveries tbody tr[data-id]").length === 1`)
		if shown := visible(tb, "#sub-replay-dead"); len(shown) != 1 || shown[0] {
			t.Errorf("the replay button on a read-only page: shown %v, want hidden", shown)
		}
		tb.goHash("#/rooms/orders")
		tb.until("the room", `document.querySelectorAll("#room-subs tbody tr[data-id]").length === 2`)
		if n := eval[int](tb, `[...document.querySelectorAll("#page-room button, #page-subscription button")].filter(e => !!(e.offsetWidth || e.offsetHeight)).length`); n != 0 {
			t.Errorf("%d buttons shown on a read-only key's rooms", n)
		}
		tb.screenshot("read-only-subscription")
	})
}
