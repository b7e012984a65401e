package herald_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/room"
	"github.com/heraldmq/herald/stdwebhook"
	"github.com/heraldmq/herald/store/sqlite"
)

// roomRig is a rig whose engine serves rooms: the prefix route of the
// rooms' deliveries, with the room carrier, and no other route.
func roomRig(t *testing.T) *rig {
	t.Helper()
	return newRigWith(t, func(c *herald.Config) { c.Routes = append(c.Routes, roomRoute(t, c.Store)) }, nil)
}

// loopback allows the rooms' carrier to reach the tests' endpoints, on
// this machine's loopback addresses.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// roomRoute is the route of the rooms' deliveries on store, allowed to
// reach the loopback addresses.
func roomRoute(t *testing.T, store herald.Store) herald.Route {
	t.Helper()
	c, err := room.New(room.Config{Store: store, Allow: loopback})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := herald.ProfilePolicy(herald.ProfileRoom)
	return herald.Route{Name: herald.RoomRoutePrefix, Prefix: true, Carrier: c, Policy: p}
}

func (r *rig) createRoom(req herald.RoomRequest) *herald.Room {
	r.t.Helper()
	rm, err := r.eng.CreateRoom(context.Background(), "acme", req)
	if err != nil {
		r.t.Fatal(err)
	}
	return rm
}

func (r *rig) subscribe(room string, req herald.SubscriptionRequest) *herald.Subscription {
	r.t.Helper()
	s, err := r.eng.CreateSubscription(context.Background(), "acme", room, req)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *rig) publish(room string, req herald.PublishRequest) *herald.RoomEvent {
	r.t.Helper()
	ev, err := r.eng.Publish(context.Background(), "acme", room, req)
	if err != nil {
		r.t.Fatal(err)
	}
	return ev
}

func (r *rig) pull(sub string, max int, lease time.Duration) []*herald.Message {
	r.t.Helper()
	msgs, err := r.eng.Pull(context.Background(), "acme", sub, max, lease)
	if err != nil {
		r.t.Fatal(err)
	}
	return msgs
}

// delivery is the delivery of ev to subscription sub.
func delivery(t *testing.T, ev *herald.RoomEvent, sub string) string {
	t.Helper()
	for _, d := range ev.Deliveries {
		if d.SubscriptionID == sub {
			return d.MessageID
		}
	}
	t.Fatalf("event %s has no delivery to %s", ev.ID, sub)
	return ""
}

func ptr[T any](v T) *T { return &v }

// TestRoomFanOut publishes to a room of three subscriptions, two of which
// take the event's type and version: exactly two deliveries, each a
// message of the room's route with its own timeline, found by the
// event's correlation id; the third subscription gets none.
func TestRoomFanOut(t *testing.T) {
	r := roomRig(t)
	r.start()
	r.createRoom(herald.RoomRequest{Name: "orders"})
	pull := func(types ...herald.EventType) *herald.Subscription {
		return r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull, EventTypes: types})
	}
	exact := pull(herald.EventType{Type: "order.created", Version: "1"})
	anyVersion := pull(herald.EventType{Type: "order.paid", Version: "1"}, herald.EventType{Type: "order.created"})
	neither := pull(herald.EventType{Type: "order.created", Version: "2"}, herald.EventType{Type: "order.paid", Version: "1"})

	ev := r.publish("orders", herald.PublishRequest{Type: "order.created", Version: "1", CorrelationID: "c-1", Data: json.RawMessage(`{"order":7}`)})
	r.settle()
	var subs []string
	for _, d := range ev.Deliveries {
		subs = append(subs, d.SubscriptionID)
	}
	if want := []string{exact.ID, anyVersion.ID}; !slices.Equal(subs, want) {
		t.Fatalf("deliveries to %v, want %v (not %s)", subs, want, neither.ID)
	}
	msgs, _, err := r.eng.List(context.Background(), "acme", herald.Query{CorrelationID: "c-1"})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("messages of correlation c-1: %d %v, want 2", len(msgs), err)
	}
	for _, d := range ev.Deliveries {
		m := r.get(d.MessageID)
		if m.Route != "room:orders" || m.Target != d.SubscriptionID || m.Status != herald.StatusQueued || m.Text != `{"order":7}` ||
			m.Params["event_id"] != ev.ID || m.Params["type"] != "order.created" || m.Params["version"] != "1" || len(m.Timeline) != 1 {
			t.Errorf("delivery %s: %+v", d.MessageID, m)
		}
	}
	if x, err := r.eng.Explain(context.Background(), "acme", ev.Deliveries[0].MessageID); err != nil || x.Reason != "awaiting_carrier" {
		t.Errorf("explain of a pull delivery: %+v %v, want awaiting_carrier (its subscriber)", x, err)
	}
	if got, _, _ := r.eng.List(context.Background(), "acme", herald.Query{Target: neither.ID}); len(got) != 0 {
		t.Errorf("the third subscription has %d deliveries, want none", len(got))
	}
	stored, err := r.eng.RoomEvent(context.Background(), "acme", ev.ID)
	if err != nil || !slices.Equal(stored.Deliveries, ev.Deliveries) {
		t.Errorf("RoomEvent: %+v %v, want the deliveries made", stored, err)
	}
}

