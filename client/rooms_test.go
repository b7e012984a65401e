package client_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/client"
)

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

func TestRooms(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)

	orders, err := c.CreateRoom(ctx, client.RoomRequest{Name: "orders", Expiration: time.Hour,
		Delivery: herald.DeliveryOverrides{Delay: ptr(250 * time.Millisecond), Attempts: ptr(2)}})
	if err != nil {
		t.Fatal(err)
	}
	want := herald.DeliveryPolicy{Delay: 250 * time.Millisecond, Multiplier: herald.DefaultDelivery.Multiplier, Attempts: 2}
	if orders.Name != "orders" || orders.Expiration != time.Hour || orders.Delivery != want || orders.CreatedAt.IsZero() {
		t.Errorf("created room %+v, want orders, 1h, %+v", orders, want)
	}
	plain, err := c.CreateRoom(ctx, client.RoomRequest{Name: "audit"})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Expiration != 0 || plain.Delivery != herald.DefaultDelivery {
		t.Errorf("room without options: %+v, want no expiration and %+v", plain, herald.DefaultDelivery)
	}

	_, err = c.CreateRoom(ctx, client.RoomRequest{Name: "orders"})
	wantAPIError(t, err, http.StatusConflict, client.CodeRoomExists)
	if !client.IsConflict(err) {
		t.Errorf("IsConflict(%v) = false", err)
	}
	_, err = c.CreateRoom(ctx, client.RoomRequest{Name: "no spaces"})
	if e := wantAPIError(t, err, http.StatusBadRequest, client.CodeInvalidField); e.Field() != "name" {
		t.Errorf("a bad name: field %q, want name", e.Field())
	}

	rooms, err := c.Rooms(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rooms) != 2 || rooms[0].Name != "audit" || rooms[1].Name != "orders" || rooms[1].Delivery != want {
		t.Errorf("Rooms = %+v, want audit and orders, by name", rooms)
	}
	got, err := c.Room(ctx, "orders")
	if err != nil || got.Name != "orders" || got.Expiration != time.Hour || got.Delivery != want || got.CreatedAt.Sub(orders.CreatedAt).Abs() > time.Millisecond {
		t.Errorf("Room = %+v, %v; want %+v", got, err, orders)
	}
	// Another tenant sees none of them.
	other := newClient(t, s.URL, keyOther)
	if rooms, err := other.Rooms(ctx); err != nil || len(rooms) != 0 {
		t.Errorf("another tenant's Rooms = %+v, %v; want none", rooms, err)
	}
	_, err = other.Room(ctx, "orders")
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)

	if err := c.DeleteRoom(ctx, "audit"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Room(ctx, "audit")
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)
	err = c.DeleteRoom(ctx, "audit")
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)
}

