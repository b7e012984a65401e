package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldmq/herald"
)

// RoomRequest is the body of CreateRoom.
type RoomRequest struct {
	// Name is 1 to herald.MaxRoomName letters, digits, '.', '_' or '-'.
	// Required.
	Name string
	// Expiration bounds every delivery's life from its event's
	// publication, whatever its subscription: past it the delivery fails
	// "expired". 0 is never.
	Expiration time.Duration
	// Delivery retries the room's deliveries; a nil field keeps
	// herald.DefaultDelivery's.
	Delivery herald.DeliveryOverrides
}

// MarshalJSON returns r as the API takes it, durations as "1h0m0s".
func (r RoomRequest) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name       string        `json:"name"`
		Expiration string        `json:"expiration"`
		Delivery   *deliveryJSON `json:"delivery,omitempty"`
	}{r.Name, r.Expiration.String(), deliveryOf(r.Delivery)})
}

// Room is a room as the API shows it.
type Room struct {
	Name string
	// Expiration is every delivery's life from its event's publication;
	// 0 is never.
	Expiration time.Duration
	// Delivery retries the room's deliveries, unless a subscription
	// overrides it.
	Delivery  herald.DeliveryPolicy
	CreatedAt time.Time
	// Subscriptions is how many subscriptions it has.
	Subscriptions int
}

// roomJSON is the JSON shape of a Room.
type roomJSON struct {
	Name          string       `json:"name"`
	Expiration    string       `json:"expiration"`
	Delivery      deliveryJSON `json:"delivery"`
	CreatedAt     time.Time    `json:"created_at"`
	Subscriptions int          `json:"subscriptions"`
}

// MarshalJSON returns r in the API's shape.
func (r Room) MarshalJSON() ([]byte, error) {
	d, m, a := r.Delivery.Delay, r.Delivery.Multiplier, r.Delivery.Attempts
	return json.Marshal(roomJSON{Name: r.Name, Expiration: r.Expiration.String(), CreatedAt: r.CreatedAt, Subscriptions: r.Subscriptions,
		Delivery: *deliveryOf(herald.DeliveryOverrides{Delay: &d, Multiplier: &m, Attempts: &a})})
}

// UnmarshalJSON reads r from the API's shape.
func (r *Room) UnmarshalJSON(data []byte) error {
	var j roomJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	exp, err := parseDuration("expiration", j.Expiration)
	if err != nil {
		return err
	}
	o, err := j.Delivery.overrides()
	if err != nil {
		return err
	}
	*r = Room{Name: j.Name, Expiration: exp, Delivery: o.Apply(herald.DeliveryPolicy{}), CreatedAt: j.CreatedAt, Subscriptions: j.Subscriptions}
	return nil
}

// SubscriptionRequest is the body of CreateSubscription.
type SubscriptionRequest struct {
	// Type is herald.SubscriptionPush (herald POSTs each delivery to URL)
	// or herald.SubscriptionPull (the subscriber calls Pull). Required.
	Type herald.SubscriptionType
	// URL is where a push subscription's deliveries are POSTed: required
	// for push, refused for pull.
	URL string
	// Secret is a push subscription's signing secret, whsec_ and the
	// standard base64 of its key; empty has herald generate one, which
	// the answer of CreateSubscription shows (Subscription.Secret), once.
	Secret string
	// EventTypes are the events the subscription takes (a Version of ""
	// takes every version of its Type); none takes every event.
	EventTypes []herald.EventType
	// Delivery overrides the room's retry for this subscription; a nil
	// field keeps the room's.
	Delivery herald.DeliveryOverrides
}

// MarshalJSON returns r as the API takes it.
func (r SubscriptionRequest) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type       herald.SubscriptionType `json:"type"`
		URL        string                  `json:"url,omitempty"`
		Secret     string                  `json:"secret,omitempty"`
		EventTypes []eventTypeJSON         `json:"event_types,omitempty"`
		Delivery   *deliveryJSON           `json:"delivery,omitempty"`
	}{r.Type, r.URL, r.Secret, eventTypesOf(r.EventTypes), deliveryOf(r.Delivery)})
}