// hookSink is a push endpoint that fails every request and records when
// each came, on the rig's clock, by subscription.
type hookSink struct {
	r      *rig
	status int
	mu     sync.Mutex
	got    map[string][]received // by X-Herald-Target
}

type received struct {
	at     time.Duration // since t0
	body   herald.DeliveryView
	header http.Header
	raw    []byte
}

func newHookSink(t *testing.T, r *rig, status int) (*hookSink, string) {
	s := &hookSink{r: r, status: status, got: map[string][]received{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func (s *hookSink) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	var body herald.DeliveryView
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	sub := req.Header.Get("X-Herald-Target")
	s.got[sub] = append(s.got[sub], received{at: s.r.clock.Now().Sub(t0), body: body, header: req.Header.Clone(), raw: raw})
	s.mu.Unlock()
	w.WriteHeader(s.status)
}

func (s *hookSink) of(sub string) []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got[sub])
}

// TestRoomBackoff pushes to an endpoint that always fails, for a room of
// delay 1 s, multiplier 2 and 4 redeliveries, and for a subscription of it
// that overrides the multiplier to 3: on the fake clock, the sends come at
// delay × multiplier^attempt after each other, as each formula says, with
// the same delivery id and the attempt counting up, signed with the
// subscription's secret; then the delivery is a dead letter.
func TestRoomBackoff(t *testing.T) {
	r := roomRig(t)
	sink, url := newHookSink(t, r, http.StatusServiceUnavailable)
	r.start()
	r.createRoom(herald.RoomRequest{Name: "orders", Delivery: herald.DeliveryOverrides{Delay: ptr(time.Second), Multiplier: ptr(2.0), Attempts: ptr(4)}})
	double := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPush, URL: url, Secret: "whsec_c2VjcmV0LWtleS1vZi0yNC1ieXRlcy1hdC1sZWFzdA=="})
	triple := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPush, URL: url, Delivery: herald.DeliveryOverrides{Multiplier: ptr(3.0)}})
	ev := r.publish("orders", herald.PublishRequest{Type: "order.created", Data: json.RawMessage(`{"n":1}`)})
	for range 45 {
		r.advance(time.Second)
	}
	for _, c := range []struct {
		sub  *herald.Subscription
		want []time.Duration
	}{
		{double, []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second}},  // +1, +2, +4, +8
		{triple, []time.Duration{0, 1 * time.Second, 4 * time.Second, 13 * time.Second, 40 * time.Second}}, // +1, +3, +9, +27
	} {
		got := sink.of(c.sub.ID)
		var times []time.Duration
		for i, g := range got {
			times = append(times, g.at)
			if g.body.ID != delivery(t, ev, c.sub.ID) || g.body.EventID != ev.ID || g.body.Room != "orders" || g.body.Attempt != i ||
				string(g.body.Data) != `{"n":1}` || g.body.Type != "order.created" {
				t.Errorf("%s send %d: %+v", c.sub.ID, i, g.body)
			}
			// The headers say the redeliveries so far and the backoff
			// waited before this one: the gap since the send before.
			delay := time.Duration(0)
			if i > 0 {
				delay = c.want[i] - c.want[i-1]
			}
			if a, d := g.header.Get("X-Herald-Attempt"), g.header.Get("X-Herald-Delivery-Delay-Ms"); a != strconv.Itoa(i) || d != strconv.FormatInt(delay.Milliseconds(), 10) {
				t.Errorf("%s send %d: X-Herald-Attempt %q, X-Herald-Delivery-Delay-Ms %q; want %d and %d", c.sub.ID, i, a, d, i, delay.Milliseconds())
			}
			signed := stdwebhook.Verify([]byte("secret-key-of-24-bytes-at-least"), g.header, g.raw, time.Now(), time.Hour) == nil
			if signed != (c.sub == double) {
				t.Errorf("%s send %d: signed with the subscription's secret = %v", c.sub.ID, i, signed)
			}
		}
		if !slices.Equal(times, c.want) {
			t.Errorf("subscription %s: sends at %v, want %v", c.sub.ID, times, c.want)
		}
		m := r.get(delivery(t, ev, c.sub.ID))
		if m.Status != herald.StatusDeliveryFailed || m.Attempt != 5 || m.MaxAttempts != 5 {
			t.Errorf("delivery %s: %s after %d of %d attempts, want DELIVERY_FAILED after 5 of 5", m.ID, m.Status, m.Attempt, m.MaxAttempts)
		}
	}
}