func TestSubscriptionsAndPublish(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)
	if _, err := c.CreateRoom(ctx, client.RoomRequest{Name: "orders"}); err != nil {
		t.Fatal(err)
	}

	push, err := c.CreateSubscription(ctx, "orders", client.SubscriptionRequest{
		Type: herald.SubscriptionPush, URL: s.endpoint.URL + "/hook",
		EventTypes: []herald.EventType{{Type: "order.created", Version: "1"}, {Type: "order.paid"}},
		Delivery:   herald.DeliveryOverrides{Multiplier: ptr(3.0)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if push.ID == "" || push.Room != "orders" || push.Type != herald.SubscriptionPush || push.URL != s.endpoint.URL+"/hook" ||
		!slices.Equal(push.EventTypes, []herald.EventType{{Type: "order.created", Version: "1"}, {Type: "order.paid"}}) ||
		push.Delivery.Multiplier == nil || *push.Delivery.Multiplier != 3 || push.Delivery.Delay != nil || push.Delivery.Attempts != nil ||
		push.CreatedAt.IsZero() {
		t.Errorf("push subscription %+v does not mirror the request", push)
	}
	pull, err := c.CreateSubscription(ctx, "orders", client.SubscriptionRequest{Type: herald.SubscriptionPull})
	if err != nil {
		t.Fatal(err)
	}
	if pull.Type != herald.SubscriptionPull || pull.URL != "" || len(pull.EventTypes) != 0 ||
		pull.Delivery != (herald.DeliveryOverrides{}) {
		t.Errorf("pull subscription %+v: want no url, no event types, no overrides", pull)
	}

	_, err = c.CreateSubscription(ctx, "orders", client.SubscriptionRequest{Type: herald.SubscriptionPush})
	if e := wantAPIError(t, err, http.StatusBadRequest, client.CodeInvalidField); e.Field() != "url" {
		t.Errorf("a push subscription without url: field %q, want url", e.Field())
	}
	_, err = c.CreateSubscription(ctx, "nowhere", client.SubscriptionRequest{Type: herald.SubscriptionPull})
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)

	subs, err := c.Subscriptions(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 2 || subs[0].ID != push.ID || subs[1].ID != pull.ID {
		t.Errorf("Subscriptions = %+v, want the push one then the pull one", subs)
	}
	got, err := c.Subscription(ctx, push.ID)
	if err != nil || got.ID != push.ID || !slices.Equal(got.EventTypes, push.EventTypes) || *got.Delivery.Multiplier != 3 {
		t.Errorf("Subscription = %+v, %v; want %+v", got, err, push)
	}
	_, err = newClient(t, s.URL, keyOther).Subscription(ctx, push.ID)
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)

	// An event both take: a delivery each, the push one delivered by the
	// server to the endpoint.
	ev, err := c.Publish(ctx, "orders", client.PublishRequest{Type: "order.created", Version: "1",
		Data: json.RawMessage(`{"order":42}`), CorrelationID: "o-42"})
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID == "" || ev.Room != "orders" || ev.Type != "order.created" || ev.Version != "1" || string(ev.Data) != `{"order":42}` ||
		ev.CorrelationID != "o-42" || ev.CreatedAt.IsZero() || len(ev.Deliveries) != 2 {
		t.Fatalf("published event %+v", ev)
	}
	bySub := map[string]string{}
	for _, d := range ev.Deliveries {
		bySub[d.SubscriptionID] = d.MessageID
	}
	if bySub[push.ID] == "" || bySub[pull.ID] == "" {
		t.Fatalf("deliveries %+v, want one to %s and one to %s", ev.Deliveries, push.ID, pull.ID)
	}
	m := waitFor(t, c, bySub[push.ID], herald.StatusDeliverySuccessful)
	if m.Route != herald.RoomRoutePrefix+"orders" || m.Target != push.ID || m.CorrelationID != "o-42" {
		t.Errorf("the push delivery's message: %+v", m)
	}
	again, err := c.Event(ctx, "orders", ev.ID)
	if err != nil || again.ID != ev.ID || string(again.Data) != string(ev.Data) || !slices.Equal(again.Deliveries, ev.Deliveries) {
		t.Errorf("Event = %+v, %v; want %+v", again, err, ev)
	}
	_, err = c.Event(ctx, "orders", "nope")
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)

	// An event of another version: the pull subscription alone takes it;
	// no data is null.
	ev2, err := c.Publish(ctx, "orders", client.PublishRequest{Type: "order.created", Version: "2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev2.Deliveries) != 1 || ev2.Deliveries[0].SubscriptionID != pull.ID || string(ev2.Data) != "null" {
		t.Errorf("an event of version 2: %+v, want one delivery, to %s, data null", ev2, pull.ID)
	}
	_, err = c.Publish(ctx, "orders", client.PublishRequest{})
	if e := wantAPIError(t, err, http.StatusBadRequest, client.CodeMissingField); e.Field() != "type" {
		t.Errorf("a publish without type: field %q, want type", e.Field())
	}

	// Two deliveries wait for the pull subscription; the room counts its two subscriptions.
	if got, err := c.Subscription(ctx, pull.ID); err != nil || got.Queued == nil || *got.Queued != 2 {
		t.Errorf("Subscription of the pull one = %+v, %v; want 2 queued", got, err)
	}
	if got, err := c.Subscription(ctx, push.ID); err != nil || got.Queued != nil {
		t.Errorf("Subscription of the push one = %+v, %v; want no queue", got, err)
	}
	if r, err := c.Room(ctx, "orders"); err != nil || r.Subscriptions != 2 {
		t.Errorf("Room = %+v, %v; want 2 subscriptions", r, err)
	}

	// Deleting the pull subscription cancels its waiting deliveries.
	if err := c.DeleteSubscription(ctx, pull.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Subscription(ctx, pull.ID)
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)
	if m, err := c.Get(ctx, bySub[pull.ID]); err != nil || m.Status != herald.StatusCancelled {
		t.Errorf("the deleted subscription's delivery: %s, %v; want CANCELLED", m.Status, err)
	}
	err = c.DeleteSubscription(ctx, pull.ID)
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)
}