// Subscription is a subscription as the API shows it.
type Subscription struct {
	ID   string
	Room string
	Type herald.SubscriptionType
	// URL is a push subscription's.
	URL string
	// Secret is a push subscription's signing secret, in the answer of
	// its creation only.
	Secret string
	// SecretEnv names the server's variable that holds the signing
	// secret of a push subscription made before subscriptions kept their
	// own.
	SecretEnv string
	// EventTypes are the events it takes; none takes every event.
	EventTypes []herald.EventType
	// Delivery holds the fields of the room's policy that the
	// subscription overrides; the others (nil) are the room's.
	Delivery  herald.DeliveryOverrides
	CreatedAt time.Time
	// Queued is a pull subscription's deliveries waiting to be pulled, as
	// Subscription reads it (nil in the other answers, and for push).
	Queued *int
}

// subscriptionJSON is the JSON shape of a Subscription.
type subscriptionJSON struct {
	ID         string                  `json:"id"`
	Room       string                  `json:"room"`
	Type       herald.SubscriptionType `json:"type"`
	URL        string                  `json:"url,omitempty"`
	Secret     string                  `json:"secret,omitempty"`
	SecretEnv  string                  `json:"secret_env,omitempty"`
	EventTypes []eventTypeJSON         `json:"event_types"`
	Delivery   deliveryJSON            `json:"delivery"`
	CreatedAt  time.Time               `json:"created_at"`
	Queued     *int                    `json:"queued,omitempty"`
}

// MarshalJSON returns s in the API's shape.
func (s Subscription) MarshalJSON() ([]byte, error) {
	types := eventTypesOf(s.EventTypes)
	if types == nil {
		types = []eventTypeJSON{}
	}
	var d deliveryJSON
	if p := deliveryOf(s.Delivery); p != nil {
		d = *p
	}
	return json.Marshal(subscriptionJSON{ID: s.ID, Room: s.Room, Type: s.Type, URL: s.URL, Secret: s.Secret, SecretEnv: s.SecretEnv,
		EventTypes: types, Delivery: d, CreatedAt: s.CreatedAt, Queued: s.Queued})
}

// UnmarshalJSON reads s from the API's shape.
func (s *Subscription) UnmarshalJSON(data []byte) error {
	var j subscriptionJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	o, err := j.Delivery.overrides()
	if err != nil {
		return err
	}
	*s = Subscription{ID: j.ID, Room: j.Room, Type: j.Type, URL: j.URL, Secret: j.Secret, SecretEnv: j.SecretEnv, Delivery: o, CreatedAt: j.CreatedAt,
		Queued: j.Queued}
	for _, et := range j.EventTypes {
		s.EventTypes = append(s.EventTypes, herald.EventType(et))
	}
	return nil
}

// PublishRequest is the body of Publish.
type PublishRequest struct {
	// Type is the event's type, which subscriptions choose by. Required.
	Type string `json:"type"`
	// Version is the event type's version, if it has one.
	Version string `json:"version,omitempty"`
	// Data is the event's data, JSON; nil is null.
	Data json.RawMessage `json:"data,omitempty"`
	// CorrelationID is the caller's own id; the event's deliveries are
	// listed by it (ListFilter.CorrelationID).
	CorrelationID string `json:"correlation_id,omitempty"`
	// Subscriptions, when not empty, names the room's subscriptions to
	// deliver to (by id): only those of them that take the event get a
	// delivery. An id that is not the room's is a 400.
	Subscriptions []string `json:"subscriptions,omitempty"`
}

// Event is an event published to a room, with its deliveries: one per
// subscription that took it, each a message (Get reads it).
type Event = herald.RoomEventView

// PullRequest says how much Pull leases, and for how long.
type PullRequest struct {
	// Max is the most deliveries leased: 1..herald.MaxPull; 0 means
	// herald.DefaultPull.
	Max int
	// Lease is how long the deliveries are the caller's before they come
	// back unless acknowledged: up to herald.MaxLease; 0 means
	// herald.DefaultLease.
	Lease time.Duration
}