// TestRoomAttemptsZero: a subscription with attempts 0 sends a failing
// push once, and never again.
func TestRoomAttemptsZero(t *testing.T) {
	r := roomRig(t)
	sink, url := newHookSink(t, r, http.StatusInternalServerError)
	r.start()
	r.createRoom(herald.RoomRequest{Name: "orders", Delivery: herald.DeliveryOverrides{Attempts: ptr(3)}})
	once := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPush, URL: url, Delivery: herald.DeliveryOverrides{Attempts: ptr(0)}})
	ev := r.publish("orders", herald.PublishRequest{Type: "t"})
	r.settle()
	for range 10 {
		r.advance(time.Hour)
	}
	if got := sink.of(once.ID); len(got) != 1 {
		t.Errorf("%d sends, want 1", len(got))
	}
	m := r.get(delivery(t, ev, once.ID))
	if m.Status != herald.StatusDeliveryFailed || m.Attempt != 1 || m.MaxAttempts != 1 {
		t.Errorf("delivery: %s after %d of %d attempts, want DELIVERY_FAILED after 1 of 1", m.Status, m.Attempt, m.MaxAttempts)
	}
}

// TestRoomExpiry: a room whose deliveries expire after 10 s. A pull
// subscription that never pulls finds nothing to pull after it, and the
// delivery ended DELIVERY_FAILED "expired"; a push subscription whose
// endpoint fails (a redelivery every 4 s) is not pushed again after it.
func TestRoomExpiry(t *testing.T) {
	r := roomRig(t)
	sink, url := newHookSink(t, r, http.StatusServiceUnavailable)
	r.start()
	r.createRoom(herald.RoomRequest{Name: "orders", Expiration: 10 * time.Second,
		Delivery: herald.DeliveryOverrides{Delay: ptr(4 * time.Second), Multiplier: ptr(1.0), Attempts: ptr(100)}})
	pull := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
	push := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPush, URL: url})
	ev := r.publish("orders", herald.PublishRequest{Type: "t"})
	for _, d := range []time.Duration{4 * time.Second, 4 * time.Second, 1999 * time.Millisecond} {
		r.advance(d)
	}
	if m := r.get(delivery(t, ev, pull.ID)); m.Status != herald.StatusQueued {
		t.Fatalf("before the expiration: %s, want QUEUED", m.Status)
	}
	r.advance(time.Millisecond)
	if got := r.pull(pull.ID, 10, time.Minute); len(got) != 0 {
		t.Errorf("pulled %d after the expiration, want none", len(got))
	}
	for _, sub := range []string{pull.ID, push.ID} {
		m := r.get(delivery(t, ev, sub))
		if last := m.Timeline[len(m.Timeline)-1]; m.Status != herald.StatusDeliveryFailed || last.Reason != "expired" {
			t.Errorf("delivery to %s: %s %q, want DELIVERY_FAILED \"expired\"", sub, m.Status, last.Reason)
		}
	}
	r.advance(time.Minute)
	var times []time.Duration
	for _, g := range sink.of(push.ID) {
		times = append(times, g.at)
	}
	if want := []time.Duration{0, 4 * time.Second, 8 * time.Second}; !slices.Equal(times, want) {
		t.Errorf("pushes at %v, want %v (none after the expiration)", times, want)
	}
}

