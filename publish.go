package herald

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// PublishRequest is an event to publish to a room, as a user gives it.
type PublishRequest struct {
	Type          string
	Version       string
	CorrelationID string
	Data          json.RawMessage // nil is null
	// Subscriptions, when not nil, names the room's subscriptions to
	// deliver to: only those of them that take the event get a delivery.
	Subscriptions []string
}

// publishTries bounds the tries of a publish whose room's subscriptions
// change under it.
const publishTries = 5

// Publish stores an event of tenant's room and, in the same write, one
// delivery per subscription that takes it: a QUEUED message of route
// RoomRoutePrefix + room, target and lane the subscription's id, the
// event's data as its text, its id, type and version in its params, with
// the subscription's delivery policy (its Backoff, MaxAttempts =
// Attempts + 1) and the room's expiration. Push deliveries are
// dispatched to the route's carrier; pull ones wait for Pull. With
// req.Subscriptions, only the subscriptions it names may take the event.
// Bad input (an id in req.Subscriptions that is not a subscription of the
// room included) returns an *InvalidError and stores nothing, an unknown
// room ErrNotFound.
func (e *Engine) Publish(ctx context.Context, tenant, room string, req PublishRequest) (*RoomEvent, error) {
	if err := checkEventType("", req.Type, req.Version); err != nil {
		return nil, err
	}
	if err := checkBytes("correlation_id", req.CorrelationID, MaxKeyBytes); err != nil {
		return nil, err
	}
	if req.Data == nil {
		req.Data = json.RawMessage("null")
	}
	if !json.Valid(req.Data) {
		return nil, Invalid("data", "is not JSON")
	}
	if len(req.Data) > MaxEventDataBytes {
		return nil, Invalid("data", "%d bytes: at most %d", len(req.Data), MaxEventDataBytes)
	}
	if err := checkNamedSubscriptions(req.Subscriptions); err != nil {
		return nil, err
	}
	if err := e.servesRoom(room); err != nil {
		return nil, err
	}
	reread := false // the cached subscriptions, read again for an id they lack
	for try := 1; ; try++ {
		entry, err := e.rooms.get(ctx, e.store, tenant, room)
		if err != nil {
			return nil, err
		}
		if id := entry.stranger(req.Subscriptions); id != "" {
			if !reread { // a subscription made since, perhaps on another node
				e.rooms.forget(tenant, room)
				reread = true
				continue
			}
			return nil, Invalid("subscriptions", "%q is not a subscription of room %q", id, room)
		}
		ev, msgs := e.fanOut(ctx, entry, req)
		err = e.store.Publish(ctx, Publication{Event: *ev, Revision: entry.room.Revision, Deliveries: msgs})
		switch {
		case err == nil:
			e.eventData.put(ev.ID, string(ev.Data)) // its deliveries' next sends are this node's, likely
			for _, m := range msgs {
				e.transitioned(m, "", StatusQueued)
			}
			if len(msgs) > 0 {
				e.nudge(e.wake)
			}
			return ev, nil
		case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound):
			e.rooms.forget(tenant, room)
			if errors.Is(err, ErrNotFound) {
				return nil, err
			}
			if try == publishTries {
				return nil, fmt.Errorf("publish: %w: the room's subscriptions keep changing", err)
			}
		default:
			e.problem("store_error", "publish", "room", room, "err", err)
			return nil, fmt.Errorf("publish: %w", err)
		}
	}
}

// fanOut returns the event that req makes in entry's room, with its
// deliveries, each in the trace of ctx (the publish request's) when traced.
func (e *Engine) fanOut(ctx context.Context, entry *roomEntry, req PublishRequest) (*RoomEvent, []*Message) {
	room := entry.room
	now := e.clock.Now()
	ev := &RoomEvent{ID: e.ids.next(now), Tenant: room.Tenant, Room: room.Name, Type: req.Type, Version: req.Version,
		CorrelationID: req.CorrelationID, Data: req.Data, CreatedAt: now}
	params := map[string]string{"event_id": ev.ID, "type": req.Type} // shared: no one changes it
	if req.Version != "" {
		params["version"] = req.Version
	}
	// The data is the event's, stored once: each delivery names the event
	// (eventdata.go).
	m0 := Message{Tenant: room.Tenant, Route: RoomRoutePrefix + room.Name, Params: params,
		CorrelationID: req.CorrelationID, Status: StatusQueued, CreatedAt: now, UpdatedAt: now, DueAt: now}
	if room.Expiration > 0 {
		m0.ExpiresAt = now.Add(room.Expiration)
	}
	e.traceSend(ctx, &m0)
	var named map[string]bool
	if req.Subscriptions != nil {
		named = make(map[string]bool, len(req.Subscriptions))
		for _, id := range req.Subscriptions {
			named[id] = true
		}
	}
	var msgs []*Message
	for i := range entry.subs {
		s := &entry.subs[i]
		if !s.Takes(req.Type, req.Version) || (named != nil && !named[s.ID]) {
			continue
		}
		p := s.Delivery.Apply(room.Delivery)
		m := m0
		m.ID, m.Target, m.Lane = e.ids.next(now), s.ID, s.ID
		m.MaxAttempts, m.Backoff, m.Pull = p.Attempts+1, p.Backoff(), s.Type == SubscriptionPull
		msgs = append(msgs, &m)
		ev.Deliveries = append(ev.Deliveries, Delivery{SubscriptionID: s.ID, MessageID: m.ID})
	}
	return ev, msgs
}

// checkNamedSubscriptions checks the subscriptions a publish names: nil
// (every one that takes the event), or 1 to MaxSubscriptions ids.
func checkNamedSubscriptions(ids []string) error {
	switch {
	case ids == nil:
		return nil
	case len(ids) == 0:
		return Invalid("subscriptions", "is empty: name at least one of the room's subscriptions, or leave it out to deliver to every one that takes the event")
	case len(ids) > MaxSubscriptions:
		return Invalid("subscriptions", "%d ids: at most %d", len(ids), MaxSubscriptions)
	}
	for _, id := range ids {
		if id == "" {
			return Invalid("subscriptions", "an id is empty")
		}
		if err := checkBytes("subscriptions", id, MaxKeyBytes); err != nil {
			return err
		}
	}
	return nil
}

// stranger returns the first of ids that is none of the entry's
// subscriptions, or "".
func (entry *roomEntry) stranger(ids []string) string {
	for _, id := range ids {
		if !slices.ContainsFunc(entry.subs, func(s Subscription) bool { return s.ID == id }) {
			return id
		}
	}
	return ""
}

// RoomEvent returns tenant's room event id with its deliveries, or
// ErrNotFound.
func (e *Engine) RoomEvent(ctx context.Context, tenant, id string) (*RoomEvent, error) {
	ev, err := e.store.RoomEvent(ctx, id)
	if err != nil {
		return nil, err
	}
	if ev.Tenant != tenant {
		return nil, ErrNotFound
	}
	return ev, nil
}
