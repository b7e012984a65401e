package httpapi

import (
	"github.com/heraldmq/herald/stdwebhook"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func TestRoomsCRUD(t *testing.T) {
	f := newFixture(t)
	rec := f.do("POST", "/v1/rooms", keyA, `{"name":"orders","expiration":"90s","delivery":{"delay":"2s","attempts":0}}`)
	wantStatus(t, rec, http.StatusCreated)
	room := decode[roomView](t, rec)
	if room.Name != "orders" || room.Expiration != "1m30s" || room.Delivery.Delay.d != 2*time.Second || *room.Delivery.Multiplier != 2 ||
		*room.Delivery.Attempts != 0 || rec.Header().Get("Location") != "/v1/rooms/orders" {
		t.Errorf("created room %+v", room)
	}
	wantError(t, f.do("POST", "/v1/rooms", keyA, `{"name":"orders"}`), http.StatusConflict, codeRoomExists)
	wantStatus(t, f.do("POST", "/v1/rooms", keyB, `{"name":"orders","expiration":"0"}`), http.StatusCreated)
	wantStatus(t, f.do("POST", "/v1/rooms", keyA, `{"name":"audit"}`), http.StatusCreated)
	// Durations as integer milliseconds too, shown as strings.
	rec = f.do("POST", "/v1/rooms", keyA, `{"name":"ms","expiration":90000,"delivery":{"delay":2500}}`)
	wantStatus(t, rec, http.StatusCreated)
	if !strings.Contains(rec.Body.String(), `"expiration":"1m30s"`) || !strings.Contains(rec.Body.String(), `"delay":"2.5s"`) {
		t.Errorf("a room given milliseconds: %s, want 1m30s and 2.5s", rec.Body)
	}
	wantStatus(t, f.do("DELETE", "/v1/rooms/ms", keyA, ""), http.StatusNoContent)

	for _, body := range []string{
		`{"name":"no spaces"}`, `{"name":"a","expiration":"soon"}`, `{"name":"a","expiration":"-1s"}`,
		`{"name":"a","delivery":{"multiplier":0.5}}`, `{"name":"a","delivery":{"attempts":-1}}`, `{"name":"a","delivery":{"delay":"x"}}`,
		// The stores keep milliseconds: 500µs would be kept as 0, never.
		`{"name":"a","expiration":"500us"}`, `{"name":"a","expiration":"1.5ms"}`, `{"name":"a","delivery":{"delay":"2500us"}}`,
		// Milliseconds are integers, not negative; a string needs its unit.
		`{"name":"a","expiration":1.5}`, `{"name":"a","expiration":-1}`, `{"name":"a","expiration":true}`,
		`{"name":"a","delivery":{"delay":"2000"}}`, `{"name":"a","delivery":{"delay":[2000]}}`,
	} {
		e := wantError(t, f.do("POST", "/v1/rooms", keyA, body), http.StatusBadRequest, codeInvalidField)
		if !strings.HasPrefix(e.Message, "expiration:") && !strings.HasPrefix(e.Message, "delivery.") && !strings.HasPrefix(e.Message, "name:") {
			t.Errorf("%s: %q names no field", body, e.Message)
		}
	}
	wantError(t, f.do("POST", "/v1/rooms", keyA, `{}`), http.StatusBadRequest, codeMissingField)
	wantError(t, f.do("POST", "/v1/rooms", keyA, `{"name":"a","ttl":"1s"}`), http.StatusBadRequest, codeUnknownField)

	rec = f.do("GET", "/v1/rooms", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	var names []string
	for _, r := range decode[map[string][]roomView](t, rec)["rooms"] {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "audit,orders" {
		t.Errorf("tenant A's rooms: %v, want audit and orders", names)
	}
	rec = f.do("GET", "/v1/rooms/orders", keyB, "")
	wantStatus(t, rec, http.StatusOK)
	if r := decode[roomView](t, rec); r.Expiration != "0s" {
		t.Errorf("tenant B's room: %+v, want its own", r)
	}
	wantError(t, f.do("GET", "/v1/rooms/nope", keyA, ""), http.StatusNotFound, codeNotFound)
	wantStatus(t, f.do("DELETE", "/v1/rooms/audit", keyA, ""), http.StatusNoContent)
	wantError(t, f.do("DELETE", "/v1/rooms/audit", keyA, ""), http.StatusNotFound, codeNotFound)
	wantError(t, f.do("GET", "/v1/rooms", "", ""), http.StatusUnauthorized, "unauthorized")
}

func TestSubscriptionsAPI(t *testing.T) {
	f := newFixture(t)
	wantStatus(t, f.do("POST", "/v1/rooms", keyA, `{"name":"orders"}`), http.StatusCreated)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rec := f.do("POST", "/v1/rooms/orders/subscriptions", keyA, `{"type":"push","url":"https://example.com/in","secret":"`+secret+`",
		"event_types":[{"type":"order.created","version":1},{"type":"order.paid"}],"delivery":{"multiplier":3}}`)
	wantStatus(t, rec, http.StatusCreated)
	sub := decode[subscriptionView](t, rec)
	if sub.ID == "" || sub.Room != "orders" || sub.Type != "push" || sub.Secret != secret ||
		len(sub.EventTypes) != 2 || sub.EventTypes[0].Version != "1" || sub.EventTypes[1].Version != "" ||
		sub.Delivery.Multiplier == nil || *sub.Delivery.Multiplier != 3 || sub.Delivery.Delay != nil || sub.Delivery.Attempts != nil ||
		rec.Header().Get("Location") != "/v1/subscriptions/"+sub.ID {
		t.Errorf("created subscription %+v", sub)
	}
	e := wantError(t, f.do("POST", "/v1/rooms/orders/subscriptions", keyA, `{"type":"pull","expiration":"10s"}`), http.StatusBadRequest, codeInvalidField)
	if !strings.HasPrefix(e.Message, "expiration:") {
		t.Errorf("a subscription's expiration: %q, want it named", e.Message)
	}
	for _, body := range []string{
		`{"type":"push"}`, `{"type":"push","url":"ftp://x"}`, `{"type":"pull","url":"https://example.com"}`, `{"type":"mail"}`,
		`{"type":"push","url":"https://example.com","secret_env":"HOME"}`, `{"type":"pull","event_types":[{"version":"1"}]}`,
		`{"type":"push","url":"https://example.com","secret":"hunter2"}`, `{"type":"push","url":"https://example.com","secret":"whsec_c2hvcnQ="}`,
		`{"type":"pull","secret":"` + secret + `"}`,
		`{"type":"pull","event_types":[{"type":"t","version":true}]}`, `{"type":"pull","delivery":{"attempts":1001}}`,
	} {
		wantError(t, f.do("POST", "/v1/rooms/orders/subscriptions", keyA, body), http.StatusBadRequest, codeInvalidField)
	}
	wantError(t, f.do("POST", "/v1/rooms/nope/subscriptions", keyA, `{"type":"pull"}`), http.StatusNotFound, codeNotFound)
	wantError(t, f.do("POST", "/v1/rooms/orders/subscriptions", keyB, `{"type":"pull"}`), http.StatusNotFound, codeNotFound)
	wantStatus(t, f.do("POST", "/v1/rooms/orders/subscriptions", keyA, `{"type":"pull"}`), http.StatusCreated)
	// Without a secret herald generates one, shown in this answer only.
	rec = f.do("POST", "/v1/rooms/orders/subscriptions", keyA, `{"type":"push","url":"https://example.com/in"}`)
	wantStatus(t, rec, http.StatusCreated)
	gen := decode[subscriptionView](t, rec)
	if key, err := stdwebhook.ParseSecret(gen.Secret); !strings.HasPrefix(gen.Secret, "whsec_") || err != nil || len(key) != 32 {
		t.Errorf("generated secret %q: %v, want whsec_ and 32 bytes", gen.Secret, err)
	}
	rec = f.do("GET", "/v1/subscriptions/"+gen.ID, keyA, "")
	if strings.Contains(rec.Body.String(), "whsec_") {
		t.Errorf("the secret is shown again: %s", rec.Body)
	}
	wantStatus(t, f.do("DELETE", "/v1/subscriptions/"+gen.ID, keyA, ""), http.StatusNoContent)

	rec = f.do("GET", "/v1/rooms/orders/subscriptions", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	if subs := decode[map[string][]subscriptionView](t, rec)["subscriptions"]; len(subs) != 2 || subs[0].ID != sub.ID || subs[1].Queued != nil {
		t.Errorf("subscriptions: %+v (no queue's depth in a list)", subs)
	}
	// Each room with how many subscriptions it has.
	wantStatus(t, f.do("POST", "/v1/rooms", keyA, `{"name":"empty"}`), http.StatusCreated)
	rooms := decode[map[string][]roomView](t, f.do("GET", "/v1/rooms", keyA, ""))["rooms"]
	if len(rooms) != 2 || rooms[0].Name != "empty" || rooms[0].Subscriptions != 0 || rooms[1].Subscriptions != 2 {
		t.Errorf("rooms %+v, want empty with 0 subscriptions and orders with 2", rooms)
	}
	if r := decode[roomView](t, f.do("GET", "/v1/rooms/orders", keyA, "")); r.Subscriptions != 2 {
		t.Errorf("room orders has %d subscriptions, want 2", r.Subscriptions)
	}
	rec = f.do("GET", "/v1/subscriptions/"+sub.ID, keyA, "")
	wantStatus(t, rec, http.StatusOK)
	if strings.Contains(rec.Body.String(), `"queued"`) {
		t.Errorf("a push subscription has a queue's depth: %s", rec.Body)
	}
	wantError(t, f.do("GET", "/v1/subscriptions/"+sub.ID, keyB, ""), http.StatusNotFound, codeNotFound)
	wantError(t, f.do("DELETE", "/v1/subscriptions/"+sub.ID, keyB, ""), http.StatusNotFound, codeNotFound)
	wantStatus(t, f.do("DELETE", "/v1/subscriptions/"+sub.ID, keyA, ""), http.StatusNoContent)
	wantError(t, f.do("GET", "/v1/subscriptions/"+sub.ID, keyA, ""), http.StatusNotFound, codeNotFound)
}

// TestPublishPullAck publishes to a room of a push and two pull
// subscriptions, one of another event type: the deliveries are messages
// that the message endpoints show; the pull subscription leases its
// delivery, acknowledges it; a nack hands one back; a deletion cancels.
func TestPublishPullAck(t *testing.T) {
	f := newFixture(t)
	wantStatus(t, f.do("POST", "/v1/rooms", keyA, `{"name":"orders"}`), http.StatusCreated)
	newSub := func(body string) string {
		rec := f.do("POST", "/v1/rooms/orders/subscriptions", keyA, body)
		wantStatus(t, rec, http.StatusCreated)
		return decode[subscriptionView](t, rec).ID
	}
	push := newSub(`{"type":"push","url":"https://example.com/in"}`)
	pull := newSub(`{"type":"pull","event_types":[{"type":"order.created","version":"1"}]}`)
	other := newSub(`{"type":"pull","event_types":[{"type":"order.paid"}]}`)

	rec := f.do("POST", "/v1/rooms/orders/events", keyA, `{"type":"order.created","version":1,"data":{"id":7},"correlation_id":"c-9"}`)
	wantStatus(t, rec, http.StatusAccepted)
	ev := decode[herald.RoomEventView](t, rec)
	if len(ev.Deliveries) != 2 || ev.Deliveries[0].SubscriptionID != push || ev.Deliveries[1].SubscriptionID != pull {
		t.Fatalf("deliveries %+v, want the push and the first pull subscription's", ev.Deliveries)
	}
	f.run()
	rec = f.do("GET", "/v1/messages/"+ev.Deliveries[0].MessageID, keyA, "")
	wantStatus(t, rec, http.StatusOK)
	if m := decode[herald.MessageView](t, rec); m.Route != "room:orders" || m.Status != herald.StatusDeliverySuccessful || m.Target != push {
		t.Errorf("the push delivery: %+v", m)
	}
	if got := f.list("/v1/messages?correlation_id=c-9", keyA); len(got.Messages) != 2 {
		t.Errorf("messages of the event's correlation id: %d, want 2", len(got.Messages))
	}
	wantStatus(t, f.do("GET", "/v1/rooms/orders/events/"+ev.ID, keyA, ""), http.StatusOK)
	// To chosen subscriptions: those of them that take the event.
	rec = f.do("POST", "/v1/rooms/orders/events", keyA, `{"type":"order.created","version":"2","subscriptions":["`+push+`","`+other+`"]}`)
	wantStatus(t, rec, http.StatusAccepted)
	if ev := decode[herald.RoomEventView](t, rec); len(ev.Deliveries) != 1 || ev.Deliveries[0].SubscriptionID != push {
		t.Fatalf("published to the push and the second pull subscriptions: deliveries %+v, want the push subscription's only", ev.Deliveries)
	}
	for _, subs := range []string{`["nope"]`, `[]`} {
		e := wantError(t, f.do("POST", "/v1/rooms/orders/events", keyA, `{"type":"order.created","subscriptions":`+subs+`}`),
			http.StatusBadRequest, codeInvalidField)
		if !strings.HasPrefix(e.Message, "subscriptions:") {
			t.Errorf("subscriptions %s: %q, want it named", subs, e.Message)
		}
	}
	wantError(t, f.do("GET", "/v1/rooms/orders/events/"+ev.ID, keyB, ""), http.StatusNotFound, codeNotFound)
	wantError(t, f.do("POST", "/v1/rooms/nope/events", keyA, `{"type":"t"}`), http.StatusNotFound, codeNotFound)
	wantError(t, f.do("POST", "/v1/rooms/orders/events", keyA, `{"data":1}`), http.StatusBadRequest, codeMissingField)

	wantError(t, f.do("POST", "/v1/subscriptions/"+push+"/pull", keyA, ""), http.StatusConflict, codeNotPull)
	wantError(t, f.do("POST", "/v1/subscriptions/"+pull+"/pull", keyB, ""), http.StatusNotFound, codeNotFound)
	wantError(t, f.do("POST", "/v1/subscriptions/"+pull+"/pull", keyA, `{"max":5000}`), http.StatusBadRequest, codeInvalidField)
	wantError(t, f.do("POST", "/v1/subscriptions/"+pull+"/pull", keyA, `{"lease":1.5}`), http.StatusBadRequest, codeInvalidField)
	queued := func(sub string) int {
		t.Helper()
		rec := f.do("GET", "/v1/subscriptions/"+sub, keyA, "")
		wantStatus(t, rec, http.StatusOK)
		v := decode[subscriptionView](t, rec)
		if v.Queued == nil {
			t.Fatalf("pull subscription %s without its queue's depth: %s", sub, rec.Body)
		}
		return *v.Queued
	}
	if n := queued(pull); n != 1 {
		t.Errorf("the pull subscription's queue: %d deliveries, want 1", n)
	}
	rec = f.do("POST", "/v1/subscriptions/"+pull+"/pull", keyA, `{"max":10,"lease":60000}`) // a minute, in milliseconds
	wantStatus(t, rec, http.StatusOK)
	got := decode[map[string][]herald.DeliveryView](t, rec)["deliveries"]
	if len(got) != 1 || got[0].ID != ev.Deliveries[1].MessageID || got[0].EventID != ev.ID || string(got[0].Data) != `{"id":7}` ||
		got[0].Type != "order.created" || got[0].Version != "1" || got[0].CorrelationID != "c-9" || got[0].Attempt != 0 {
		t.Fatalf("pulled %+v", got)
	}
	if got[0].LeaseID == "" || !strings.HasPrefix(got[0].LeaseID, got[0].ID+".") {
		t.Fatalf("pulled lease_id %q, want one of delivery %s", got[0].LeaseID, got[0].ID)
	}
	if n := queued(pull); n != 0 {
		t.Errorf("the pull subscription's queue after the pull: %d deliveries, want 0", n)
	}
	rec = f.do("POST", "/v1/subscriptions/"+pull+"/ack", keyA, `{"lease_ids":["`+got[0].LeaseID+`"]}`)
	wantStatus(t, rec, http.StatusOK)
	if a := decode[settledAnswer](t, rec); a.Acked != 1 || a.Lost == nil || len(a.Lost) != 0 {
		t.Errorf("ack: %+v, want 1 acked and none lost", a)
	}

	rec = f.do("POST", "/v1/rooms/orders/events", keyA, `{"type":"order.paid"}`)
	wantStatus(t, rec, http.StatusAccepted)
	paid := decode[herald.RoomEventView](t, rec).Deliveries
	rec = f.do("POST", "/v1/subscriptions/"+other+"/pull", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	leased := decode[map[string][]herald.DeliveryView](t, rec)["deliveries"]
	rec = f.do("POST", "/v1/subscriptions/"+other+"/nack", keyA, `{"lease_ids":["`+leased[0].LeaseID+`"]}`)
	wantStatus(t, rec, http.StatusOK)
	if a := decode[settledAnswer](t, rec); a.Nacked != 1 || len(a.Lost) != 0 {
		t.Errorf("nack: %+v, want 1 nacked", a)
	}
	wantStatus(t, f.do("DELETE", "/v1/subscriptions/"+other, keyA, ""), http.StatusNoContent)
	rec = f.do("GET", "/v1/messages/"+paid[len(paid)-1].MessageID, keyA, "")
	if m := decode[herald.MessageView](t, rec); m.Status != herald.StatusCancelled || m.Timeline[len(m.Timeline)-1].Reason != "subscription deleted" {
		t.Errorf("the nacked delivery after its subscription's deletion: %s", m.Status)
	}
}

// settledAnswer is the answer of an ack or a nack.
type settledAnswer struct {
	Acked  int      `json:"acked"`
	Nacked int      `json:"nacked"`
	Lost   []string `json:"lost"`
}

// TestLateAckOfAnExpiredLeaseIsLost: puller A's lease runs out, the
// delivery comes back and puller B pulls it; A's late ack and nack answer
// its lease lost and change nothing; B's ack acknowledges it. Ack and
// nack by delivery ids, and lease ids that no pull could have given, are
// refused and change nothing.
func TestLateAckOfAnExpiredLeaseIsLost(t *testing.T) {
	f := newFixture(t)
	f.run()
	wantStatus(t, f.do("POST", "/v1/rooms", keyA, `{"name":"orders","delivery":{"delay":"1s"}}`), http.StatusCreated)
	rec := f.do("POST", "/v1/rooms/orders/subscriptions", keyA, `{"type":"pull"}`)
	wantStatus(t, rec, http.StatusCreated)
	sub := decode[subscriptionView](t, rec).ID
	wantStatus(t, f.do("POST", "/v1/rooms/orders/events", keyA, `{"type":"t"}`), http.StatusAccepted)
	pull := func() herald.DeliveryView {
		t.Helper()
		rec := f.do("POST", "/v1/subscriptions/"+sub+"/pull", keyA, `{"max":1,"lease":"10s"}`)
		wantStatus(t, rec, http.StatusOK)
		got := decode[map[string][]herald.DeliveryView](t, rec)["deliveries"]
		if len(got) != 1 {
			t.Fatalf("pulled %d deliveries, want 1", len(got))
		}
		return got[0]
	}
	settle := func(verb, leaseID string) settledAnswer {
		t.Helper()
		rec := f.do("POST", "/v1/subscriptions/"+sub+"/"+verb, keyA, `{"lease_ids":["`+leaseID+`"]}`)
		wantStatus(t, rec, http.StatusOK)
		return decode[settledAnswer](t, rec)
	}
	a := pull()
	f.clock.Advance(10 * time.Second) // A's lease runs out
	f.run()
	f.clock.Advance(time.Second) // and its backoff
	f.run()
	b := pull()
	if b.ID != a.ID || b.LeaseID == a.LeaseID {
		t.Fatalf("B pulled %s under %s, want %s under a lease of its own", b.ID, b.LeaseID, a.ID)
	}
	for _, verb := range []string{"nack", "ack"} {
		if got := settle(verb, a.LeaseID); got.Acked+got.Nacked != 0 || len(got.Lost) != 1 || got.Lost[0] != a.LeaseID {
			t.Errorf("A's late %s: %+v, want its lease lost", verb, got)
		}
	}
	for body, code := range map[string]string{
		`{"ids":["` + b.ID + `"]}`:       codeUnknownField,
		`{}`:                             codeMissingField,
		`{"lease_ids":["` + b.ID + `"]}`: codeInvalidField,
		`{"lease_ids":["` + b.LeaseID + `","` + b.ID + `.x"]}`: codeInvalidField,
	} {
		e := wantError(t, f.do("POST", "/v1/subscriptions/"+sub+"/ack", keyA, body), http.StatusBadRequest, code)
		if !strings.Contains(e.Message, "lease_ids") {
			t.Errorf("ack with %s: %q, want it to name lease_ids", body, e.Message)
		}
	}
	rec = f.do("GET", "/v1/messages/"+b.ID, keyA, "")
	if m := decode[herald.MessageView](t, rec); m.Status != herald.StatusSentToNS || m.Attempt != 2 {
		t.Fatalf("after A's late ack and nack and the refused acks: %s attempt %d, want SENT_TO_NS under B's lease", m.Status, m.Attempt)
	}
	if got := settle("ack", b.LeaseID); got.Acked != 1 || len(got.Lost) != 0 {
		t.Errorf("B's ack: %+v, want 1 acked", got)
	}
	rec = f.do("GET", "/v1/messages/"+b.ID, keyA, "")
	if m := decode[herald.MessageView](t, rec); m.Status != herald.StatusDeliverySuccessful {
		t.Errorf("after B's ack: %s, want DELIVERY_SUCCESSFUL", m.Status)
	}
}