// TestRoomPull leases, acknowledges and hands back deliveries of a pull
// subscription, and lets a lease run out: no delivery is leased twice at
// once, a handed-back or expired one comes back after the subscription's
// backoff, and an acknowledged one ends DELIVERY_SUCCESSFUL.
func TestRoomPull(t *testing.T) {
	r := roomRig(t)
	r.start()
	ctx := context.Background()
	r.createRoom(herald.RoomRequest{Name: "orders", Delivery: herald.DeliveryOverrides{Delay: ptr(time.Second), Multiplier: ptr(2.0), Attempts: ptr(3)}})
	sub := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
	var evs []*herald.RoomEvent
	for range 3 {
		evs = append(evs, r.publish("orders", herald.PublishRequest{Type: "t", Data: json.RawMessage(`1`)}))
	}
	acked, nacked, expired := delivery(t, evs[0], sub.ID), delivery(t, evs[1], sub.ID), delivery(t, evs[2], sub.ID)
	r.settle()

	first := r.pull(sub.ID, 2, 30*time.Second)
	if got := ids(first); !slices.Equal(got, []string{acked, nacked}) {
		t.Fatalf("first pull: %v, want the two oldest", got)
	}
	if v := first[0].DeliveryView(); v.Attempt != 0 || v.EventID != evs[0].ID || string(v.Data) != "1" {
		t.Errorf("first pull's view: %+v", v)
	}
	if got := ids(r.pull(sub.ID, 10, 30*time.Second)); !slices.Equal(got, []string{expired}) {
		t.Fatalf("second pull: %v, want the third only", got)
	}
	if got := r.pull(sub.ID, 10, 30*time.Second); len(got) != 0 {
		t.Fatalf("third pull: %v, want none: all are leased", ids(got))
	}

	if first[0].LeaseID() == "" || first[0].LeaseID() == first[1].LeaseID() {
		t.Fatalf("lease ids %q and %q, want one of its own for each delivery", first[0].LeaseID(), first[1].LeaseID())
	}
	nobody := acked + ".0123456789abcdef" // the delivery, a lease it never had
	if n, lost, err := r.eng.Ack(ctx, "acme", sub.ID, []string{first[0].LeaseID(), nobody}); err != nil || n != 1 || !slices.Equal(lost, []string{nobody}) {
		t.Fatalf("ack: %d %v %v, want 1 and the made-up lease lost", n, lost, err)
	}
	if n, lost, _ := r.eng.Ack(ctx, "acme", sub.ID, []string{first[0].LeaseID()}); n != 0 || len(lost) != 1 {
		t.Errorf("second ack of the same lease: %d %v, want 0 and the lease lost", n, lost)
	}
	if n, _, err := r.eng.Ack(ctx, "other", sub.ID, []string{first[1].LeaseID()}); !errors.Is(err, herald.ErrNotFound) || n != 0 {
		t.Errorf("ack by another tenant: %d %v, want ErrNotFound", n, err)
	}
	for _, bad := range [][]string{{acked}, {first[1].LeaseID(), "x.0123456789abcdef0"}, {".0123456789abcdef"}, {acked + ".0000000000000000"}} {
		var invalid *herald.InvalidError
		if n, _, err := r.eng.Ack(ctx, "acme", sub.ID, bad); !errors.As(err, &invalid) || !strings.HasPrefix(invalid.Field, "lease_ids") || n != 0 {
			t.Errorf("ack of %q: %d %v, want an *InvalidError naming lease_ids", bad, n, err)
		}
	}
	if m := r.get(nacked); m.Status != herald.StatusSentToNS {
		t.Errorf("a refused ack changed the delivery it named well: %s", m.Status)
	}
	m := r.get(acked)
	checkTimeline(t, m, []step{{"", herald.StatusQueued, 0}, {herald.StatusQueued, herald.StatusSentToNS, 1}, {herald.StatusSentToNS, herald.StatusDeliverySuccessful, 1}})
	if m.Timeline[1].Reason != "leased to a puller" || m.Timeline[2].Reason != "acknowledged by the subscriber" {
		t.Errorf("timeline reasons %q, %q", m.Timeline[1].Reason, m.Timeline[2].Reason)
	}

	if n, lost, err := r.eng.Nack(ctx, "acme", sub.ID, []string{first[1].LeaseID()}); err != nil || n != 1 || len(lost) != 0 {
		t.Fatalf("nack: %d %v %v, want 1", n, lost, err)
	}
	r.advance(999 * time.Millisecond)
	if got := r.pull(sub.ID, 10, 30*time.Second); len(got) != 0 {
		t.Fatalf("pull within the nack's backoff: %v, want none", ids(got))
	}
	r.advance(time.Millisecond) // delay × 2^0
	again := r.pull(sub.ID, 10, 30*time.Second)
	if got := ids(again); !slices.Equal(got, []string{nacked}) {
		t.Fatalf("pull after the nack's backoff: %v, want the nacked one", got)
	}
	if v := again[0].DeliveryView(); v.Attempt != 1 {
		t.Errorf("the redelivery's attempt: %d, want 1", v.Attempt)
	}

	// The third's lease ran out 30 s after its pull: it comes back
	// TO_RETRY, "lease expired", 1 s later.
	r.advance(29 * time.Second)
	if m := r.get(expired); m.Status != herald.StatusToRetry || m.Timeline[len(m.Timeline)-1].Reason != "lease expired" {
		t.Fatalf("after its lease: %s %q, want TO_RETRY \"lease expired\"", m.Status, m.Timeline[len(m.Timeline)-1].Reason)
	}
	r.advance(time.Second)
	back := r.pull(sub.ID, 10, time.Minute)
	if got := ids(back); !slices.Contains(got, expired) {
		t.Fatalf("pull after the expired lease's backoff: %v, want %s back", got, expired)
	}
	var leases []string
	for _, m := range back {
		leases = append(leases, m.LeaseID())
	}
	if n, lost, err := r.eng.Ack(ctx, "acme", sub.ID, leases); err != nil || n != len(back) || len(lost) != 0 {
		t.Fatalf("ack of the pull: %d %v %v, want %d", n, lost, err, len(back))
	}
	push := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPush, URL: "http://127.0.0.1:9/"})
	if _, err := r.eng.Pull(ctx, "acme", push.ID, 1, 0); !errors.Is(err, herald.ErrNotPull) {
		t.Errorf("pull of a push subscription: %v, want ErrNotPull", err)
	}
}