func TestPullAckNack(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)
	if _, err := c.CreateRoom(ctx, client.RoomRequest{Name: "jobs", Delivery: herald.DeliveryOverrides{Delay: ptr(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	sub, err := c.CreateSubscription(ctx, "jobs", client.SubscriptionRequest{Type: herald.SubscriptionPull})
	if err != nil {
		t.Fatal(err)
	}
	once, err := c.CreateSubscription(ctx, "jobs", client.SubscriptionRequest{Type: herald.SubscriptionPull,
		Delivery: herald.DeliveryOverrides{Attempts: ptr(0)}})
	if err != nil {
		t.Fatal(err)
	}
	push, err := c.CreateSubscription(ctx, "jobs", client.SubscriptionRequest{Type: herald.SubscriptionPush, URL: s.endpoint.URL,
		EventTypes: []herald.EventType{{Type: "never"}}})
	if err != nil {
		t.Fatal(err)
	}

	if got, err := c.Pull(ctx, sub.ID, client.PullRequest{}); err != nil || got == nil || len(got) != 0 {
		t.Errorf("a pull with nothing waiting: %v, %v; want an empty slice", got, err)
	}
	var events []string
	for i := range 3 {
		ev, err := c.Publish(ctx, "jobs", client.PublishRequest{Type: "job", Data: json.RawMessage([]byte{'0' + byte(i)})})
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev.ID)
	}

	got, err := c.Pull(ctx, sub.ID, client.PullRequest{Max: 2, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].EventID != events[0] || got[1].EventID != events[1] || string(got[0].Data) != "0" ||
		got[0].Room != "jobs" || got[0].Type != "job" || got[0].Attempt != 0 {
		t.Fatalf("Pull max 2 = %+v, want the first two events' deliveries, oldest first", got)
	}
	if m, err := c.Get(ctx, got[0].ID); err != nil || m.Status != herald.StatusSentToNS {
		t.Errorf("a leased delivery: %s, %v; want SENT_TO_NS", m.Status, err)
	}
	if got[0].LeaseID == "" || got[0].LeaseID == got[1].LeaseID {
		t.Fatalf("lease ids %q and %q, want one for each delivery", got[0].LeaseID, got[1].LeaseID)
	}
	if n, lost, err := c.Ack(ctx, sub.ID, []string{got[0].LeaseID}); err != nil || n != 1 || lost == nil || len(lost) != 0 {
		t.Errorf("Ack = %d, %v, %v; want 1, none lost", n, lost, err)
	}
	if n, lost, err := c.Ack(ctx, sub.ID, []string{got[0].LeaseID}); err != nil || n != 0 || !slices.Equal(lost, []string{got[0].LeaseID}) {
		t.Errorf("Ack again = %d, %v, %v; want 0 and the lease lost", n, lost, err)
	}
	_, _, err = c.Ack(ctx, sub.ID, []string{got[1].ID})
	if e := wantAPIError(t, err, http.StatusBadRequest, client.CodeInvalidField); !strings.HasPrefix(e.Field(), "lease_ids") {
		t.Errorf("an ack by the delivery's id: field %q, want lease_ids", e.Field())
	}
	waitFor(t, c, got[0].ID, herald.StatusDeliverySuccessful)
	if n, lost, err := c.Nack(ctx, sub.ID, []string{got[1].LeaseID}); err != nil || n != 1 || len(lost) != 0 {
		t.Errorf("Nack = %d, %v, %v; want 1", n, lost, err)
	}
	waitFor(t, c, got[1].ID, herald.StatusToRetry) // an hour's backoff
	if n, lost, err := c.Ack(ctx, sub.ID, nil); err != nil || n != 0 || len(lost) != 0 {
		t.Errorf("Ack of nothing = %d, %v, %v; want 0", n, lost, err)
	}
	rest, err := c.Pull(ctx, sub.ID, client.PullRequest{})
	if err != nil || len(rest) != 1 || rest[0].EventID != events[2] {
		t.Errorf("Pull = %+v, %v; want the third event's delivery alone", rest, err)
	}

	// A subscription of no redelivery: a nack fails the delivery.
	first, err := c.Pull(ctx, once.ID, client.PullRequest{Max: 1})
	if err != nil || len(first) != 1 {
		t.Fatalf("Pull = %+v, %v; want one delivery", first, err)
	}
	if n, _, err := c.Nack(ctx, once.ID, []string{first[0].LeaseID}); err != nil || n != 1 {
		t.Errorf("Nack = %d, %v; want 1", n, err)
	}
	waitFor(t, c, first[0].ID, herald.StatusDeliveryFailed)

	_, err = c.Pull(ctx, push.ID, client.PullRequest{})
	wantAPIError(t, err, http.StatusConflict, client.CodeNotPull)
	_, _, err = c.Ack(ctx, push.ID, []string{first[0].LeaseID})
	wantAPIError(t, err, http.StatusConflict, client.CodeNotPull)
	_, err = c.Pull(ctx, "unknown", client.PullRequest{})
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)
	_, err = c.Pull(ctx, sub.ID, client.PullRequest{Max: herald.MaxPull + 1})
	if e := wantAPIError(t, err, http.StatusBadRequest, client.CodeInvalidField); e.Field() != "max" {
		t.Errorf("a pull of too many: field %q, want max", e.Field())
	}
	_, err = c.Pull(ctx, sub.ID, client.PullRequest{Lease: herald.MaxLease + time.Second})
	if e := wantAPIError(t, err, http.StatusBadRequest, client.CodeInvalidField); e.Field() != "lease" {
		t.Errorf("a pull of too long a lease: field %q, want lease", e.Field())
	}
}

// TestRoomsRetries: the calls a repeat cannot harm are retried on 503
// store_unavailable, the others are not.
func TestRoomsRetries(t *testing.T) {
	rooms := &fault{prefix: "/v1/rooms"}
	subs := &fault{prefix: "/v1/subscriptions"}
	s := newServer(t, func(h http.Handler) http.Handler { return rooms.wrap(subs.wrap(h)) })
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)

	rooms.set(2, "0")
	if _, err := c.CreateRoom(ctx, client.RoomRequest{Name: "r"}); err != nil || rooms.count() != 3 {
		t.Fatalf("CreateRoom after two 503s: %v after %d tries, want success after 3", err, rooms.count())
	}
	rooms.set(1, "0")
	if _, err := c.Rooms(ctx); err != nil || rooms.count() != 2 {
		t.Errorf("Rooms after a 503: %v after %d tries, want success after 2", err, rooms.count())
	}
	rooms.set(1, "0")
	_, err := c.CreateSubscription(ctx, "r", client.SubscriptionRequest{Type: herald.SubscriptionPull})
	wantAPIError(t, err, http.StatusServiceUnavailable, client.CodeStoreUnavailable)
	if rooms.count() != 1 {
		t.Errorf("CreateSubscription: %d tries, want 1", rooms.count())
	}
	sub, err := c.CreateSubscription(ctx, "r", client.SubscriptionRequest{Type: herald.SubscriptionPull})
	if err != nil {
		t.Fatal(err)
	}
	rooms.set(1, "0")
	_, err = c.Publish(ctx, "r", client.PublishRequest{Type: "t"})
	wantAPIError(t, err, http.StatusServiceUnavailable, client.CodeStoreUnavailable)
	if rooms.count() != 1 {
		t.Errorf("Publish: %d tries, want 1", rooms.count())
	}
	if _, err := c.Publish(ctx, "r", client.PublishRequest{Type: "t"}); err != nil {
		t.Fatal(err)
	}

	subs.set(1, "0")
	_, err = c.Pull(ctx, sub.ID, client.PullRequest{})
	wantAPIError(t, err, http.StatusServiceUnavailable, client.CodeStoreUnavailable)
	if subs.count() != 1 {
		t.Errorf("Pull: %d tries, want 1", subs.count())
	}
	got, err := c.Pull(ctx, sub.ID, client.PullRequest{})
	if err != nil || len(got) != 1 {
		t.Fatalf("Pull = %+v, %v; want one delivery", got, err)
	}
	subs.set(2, "0")
	if n, _, err := c.Ack(ctx, sub.ID, []string{got[0].LeaseID}); err != nil || n != 1 || subs.count() != 3 {
		t.Errorf("Ack after two 503s: %d, %v after %d tries; want 1 after 3", n, err, subs.count())
	}
	subs.set(1, "0")
	if err := c.DeleteSubscription(ctx, sub.ID); err != nil || subs.count() != 2 {
		t.Errorf("DeleteSubscription after a 503: %v after %d tries, want success after 2", err, subs.count())
	}
}

// TestRoomViewsRoundTrip: the views marshal to the API's shapes, which
// they read back.
func TestRoomViewsRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	room := roundTrip(t, client.Room{Name: "r", Expiration: time.Hour,
		Delivery: herald.DeliveryPolicy{Delay: time.Second, Multiplier: 2, Attempts: 4}, CreatedAt: at, Subscriptions: 3})
	if want := `{"name":"r","expiration":"1h0m0s","delivery":{"delay":"1s","multiplier":2,"attempts":4},"created_at":"2026-01-02T03:04:05Z","subscriptions":3}`; room != want {
		t.Errorf("room JSON %s, want %s", room, want)
	}
	sub := roundTrip(t, client.Subscription{ID: "s", Room: "r", Type: herald.SubscriptionPush, URL: "http://x/", Secret: "whsec_x", SecretEnv: "S",
		EventTypes: []herald.EventType{{Type: "a", Version: "1"}, {Type: "b"}}, Delivery: herald.DeliveryOverrides{Attempts: ptr(0)}, CreatedAt: at})
	if want := `{"id":"s","room":"r","type":"push","url":"http://x/","secret":"whsec_x","secret_env":"S","event_types":[{"type":"a","version":"1"},{"type":"b"}],"delivery":{"attempts":0},"created_at":"2026-01-02T03:04:05Z"}`; sub != want {
		t.Errorf("subscription JSON %s, want %s", sub, want)
	}
	pull := roundTrip(t, client.Subscription{ID: "p", Room: "r", Type: herald.SubscriptionPull, CreatedAt: at, Queued: ptr(7)})
	if want := `{"id":"p","room":"r","type":"pull","event_types":[],"delivery":{},"created_at":"2026-01-02T03:04:05Z","queued":7}`; pull != want {
		t.Errorf("pull subscription JSON %s, want %s", pull, want)
	}
	ev := roundTrip(t, client.Event{ID: "e", Room: "r", Type: "t", Data: json.RawMessage(`{"a":1}`), CreatedAt: at,
		Deliveries: []herald.Delivery{{SubscriptionID: "s", MessageID: "m"}}})
	if want := `{"event_id":"e","room":"r","type":"t","version":"","data":{"a":1},"correlation_id":"","created_at":"2026-01-02T03:04:05Z","deliveries":[{"subscription_id":"s","message_id":"m"}]}`; ev != want {
		t.Errorf("event JSON %s, want %s", ev, want)
	}
}

// roundTrip marshals v, fails t unless it reads back as v, and returns its JSON.
func roundTrip[T any](t *testing.T, v T) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back T
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("read back %s: %v", data, err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Errorf("%s reads back as %+v, want %+v", data, back, v)
	}
	return string(data)
}
