package herald

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// PublishRequest is an event to publish to a room, as a user gives it.
type PublishRequest struct {
	Type          string
	Version       string
	CorrelationID string
	Data          json.RawMessage // nil is null
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
// dispatched to the route's carrier; pull ones wait for Pull. Bad input
// returns an *InvalidError, an unknown room ErrNotFound.
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
	if err := e.servesRoom(room); err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		entry, err := e.rooms.get(ctx, e.store, tenant, room)
		if err != nil {
			return nil, err
		}
		ev, msgs := e.fanOut(ctx, entry, req)
		err = e.store.Publish(ctx, Publication{Event: *ev, Revision: entry.room.Revision, Deliveries: msgs})
		switch {
		case err == nil:
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
	m0 := Message{Tenant: room.Tenant, Route: RoomRoutePrefix + room.Name, Text: string(req.Data), Params: params,
		CorrelationID: req.CorrelationID, Status: StatusQueued, CreatedAt: now, UpdatedAt: now, DueAt: now}
	if room.Expiration > 0 {
		m0.ExpiresAt = now.Add(room.Expiration)
	}
	e.traceSend(ctx, &m0)
	var msgs []*Message
	for i := range entry.subs {
		s := &entry.subs[i]
		if !s.Takes(req.Type, req.Version) {
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