// TestRoomLateAckOfAnExpiredLease: puller A's lease runs out, the
// delivery comes back and puller B leases it; A's late ack and nack name
// a lease no longer held: both come back lost and change nothing, and B's
// ack acknowledges it.
func TestRoomLateAckOfAnExpiredLease(t *testing.T) {
	r := roomRig(t)
	r.start()
	ctx := context.Background()
	r.createRoom(herald.RoomRequest{Name: "orders", Delivery: herald.DeliveryOverrides{Delay: ptr(time.Second), Attempts: ptr(3)}})
	sub := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
	id := delivery(t, r.publish("orders", herald.PublishRequest{Type: "t"}), sub.ID)
	r.settle()
	a := r.pull(sub.ID, 1, 10*time.Second)
	r.advance(10 * time.Second) // A's lease runs out: TO_RETRY, due 1 s later
	r.advance(time.Second)
	b := r.pull(sub.ID, 1, 10*time.Second)
	if len(a) != 1 || len(b) != 1 || b[0].ID != id || b[0].LeaseID() == a[0].LeaseID() {
		t.Fatalf("pulls: A %v, B %v; want the one delivery, under two leases", ids(a), ids(b))
	}
	before := r.get(id)
	if n, lost, err := r.eng.Nack(ctx, "acme", sub.ID, []string{a[0].LeaseID()}); err != nil || n != 0 || !slices.Equal(lost, []string{a[0].LeaseID()}) {
		t.Errorf("A's late nack: %d %v %v, want 0 and its lease lost", n, lost, err)
	}
	if n, lost, err := r.eng.Ack(ctx, "acme", sub.ID, []string{a[0].LeaseID()}); err != nil || n != 0 || !slices.Equal(lost, []string{a[0].LeaseID()}) {
		t.Errorf("A's late ack: %d %v %v, want 0 and its lease lost", n, lost, err)
	}
	if m := r.get(id); m.Status != herald.StatusSentToNS || m.Lease != b[0].Lease || len(m.Timeline) != len(before.Timeline) {
		t.Fatalf("after A's late ack and nack: %s lease %d, %d timeline entries; want B's lease untouched (%d entries)",
			m.Status, m.Lease, len(m.Timeline), len(before.Timeline))
	}
	if n, lost, err := r.eng.Ack(ctx, "acme", sub.ID, []string{b[0].LeaseID()}); err != nil || n != 1 || len(lost) != 0 {
		t.Fatalf("B's ack: %d %v %v, want 1", n, lost, err)
	}
	if m := r.get(id); m.Status != herald.StatusDeliverySuccessful {
		t.Errorf("after B's ack: %s, want DELIVERY_SUCCESSFUL", m.Status)
	}
}

// TestRoomAckAfterTheLeaseEndedBeforeTheReaper: an ack that comes after
// its lease's end is lost, even before the reaper has handed the delivery
// back (the engine's loops do not run here).
func TestRoomAckAfterTheLeaseEndedBeforeTheReaper(t *testing.T) {
	r := roomRig(t)
	r.createRoom(herald.RoomRequest{Name: "orders"})
	sub := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
	r.publish("orders", herald.PublishRequest{Type: "t"})
	got := r.pull(sub.ID, 1, 10*time.Second)
	r.clock.Advance(10 * time.Second)
	n, lost, err := r.eng.Ack(context.Background(), "acme", sub.ID, []string{got[0].LeaseID()})
	if err != nil || n != 0 || len(lost) != 1 {
		t.Fatalf("ack at the lease's end: %d %v %v, want its lease lost", n, lost, err)
	}
	if m := r.get(got[0].ID); m.Status != herald.StatusSentToNS {
		t.Errorf("after the late ack: %s, want SENT_TO_NS, for the reaper to hand back", m.Status)
	}
}