// MarshalJSON returns r as the API takes it, the lease as "30s".
func (r PullRequest) MarshalJSON() ([]byte, error) {
	j := struct {
		Max   int    `json:"max,omitempty"`
		Lease string `json:"lease,omitempty"`
	}{Max: r.Max}
	if r.Lease != 0 {
		j.Lease = r.Lease.String()
	}
	return json.Marshal(j)
}

// CreateRoom creates a room (POST /v1/rooms). A name the tenant has is a
// 409 room_exists (IsConflict). It is retried on 503 store_unavailable:
// should a lost answer hide a room that was made, the retry answers 409
// room_exists.
func (c *Client) CreateRoom(ctx context.Context, req RoomRequest) (Room, error) {
	var r Room
	if _, err := c.call(ctx, call{method: http.MethodPost, path: "/v1/rooms", in: req, out: &r, retry: true}); err != nil {
		return Room{}, fmt.Errorf("herald: create room %q: %w", req.Name, err)
	}
	return r, nil
}

// Rooms returns the tenant's rooms, by name (GET /v1/rooms).
func (c *Client) Rooms(ctx context.Context) ([]Room, error) {
	var out struct {
		Rooms []Room `json:"rooms"`
	}
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/v1/rooms", out: &out, retry: true}); err != nil {
		return nil, fmt.Errorf("herald: list rooms: %w", err)
	}
	return out.Rooms, nil
}

// Room returns the room name (GET /v1/rooms/{name}); an unknown one is a
// 404 (IsNotFound).
func (c *Client) Room(ctx context.Context, name string) (Room, error) {
	var r Room
	if _, err := c.call(ctx, call{method: http.MethodGet, path: roomPath(name, ""), out: &r, retry: true}); err != nil {
		return Room{}, fmt.Errorf("herald: get room %q: %w", name, err)
	}
	return r, nil
}

// DeleteRoom deletes the room name with its subscriptions (DELETE
// /v1/rooms/{name}): their waiting deliveries end CANCELLED, those in
// flight DELIVERY_FAILED. An unknown room is a 404 (IsNotFound), as is
// the retry of a delete whose answer was lost.
func (c *Client) DeleteRoom(ctx context.Context, name string) error {
	if _, err := c.call(ctx, call{method: http.MethodDelete, path: roomPath(name, ""), retry: true}); err != nil {
		return fmt.Errorf("herald: delete room %q: %w", name, err)
	}
	return nil
}

// CreateSubscription subscribes to the events of room (POST
// /v1/rooms/{room}/subscriptions). An unknown room is a 404. It is not
// retried on 503: had the answer been lost after the subscription was
// made, a retry would make a second one.
func (c *Client) CreateSubscription(ctx context.Context, room string, req SubscriptionRequest) (Subscription, error) {
	var s Subscription
	if _, err := c.call(ctx, call{method: http.MethodPost, path: roomPath(room, "/subscriptions"), in: req, out: &s}); err != nil {
		return Subscription{}, fmt.Errorf("herald: subscribe to room %q: %w", room, err)
	}
	return s, nil
}

// Subscriptions returns the subscriptions of room, oldest first (GET
// /v1/rooms/{room}/subscriptions); an unknown room is a 404.
func (c *Client) Subscriptions(ctx context.Context, room string) ([]Subscription, error) {
	var out struct {
		Subscriptions []Subscription `json:"subscriptions"`
	}
	if _, err := c.call(ctx, call{method: http.MethodGet, path: roomPath(room, "/subscriptions"), out: &out, retry: true}); err != nil {
		return nil, fmt.Errorf("herald: list the subscriptions of room %q: %w", room, err)
	}
	return out.Subscriptions, nil
}

