package httpapi

import (
	"github.com/heraldmq/herald/stdwebhook"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
)

func TestRoomsCRUD(t *testing.T) {
	f := newFixture(t)
	rec := f.do("POST", "/v1/rooms", keyA, `{"name":"orders","expiration":"90s","delivery":{"delay":"2s","attempts":0}}`)
	wantStatus(t, rec, http.StatusCreated)
	room := decode[roomView](t, rec)
	if room.Name != "orders" || room.Expiration != "1m30s" || *room.Delivery.Delay != "2s" || *room.Delivery.Multiplier != 2 ||
		*room.Delivery.Attempts != 0 || rec.Header().Get("Location") != "/v1/rooms/orders" {
		t.Errorf("created room %+v", room)
	}
	wantError(t, f.do("POST", "/v1/rooms", keyA, `{"name":"orders"}`), http.StatusConflict, codeRoomExists)
	wantStatus(t, f.do("POST", "/v1/rooms", keyB, `{"name":"orders","expiration":"0"}`), http.StatusCreated)
	wantStatus(t, f.do("POST", "/v1/rooms", keyA, `{"name":"audit"}`), http.StatusCreated)

	for _, body := range []string{
		`{"name":"no spaces"}`, `{"name":"a","expiration":"soon"}`, `{"name":"a","expiration":"-1s"}`,
		`{"name":"a","delivery":{"multiplier":0.5}}`, `{"name":"a","delivery":{"attempts":-1}}`, `{"name":"a","delivery":{"delay":"x"}}`,
		// The stores keep milliseconds: 500µs would be kept as 0, never.
		`{"name":"a","expiration":"500us"}`, `{"name":"a","expiration":"1.5ms"}`, `{"name":"a","delivery":{"delay":"2500us"}}`,
	} {
		wantError(t, f.do("POST", "/v1/rooms", keyA, body), http.StatusBadRequest, codeInvalidField)
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
	if subs := decode[map[string][]subscriptionView](t, rec)["subscriptions"]; len(subs) != 2 || subs[0].ID != sub.ID {
		t.Errorf("subscriptions: %+v", subs)
	}
	wantStatus(t, f.do("GET", "/v1/subscriptions/"+sub.ID, keyA, ""), http.StatusOK)
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
	wantError(t, f.do("GET", "/v1/rooms/orders/events/"+ev.ID, keyB, ""), http.StatusNotFound, codeNotFound)
	wantError(t, f.do("POST", "/v1/rooms/nope/events", keyA, `{"type":"t"}`), http.StatusNotFound, codeNotFound)
	wantError(t, f.do("POST", "/v1/rooms/orders/events", keyA, `{"data":1}`), http.StatusBadRequest, codeMissingField)

	wantError(t, f.do("POST", "/v1/subscriptions/"+push+"/pull", keyA, ""), http.StatusConflict, codeNotPull)
	wantError(t, f.do("POST", "/v1/subscriptions/"+pull+"/pull", keyB, ""), http.StatusNotFound, codeNotFound)
	wantError(t, f.do("POST", "/v1/subscriptions/"+pull+"/pull", keyA, `{"max":5000}`), http.StatusBadRequest, codeInvalidField)
	rec = f.do("POST", "/v1/subscriptions/"+pull+"/pull", keyA, `{"max":10,"lease":"1m"}`)
	wantStatus(t, rec, http.StatusOK)
	got := decode[map[string][]herald.DeliveryView](t, rec)["deliveries"]
	if len(got) != 1 || got[0].ID != ev.Deliveries[1].MessageID || got[0].EventID != ev.ID || string(got[0].Data) != `{"id":7}` ||
		got[0].Type != "order.created" || got[0].Version != "1" || got[0].CorrelationID != "c-9" || got[0].Attempt != 0 {
		t.Fatalf("pulled %+v", got)
	}
	rec = f.do("POST", "/v1/subscriptions/"+pull+"/ack", keyA, `{"ids":["`+got[0].ID+`"]}`)
	wantStatus(t, rec, http.StatusOK)
	if n := decode[map[string]int](t, rec)["acked"]; n != 1 {
		t.Errorf("acked %d, want 1", n)
	}

	rec = f.do("POST", "/v1/rooms/orders/events", keyA, `{"type":"order.paid"}`)
	wantStatus(t, rec, http.StatusAccepted)
	paid := decode[herald.RoomEventView](t, rec).Deliveries
	rec = f.do("POST", "/v1/subscriptions/"+other+"/pull", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	rec = f.do("POST", "/v1/subscriptions/"+other+"/nack", keyA, `{"ids":["`+paid[len(paid)-1].MessageID+`"]}`)
	wantStatus(t, rec, http.StatusOK)
	if n := decode[map[string]int](t, rec)["nacked"]; n != 1 {
		t.Errorf("nacked %d, want 1", n)
	}
	wantStatus(t, f.do("DELETE", "/v1/subscriptions/"+other, keyA, ""), http.StatusNoContent)
	rec = f.do("GET", "/v1/messages/"+paid[len(paid)-1].MessageID, keyA, "")
	if m := decode[herald.MessageView](t, rec); m.Status != herald.StatusCancelled || m.Timeline[len(m.Timeline)-1].Reason != "subscription deleted" {
		t.Errorf("the nacked delivery after its subscription's deletion: %s", m.Status)
	}
}