// TestRoomDeleteCancels deletes a subscription and then its room: their
// waiting deliveries end CANCELLED "subscription deleted", a leased one
// DELIVERY_FAILED; none can be replayed, and publishing to the deleted
// room finds no room.
func TestRoomDeleteCancels(t *testing.T) {
	r := roomRig(t)
	r.start()
	ctx := context.Background()
	r.createRoom(herald.RoomRequest{Name: "orders"})
	a := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
	b := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
	e1 := r.publish("orders", herald.PublishRequest{Type: "t"})
	e2 := r.publish("orders", herald.PublishRequest{Type: "t"})
	r.pull(b.ID, 1, time.Minute)
	if err := r.eng.DeleteSubscription(ctx, "acme", a.ID); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []*herald.RoomEvent{e1, e2} {
		m := r.get(delivery(t, ev, a.ID))
		if m.Status != herald.StatusCancelled || m.Timeline[len(m.Timeline)-1].Reason != "subscription deleted" {
			t.Errorf("a's delivery %s: %s, want CANCELLED \"subscription deleted\"", m.ID, m.Status)
		}
	}
	if _, err := r.eng.Replay(ctx, "acme", delivery(t, e1, a.ID)); !errors.Is(err, herald.ErrNotReplayable) {
		t.Errorf("replay of a deleted subscription's delivery: %v, want ErrNotReplayable", err)
	}
	if err := r.eng.DeleteRoom(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	if m := r.get(delivery(t, e1, b.ID)); m.Status != herald.StatusDeliveryFailed {
		t.Errorf("b's leased delivery: %s, want DELIVERY_FAILED", m.Status)
	}
	if m := r.get(delivery(t, e2, b.ID)); m.Status != herald.StatusCancelled {
		t.Errorf("b's waiting delivery: %s, want CANCELLED", m.Status)
	}
	if _, err := r.eng.Publish(ctx, "acme", "orders", herald.PublishRequest{Type: "t"}); !errors.Is(err, herald.ErrNotFound) {
		t.Errorf("publish to the deleted room: %v, want ErrNotFound", err)
	}
}

// claimHookStore is a store that calls afterClaim, when set, with what
// each claim took, before the claim returns to the dispatcher.
type claimHookStore struct {
	herald.Store
	afterClaim atomic.Pointer[func([]*herald.Message)]
}

func (s *claimHookStore) Claim(ctx context.Context, c herald.Claim) ([]*herald.Message, error) {
	msgs, err := s.Store.Claim(ctx, c)
	if f := s.afterClaim.Load(); f != nil && err == nil {
		(*f)(msgs)
	}
	return msgs, err
}

// TestRoomDeletionDuringABufferedPushSendsNothing: subscription b's
// delivery is claimed (SENT_TO_NS, on its way to the carrier) and b is
// deleted before the call, its endpoint's carrier known from an earlier
// push. The delivery is not POSTed: it ended "subscription deleted" with
// the deletion.
func TestRoomDeletionDuringABufferedPushSendsNothing(t *testing.T) {
	st := &claimHookStore{}
	r := newRigWith(t, func(c *herald.Config) {
		st.Store = c.Store
		c.Store = st
		c.Routes = append(c.Routes, roomRoute(t, st))
	}, nil)
	var (
		mu    sync.Mutex
		posts = map[string]int{} // by subscription
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		posts[req.Header.Get("X-Herald-Target")]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	postsTo := func(sub string) int {
		mu.Lock()
		defer mu.Unlock()
		return posts[sub]
	}
	r.start()
	r.createRoom(herald.RoomRequest{Name: "orders"})
	b := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPush, URL: srv.URL})
	r.publish("orders", herald.PublishRequest{Type: "t"})
	r.settle()
	if n := postsTo(b.ID); n != 1 {
		t.Fatalf("first event: %d posts, want 1", n)
	}

	var deleted atomic.Bool
	deleteOnClaim := func(claimed []*herald.Message) {
		if len(claimed) > 0 && !deleted.Swap(true) {
			if err := r.eng.DeleteSubscription(context.Background(), "acme", b.ID); err != nil {
				t.Errorf("delete: %v", err)
			}
		}
	}
	st.afterClaim.Store(&deleteOnClaim)
	buffered := delivery(t, r.publish("orders", herald.PublishRequest{Type: "t"}), b.ID)
	r.settle()
	if !deleted.Load() {
		t.Fatal("the second delivery was never claimed")
	}
	if n := postsTo(b.ID); n != 1 {
		t.Errorf("%d posts to the deleted subscription, want only the first event's", n)
	}
	m := r.get(buffered)
	if last := m.Timeline[len(m.Timeline)-1]; m.Status != herald.StatusDeliveryFailed || last.Reason != "subscription deleted" || m.Attempt != 1 {
		t.Errorf("the claimed delivery: %s %q at attempt %d, want DELIVERY_FAILED \"subscription deleted\" at attempt 1", m.Status, last.Reason, m.Attempt)
	}
}