// Subscription returns the subscription id (GET /v1/subscriptions/{id});
// an unknown one, or another tenant's, is a 404.
func (c *Client) Subscription(ctx context.Context, id string) (Subscription, error) {
	var s Subscription
	if _, err := c.call(ctx, call{method: http.MethodGet, path: subscriptionPath(id, ""), out: &s, retry: true}); err != nil {
		return Subscription{}, fmt.Errorf("herald: get subscription %s: %w", id, err)
	}
	return s, nil
}

// DeleteSubscription deletes the subscription id (DELETE
// /v1/subscriptions/{id}): its waiting deliveries end CANCELLED, those in
// flight DELIVERY_FAILED. An unknown one is a 404, as is the retry of a
// delete whose answer was lost.
func (c *Client) DeleteSubscription(ctx context.Context, id string) error {
	if _, err := c.call(ctx, call{method: http.MethodDelete, path: subscriptionPath(id, ""), retry: true}); err != nil {
		return fmt.Errorf("herald: delete subscription %s: %w", id, err)
	}
	return nil
}

// Publish publishes an event to room (POST /v1/rooms/{room}/events) and
// returns it with its deliveries, one per subscription that takes it,
// all stored in one write. An unknown room is a 404. It is not retried on
// 503: had the answer been lost after the event was stored, a retry would
// publish it twice.
func (c *Client) Publish(ctx context.Context, room string, req PublishRequest) (Event, error) {
	var e Event
	if _, err := c.call(ctx, call{method: http.MethodPost, path: roomPath(room, "/events"), in: req, out: &e}); err != nil {
		return Event{}, fmt.Errorf("herald: publish %q to room %q: %w", req.Type, room, err)
	}
	return e, nil
}

// Event returns the event id of room with its deliveries (GET
// /v1/rooms/{room}/events/{id}); an unknown one is a 404.
func (c *Client) Event(ctx context.Context, room, id string) (Event, error) {
	var e Event
	if _, err := c.call(ctx, call{method: http.MethodGet, path: roomPath(room, "/events/"+url.PathEscape(id)), out: &e, retry: true}); err != nil {
		return Event{}, fmt.Errorf("herald: get event %s of room %q: %w", id, room, err)
	}
	return e, nil
}

// Pull leases the waiting deliveries of the pull subscription id (POST
// /v1/subscriptions/{id}/pull), oldest first, highest priority first:
// each is the caller's until Ack or Nack names its LeaseID, or the lease
// ends, which counts as a Nack. None waiting is an empty slice. A push
// subscription is a 409 not_pull (IsConflict), an unknown one a 404. It
// is not retried on 503: had the answer been lost after the lease was
// taken, its deliveries would wait for the lease's end, an attempt spent.
func (c *Client) Pull(ctx context.Context, id string, req PullRequest) ([]herald.DeliveryView, error) {
	var out struct {
		Deliveries []herald.DeliveryView `json:"deliveries"`
	}
	if _, err := c.call(ctx, call{method: http.MethodPost, path: subscriptionPath(id, "/pull"), in: req, out: &out}); err != nil {
		return nil, fmt.Errorf("herald: pull subscription %s: %w", id, err)
	}
	return out.Deliveries, nil
}

// Ack acknowledges the deliveries of the subscription id that leaseIDs
// name, each the LeaseID of a delivery as Pull gave it (POST
// /v1/subscriptions/{id}/ack): each still held under its lease ends
// DELIVERY_SUCCESSFUL. It returns how many did, and the lease ids no
// longer held (the lease ran out, the delivery was pulled again,
// acknowledged or ended), which changed nothing. A lease id Pull cannot
// have given is a 400 (IsInvalid) that changes nothing. It is retried on
// 503 store_unavailable: a retry acknowledges nothing twice, though a
// lease that a lost answer acknowledged comes back lost.
func (c *Client) Ack(ctx context.Context, id string, leaseIDs []string) (acked int, lost []string, err error) {
	acked, lost, err = c.settle(ctx, id, "ack", leaseIDs)
	if err != nil {
		return 0, nil, fmt.Errorf("herald: ack %d deliveries of subscription %s: %w", len(leaseIDs), id, err)
	}
	return acked, lost, nil
}

