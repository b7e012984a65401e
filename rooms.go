package herald

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// RoomRequest is a room to create, as a user gives it.
type RoomRequest struct {
	Name string
	// Expiration is every delivery's life from its event's publication;
	// 0 is never.
	Expiration time.Duration
	// Delivery sets the room's DeliveryPolicy; what it leaves unset is
	// DefaultDelivery's.
	Delivery DeliveryOverrides
}

// DefaultDelivery is the DeliveryPolicy of a room whose request sets none:
// the room profile's, 1 s doubling, 5 sends.
var DefaultDelivery = DeliveryPolicy{Delay: time.Second, Multiplier: 2, Attempts: 4}

// SubscriptionRequest is a subscription to create, as a user gives it.
type SubscriptionRequest struct {
	Type SubscriptionType
	URL  string // push: required
	// Secret is a push subscription's signing secret, whsec_ and the
	// standard base64 of its bytes (as the Standard Webhooks give it); ""
	// has CreateSubscription generate one.
	Secret     string
	EventTypes []EventType
	Delivery   DeliveryOverrides
}

// CreateRoom creates tenant's room. Bad input returns an *InvalidError, a
// name tenant has already ErrRoomExists, and an engine with no route for
// rooms' deliveries (a prefix route named RoomRoutePrefix) ErrUnknownRoute.
func (e *Engine) CreateRoom(ctx context.Context, tenant string, req RoomRequest) (*Room, error) {
	if !validRoomName(req.Name) {
		return nil, Invalid("name", "want a letter or a digit, then up to %d letters, digits, '.', '_' or '-'", MaxRoomName-1)
	}
	if err := e.servesRoom(req.Name); err != nil {
		return nil, err
	}
	switch {
	case req.Expiration < 0:
		return nil, Invalid("expiration", "%v is negative", req.Expiration)
	case req.Expiration%time.Millisecond != 0: // a 500µs kept as 0 would never expire
		return nil, Invalid("expiration", "%v is not a whole number of milliseconds, which the stores keep", req.Expiration)
	}
	if err := checkDelivery("delivery", req.Delivery); err != nil {
		return nil, err
	}
	r := Room{Tenant: tenant, Name: req.Name, Expiration: req.Expiration, Delivery: req.Delivery.Apply(DefaultDelivery),
		Revision: rand.Int64N(1 << 62), CreatedAt: e.clock.Now()}
	if err := e.store.CreateRoom(ctx, r); err != nil {
		return nil, err
	}
	return &r, nil
}

// servesRoom returns ErrUnknownRoute unless a route serves the deliveries
// of the room name.
func (e *Engine) servesRoom(name string) error {
	if _, ok := e.route(RoomRoutePrefix + name); !ok {
		return fmt.Errorf("%w %q: rooms need a prefix route of that name", ErrUnknownRoute, RoomRoutePrefix)
	}
	return nil
}

// Room returns tenant's room name, or ErrNotFound.
func (e *Engine) Room(ctx context.Context, tenant, name string) (*Room, error) {
	return e.store.Room(ctx, tenant, name)
}

// Rooms returns tenant's rooms, by name.
func (e *Engine) Rooms(ctx context.Context, tenant string) ([]Room, error) {
	return e.store.Rooms(ctx, tenant)
}

// DeleteRoom deletes tenant's room name with its subscriptions: their
// deliveries that are waiting end CANCELLED, those in flight
// DELIVERY_FAILED, both with reason "subscription deleted". It returns
// ErrNotFound when there is no such room.
func (e *Engine) DeleteRoom(ctx context.Context, tenant, name string) error {
	end := e.deliveryEnd()
	n, err := e.store.DeleteRoom(ctx, tenant, name, end)
	e.rooms.forget(tenant, name)
	e.ended(n, end)
	return err
}

// CreateSubscription creates a subscription in tenant's room. Bad input
// returns an *InvalidError, an unknown room ErrNotFound.
func (e *Engine) CreateSubscription(ctx context.Context, tenant, room string, req SubscriptionRequest) (*Subscription, error) {
	if err := checkSubscription(req); err != nil {
		return nil, err
	}
	if err := e.checkPushURL(tenant, room, req); err != nil {
		return nil, err
	}
	subs, err := e.Subscriptions(ctx, tenant, room)
	if err != nil {
		return nil, err
	}
	if len(subs) >= MaxSubscriptions {
		return nil, Invalid("room", "has %d subscriptions, the most a room may have", len(subs))
	}
	if req.Type == SubscriptionPush && req.Secret == "" {
		if req.Secret, err = newSigningSecret(); err != nil {
			return nil, err
		}
	}
	now := e.clock.Now()
	s := Subscription{ID: e.ids.next(now), Tenant: tenant, Room: room, Type: req.Type, URL: req.URL,
		Secret: req.Secret, EventTypes: req.EventTypes, Delivery: req.Delivery, CreatedAt: now}
	if err := e.store.CreateSubscription(ctx, s); err != nil {
		return nil, err
	}
	e.rooms.forget(tenant, room)
	return &s, nil
}