// TestRoomReplayRacingDeletion replays a cancelled delivery while its
// subscription is deleted, again and again: whichever goes first, no
// delivery of the deleted subscription is left QUEUED, and a replay that
// lost says the subscription is deleted.
func TestRoomReplayRacingDeletion(t *testing.T) {
	r := roomRig(t)
	ctx := context.Background()
	r.createRoom(herald.RoomRequest{Name: "orders"})
	for range 30 {
		sub := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
		id := delivery(t, r.publish("orders", herald.PublishRequest{Type: "t"}), sub.ID)
		if _, err := r.eng.Cancel(ctx, "acme", id); err != nil {
			t.Fatal(err)
		}
		var (
			wg                sync.WaitGroup
			replayErr, delErr error
		)
		wg.Go(func() { _, replayErr = r.eng.Replay(ctx, "acme", id) })
		wg.Go(func() { delErr = r.eng.DeleteSubscription(ctx, "acme", sub.ID) })
		wg.Wait()
		if delErr != nil {
			t.Fatal(delErr)
		}
		if replayErr != nil && (!errors.Is(replayErr, herald.ErrNotReplayable) || !strings.Contains(replayErr.Error(), "subscription is deleted")) {
			t.Fatalf("replay: %v, want success or ErrNotReplayable for the deleted subscription", replayErr)
		}
		if m := r.get(id); m.Status != herald.StatusCancelled {
			t.Fatalf("the delivery of the deleted subscription: %s (replay: %v), want CANCELLED", m.Status, replayErr)
		}
	}
}

// TestRoomPublishSeesNewSubscriptions: an engine that published to a room
// keeps its subscriptions, but a subscription made since, by another
// engine on the same store, changed the room's revision: the next publish
// takes it too; and so does a room deleted and made again.
func TestRoomPublishSeesNewSubscriptions(t *testing.T) {
	r := roomRig(t)
	other, err := herald.New(herald.Config{Store: r.store, Routes: []herald.Route{roomRoute(t, r.store)}, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	r.createRoom(herald.RoomRequest{Name: "orders"})
	r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
	if ev := r.publish("orders", herald.PublishRequest{Type: "t"}); len(ev.Deliveries) != 1 {
		t.Fatalf("first publish: %d deliveries, want 1", len(ev.Deliveries))
	}
	if _, err := other.CreateSubscription(context.Background(), "acme", "orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull}); err != nil {
		t.Fatal(err)
	}
	if ev := r.publish("orders", herald.PublishRequest{Type: "t"}); len(ev.Deliveries) != 2 {
		t.Errorf("publish after another engine's subscription: %d deliveries, want 2", len(ev.Deliveries))
	}
	// The other engine deletes the room and makes it again, with a
	// subscription of its own: the first engine's room of the same name is
	// another room.
	ctx := context.Background()
	if err := other.DeleteRoom(ctx, "acme", "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.CreateRoom(ctx, "acme", herald.RoomRequest{Name: "orders"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := other.CreateSubscription(ctx, "acme", "orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull}); err != nil {
			t.Fatal(err)
		}
	}
	subs, _ := other.Subscriptions(ctx, "acme", "orders")
	ev := r.publish("orders", herald.PublishRequest{Type: "t"})
	if len(ev.Deliveries) != 2 || ev.Deliveries[0].SubscriptionID != subs[0].ID || ev.Deliveries[1].SubscriptionID != subs[1].ID {
		t.Errorf("publish to the room made again: deliveries %+v, want to its own subscriptions", ev.Deliveries)
	}
}

// TestRoomRoutesAreTheEngines: no message is sent to a room's route but
// by a publish.
func TestRoomRoutesAreTheEngines(t *testing.T) {
	r := roomRig(t)
	_, _, err := r.eng.Send(context.Background(), "acme", herald.SendRequest{Route: "room:orders", Text: "x"})
	if !errors.Is(err, herald.ErrUnknownRoute) {
		t.Errorf("Send to a room's route: %v, want ErrUnknownRoute", err)
	}
}