// Nack hands back the deliveries of the subscription id that leaseIDs
// name (POST /v1/subscriptions/{id}/nack): each still held under its
// lease waits for its subscription's backoff, or ends DELIVERY_FAILED
// when its attempts are used up. It returns how many it handed back and
// the lease ids no longer held, and is retried as Ack is.
func (c *Client) Nack(ctx context.Context, id string, leaseIDs []string) (nacked int, lost []string, err error) {
	nacked, lost, err = c.settle(ctx, id, "nack", leaseIDs)
	if err != nil {
		return 0, nil, fmt.Errorf("herald: nack %d deliveries of subscription %s: %w", len(leaseIDs), id, err)
	}
	return nacked, lost, nil
}

// settle posts leaseIDs to the subscription id's verb ("ack" or "nack")
// and returns the count the answer holds under verb + "ed", and its
// "lost".
func (c *Client) settle(ctx context.Context, id, verb string, leaseIDs []string) (int, []string, error) {
	if leaseIDs == nil {
		leaseIDs = []string{}
	}
	in := struct {
		LeaseIDs []string `json:"lease_ids"`
	}{leaseIDs}
	var out struct {
		Acked  *int     `json:"acked"`
		Nacked *int     `json:"nacked"`
		Lost   []string `json:"lost"`
	}
	if _, err := c.call(ctx, call{method: http.MethodPost, path: subscriptionPath(id, "/"+verb), in: in, out: &out, retry: true}); err != nil {
		return 0, nil, err
	}
	n := out.Acked
	if verb == "nack" {
		n = out.Nacked
	}
	if n == nil || out.Lost == nil {
		return 0, nil, fmt.Errorf("the answer has no %q count or no \"lost\" list", verb+"ed")
	}
	return *n, out.Lost, nil
}

// roomPath is the path of the room name, followed by suffix.
func roomPath(name, suffix string) string {
	return "/v1/rooms/" + url.PathEscape(name) + suffix
}

// subscriptionPath is the path of the subscription id, followed by suffix.
func subscriptionPath(id, suffix string) string {
	return "/v1/subscriptions/" + url.PathEscape(id) + suffix
}

// deliveryJSON is the JSON shape of a room's or a subscription's
// "delivery": the delay as "1s"; a field absent is not set.
type deliveryJSON struct {
	Delay      *string  `json:"delay,omitempty"`
	Multiplier *float64 `json:"multiplier,omitempty"`
	Attempts   *int     `json:"attempts,omitempty"`
}

// deliveryOf returns o in its JSON shape, nil when o sets nothing.
func deliveryOf(o herald.DeliveryOverrides) *deliveryJSON {
	if o.Delay == nil && o.Multiplier == nil && o.Attempts == nil {
		return nil
	}
	j := &deliveryJSON{Multiplier: o.Multiplier, Attempts: o.Attempts}
	if o.Delay != nil {
		s := o.Delay.String()
		j.Delay = &s
	}
	return j
}

// overrides returns j as the fields it sets.
func (j deliveryJSON) overrides() (herald.DeliveryOverrides, error) {
	o := herald.DeliveryOverrides{Multiplier: j.Multiplier, Attempts: j.Attempts}
	if j.Delay != nil {
		d, err := parseDuration("delivery.delay", *j.Delay)
		if err != nil {
			return o, err
		}
		o.Delay = &d
	}
	return o, nil
}

// eventTypeJSON is the JSON shape of a herald.EventType.
type eventTypeJSON struct {
	Type    string `json:"type"`
	Version string `json:"version,omitempty"`
}

// eventTypesOf returns types in their JSON shape, nil when there are none.
func eventTypesOf(types []herald.EventType) []eventTypeJSON {
	var out []eventTypeJSON
	for _, et := range types {
		out = append(out, eventTypeJSON(et))
	}
	return out
}

// parseDuration reads the duration of field, as the API writes it
// ("1h0m0s"); "" is 0.
func parseDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return d, nil
}