// checkPushURL asks the carrier of tenant's room's deliveries, when it is a
// URLChecker, whether it may reach the URL of req, a push subscription.
func (e *Engine) checkPushURL(tenant, room string, req SubscriptionRequest) error {
	if req.Type != SubscriptionPush {
		return nil
	}
	r, ok := e.route(RoomRoutePrefix + room)
	if !ok {
		return nil
	}
	c, ok := r.Carrier.(URLChecker)
	if !ok {
		return nil
	}
	if err := c.CheckURL(req.URL); err != nil {
		e.log.Info("push subscription refused", "tenant", tenant, "room", room, "err", err)
		return Invalid("url", "%v", err)
	}
	return nil
}

// checkSubscription returns an *InvalidError for the first thing wrong
// with req.
func checkSubscription(req SubscriptionRequest) error {
	switch req.Type {
	case SubscriptionPush:
		if req.URL == "" {
			return Invalid("url", "a push subscription needs one")
		}
		if err := checkPushURL(req.URL); err != nil {
			return err
		}
		if err := checkSigningSecret(req.Secret); err != nil {
			return err
		}
	case SubscriptionPull:
		if req.URL != "" || req.Secret != "" {
			return Invalid("url", "a pull subscription takes neither url nor secret")
		}
	default:
		return Invalid("type", "want push or pull")
	}
	if len(req.EventTypes) > MaxEventTypes {
		return Invalid("event_types", "%d entries; at most %d", len(req.EventTypes), MaxEventTypes)
	}
	for _, et := range req.EventTypes {
		if err := checkEventType("event_types.", et.Type, et.Version); err != nil {
			return err
		}
	}
	return checkDelivery("delivery", req.Delivery)
}

// checkEventType returns an *InvalidError, naming prefix + "type" or
// prefix + "version", unless typ is 1 to MaxKeyBytes bytes and version at
// most MaxKeyBytes.
func checkEventType(prefix, typ, version string) error {
	if typ == "" {
		return Invalid(prefix+"type", "is required")
	}
	if err := checkBytes(prefix+"type", typ, MaxKeyBytes); err != nil {
		return err
	}
	return checkBytes(prefix+"version", version, MaxKeyBytes)
}

// Subscription returns tenant's subscription id, or ErrNotFound.
func (e *Engine) Subscription(ctx context.Context, tenant, id string) (*Subscription, error) {
	s, err := e.store.Subscription(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.Tenant != tenant {
		return nil, ErrNotFound
	}
	return s, nil
}

// Subscriptions returns the subscriptions of tenant's room, by id, or
// ErrNotFound when there is no such room.
func (e *Engine) Subscriptions(ctx context.Context, tenant, room string) ([]Subscription, error) {
	if _, err := e.store.Room(ctx, tenant, room); err != nil {
		return nil, err
	}
	return e.store.Subscriptions(ctx, tenant, room)
}

// DeleteSubscription deletes tenant's subscription id: its deliveries
// that are waiting end CANCELLED, those in flight DELIVERY_FAILED, both
// with reason "subscription deleted". It returns ErrNotFound when tenant
// has no such subscription.
func (e *Engine) DeleteSubscription(ctx context.Context, tenant, id string) error {
	end := e.deliveryEnd()
	n, err := e.store.DeleteSubscription(ctx, tenant, id, end)
	e.ended(n, end)
	return err
}

// deliveryEnd is how a deletion ends the deliveries it leaves without a
// subscription.
func (e *Engine) deliveryEnd() DeliveryEnd {
	return DeliveryEnd{At: e.clock.Now(), Reason: "subscription deleted",
		CancelNotify: e.notifyFor(StatusCancelled), FailNotify: e.notifyFor(StatusDeliveryFailed)}
}

// ended nudges the outbox when a deletion ended n deliveries that the
// subscribers hear of.
func (e *Engine) ended(n int, end DeliveryEnd) {
	if n > 0 && len(end.CancelNotify)+len(end.FailNotify) > 0 {
		e.nudge(e.eventPending)
	}
}

// roomCache holds, for each room that this engine published to, the room
// and its subscriptions as of the room's Revision. A subscription never
// changes; what changes the set changes the revision, which each
// Publication hands the store to compare, so a stale entry costs one
// refused write, never a wrong fan-out.
type roomCache struct {
	mu      sync.Mutex
	entries map[roomKey]*roomEntry
}

type roomKey struct{ tenant, name string }

type roomEntry struct {
	room *Room
	subs []Subscription
}

// get returns the entry of tenant's room name, reading it from s when the
// cache has none.
func (c *roomCache) get(ctx context.Context, s Store, tenant, name string) (*roomEntry, error) {
	k := roomKey{tenant, name}
	c.mu.Lock()
	entry := c.entries[k]
	c.mu.Unlock()
	if entry != nil {
		return entry, nil
	}
	room, err := s.Room(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	subs, err := s.Subscriptions(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	entry = &roomEntry{room: room, subs: subs}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = make(map[roomKey]*roomEntry)
	}
	c.entries[k] = entry
	c.mu.Unlock()
	return entry, nil
}

// forget drops the entry of tenant's room name.
func (c *roomCache) forget(tenant, name string) {
	c.mu.Lock()
	delete(c.entries, roomKey{tenant, name})
	c.mu.Unlock()
}