func ids(msgs []*herald.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// TestRoomFanOutOfALargeEventIsBounded publishes a 1 MB event to a room of
// 1,000 subscriptions while another tenant sends: the event's data is
// stored once, so the database and its WAL grow by no more than twice the
// event plus 1 KB a delivery (the deliveries hold no copy of it), and the
// other tenant's sends answer within a second throughout.
func TestRoomFanOutOfALargeEventIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 subscriptions and a 1 MB event")
	}
	const subs, perDelivery = 1000, 1024
	path := filepath.Join(t.TempDir(), "herald.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	r := newRigWith(t, func(c *herald.Config) {
		c.Store = st
		c.Routes = append(c.Routes, roomRoute(t, st))
	}, []herald.Route{{Name: "chat", Carrier: &scripted{}, Policy: p}})
	r.start()
	r.createRoom(herald.RoomRequest{Name: "big"})
	var first *herald.Subscription
	for i := range subs {
		s := r.subscribe("big", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
		if i == 0 {
			first = s
		}
	}
	size := func() int64 {
		var n int64
		for _, f := range []string{path, path + "-wal"} {
			if fi, err := os.Stat(f); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	data := json.RawMessage(`"` + strings.Repeat("x", 1_000_000-2) + `"`)
	publish := func() error {
		_, err := r.eng.Publish(context.Background(), "acme", "big", herald.PublishRequest{Type: "big.event", Data: data})
		return err
	}
	// What one publish writes, alone.
	before := size()
	if err := publish(); err != nil {
		t.Fatalf("publish: %v", err)
	}
	grown := size() - before
	t.Logf("the database and its WAL grew by %d bytes for a %d-byte event to %d subscriptions (%d a delivery beyond the event)",
		grown, len(data), subs, (grown-int64(len(data)))/subs)
	if limit := int64(2*len(data) + subs*perDelivery); grown > limit {
		t.Errorf("the store grew by %d bytes, want at most %d: twice the event and %d bytes a delivery", grown, limit, perDelivery)
	}
	// Another tenant's sends while the next publish is written.
	published := make(chan error, 1)
	go func() { published <- publish() }()
	slowest, sends := time.Duration(0), 0
	for done := false; !done; {
		select {
		case err := <-published:
			if err != nil {
				t.Fatalf("publish: %v", err)
			}
			done = true
		default:
		}
		began := time.Now()
		if _, _, err := r.eng.Send(context.Background(), "globex", herald.SendRequest{Route: "chat", Target: "1", Text: "meanwhile"}); err != nil {
			t.Fatal(err)
		}
		slowest, sends = max(slowest, time.Since(began)), sends+1
	}
	t.Logf("%d sends during a publish, the slowest %v", sends, slowest)
	if slowest > time.Second {
		t.Errorf("another tenant's send took %v during the publish, want under a second", slowest)
	}
	got := r.pull(first.ID, 1, time.Minute) // a delivery carries the whole event all the same
	if len(got) != 1 || got[0].DeliveryView().Data == nil || len(got[0].DeliveryView().Data) != len(data) {
		t.Fatalf("pulled %d deliveries, the first's data %d bytes; want one with the event's %d", len(got), len(got[0].DeliveryView().Data), len(data))
	}
}

// TestRoomEventDataLimit: an event's data may be 1,000,000 bytes, not one
// more (400 naming data, nothing published).
func TestRoomEventDataLimit(t *testing.T) {
	r := roomRig(t)
	r.createRoom(herald.RoomRequest{Name: "r"})
	r.subscribe("r", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
	fits := json.RawMessage(`"` + strings.Repeat("x", herald.MaxEventDataBytes-2) + `"`)
	if _, err := r.eng.Publish(context.Background(), "acme", "r", herald.PublishRequest{Type: "t", Data: fits}); err != nil {
		t.Fatalf("publish of %d bytes: %v", len(fits), err)
	}
	over := json.RawMessage(`"` + strings.Repeat("x", herald.MaxEventDataBytes-1) + `"`)
	var invalid *herald.InvalidError
	if _, err := r.eng.Publish(context.Background(), "acme", "r", herald.PublishRequest{Type: "t", Data: over}); !errors.As(err, &invalid) || invalid.Field != "data" {
		t.Fatalf("publish of %d bytes: %v, want an invalid data", len(over), err)
	}
	if n := r.countStatus(herald.StatusQueued); n != 1 {
		t.Errorf("%d deliveries QUEUED, want the one of the event that fits", n)
	}
}
