package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// Rooms, subscriptions and room events are rows of their tables; a room's
// deliveries are messages (route herald.RoomRoutePrefix + the room's
// name, target the subscription's id), a pull subscription's with gated
// = gatedPull, so that Claim, which reads gated = 0, 1 or 3, never takes
// them and Pull reads them from messages_pull.

// The columns of the rooms, subscriptions and room_events tables, in the
// order their scans read them.
const (
	roomCols      = `tenant, name, expiration, delay, multiplier, attempts, revision, created_at`
	subCols       = `id, tenant, room, type, url, secret_env, event_types, delay, multiplier, attempts, created_at, secret`
	roomEventCols = `id, tenant, room, type, version, correlation_id, data, deliveries, created_at`
	// roomSubsSQL counts a room's subscriptions, after the roomCols of
	// Room and Rooms.
	roomSubsSQL = `(SELECT COUNT(*) FROM subscriptions INDEXED BY subscriptions_room
		WHERE subscriptions.tenant = rooms.tenant AND subscriptions.room = rooms.name)`
)

// CreateRoom stores r unless its tenant has a room of its name
// (herald.ErrRoomExists).
func (s *Store) CreateRoom(ctx context.Context, r herald.Room) error {
	err := s.write(ctx, func(tx *wtx) error {
		n, err := deleted(tx.st.insertRoom.Exec(r.Tenant, r.Name, r.Expiration.Milliseconds(), r.Delivery.Delay.Milliseconds(),
			r.Delivery.Multiplier, r.Delivery.Attempts, r.Revision, unixms.From(r.CreatedAt)))
		if err == nil && n == 0 {
			return herald.ErrRoomExists
		}
		return err
	})
	if errors.Is(err, herald.ErrRoomExists) {
		return err
	}
	return wrap("create room", err)
}

// Room returns tenant's room name.
func (s *Store) Room(ctx context.Context, tenant, name string) (*herald.Room, error) {
	r, err := scanRoom(s.rs.room.QueryRowContext(ctx, tenant, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, herald.ErrNotFound
	}
	return &r, wrap("room", err)
}

// Rooms returns tenant's rooms, by name.
func (s *Store) Rooms(ctx context.Context, tenant string) ([]herald.Room, error) {
	rows, err := s.rs.rooms.QueryContext(ctx, tenant)
	rooms, err := collect(rows, err, scanRoom)
	return rooms, wrap("rooms", err)
}

// scanRoom reads the roomCols and the count of roomSubsSQL.
func scanRoom(sc rowScanner) (herald.Room, error) {
	var (
		r                            herald.Room
		expiration, delay, createdAt int64
		multiplier                   float64
		attempts                     int
	)
	err := sc.Scan(&r.Tenant, &r.Name, &expiration, &delay, &multiplier, &attempts, &r.Revision, &createdAt, &r.Subscriptions)
	r.Expiration, r.CreatedAt = time.Duration(expiration)*time.Millisecond, unixms.Time(createdAt)
	r.Delivery = herald.DeliveryPolicy{Delay: time.Duration(delay) * time.Millisecond, Multiplier: multiplier, Attempts: attempts}
	return r, err
}

// DeleteRoom deletes tenant's room name with its subscriptions and ends
// their active deliveries, in one transaction.
func (s *Store) DeleteRoom(ctx context.Context, tenant, name string, end herald.DeliveryEnd) (int, error) {
	var n int
	err := s.write(ctx, func(tx *wtx) error {
		n = 0
		gone, err := deleted(tx.st.deleteRoom.Exec(tenant, name))
		if err != nil {
			return err
		}
		if gone == 0 {
			return herald.ErrNotFound
		}
		rows, err := tx.st.roomSubscriptions.Query(tenant, name)
		subs, err := collect(rows, err, func(sc rowScanner) (string, error) {
			var id string
			return id, sc.Scan(&id)
		})
		if err != nil {
			return err
		}
		for _, id := range subs {
			ended, err := tx.endDeliveries(herald.RoomRoutePrefix+name, id, end)
			if err != nil {
				return err
			}
			n += ended
			if _, err := tx.st.deleteSubscription.Exec(id); err != nil {
				return err
			}
		}
		return nil
	})
	return n, wrap("delete room", err)
}

// CreateSubscription stores sub and changes its room's revision, in one
// transaction.
func (s *Store) CreateSubscription(ctx context.Context, sub herald.Subscription) error {
	types := make([][2]string, len(sub.EventTypes))
	for i, et := range sub.EventTypes {
		types[i] = [2]string{et.Type, et.Version}
	}
	typesJSON, err := json.Marshal(types)
	if err != nil {
		return wrap("create subscription", err)
	}
	var delay, multiplier, attempts any
	if d := sub.Delivery.Delay; d != nil {
		delay = d.Milliseconds()
	}
	if m := sub.Delivery.Multiplier; m != nil {
		multiplier = *m
	}
	if a := sub.Delivery.Attempts; a != nil {
		attempts = *a
	}
	err = s.write(ctx, func(tx *wtx) error {
		n, err := deleted(tx.st.bumpRoom.Exec(sub.Tenant, sub.Room))
		if err != nil {
			return err
		}
		if n == 0 {
			return herald.ErrNotFound
		}
		_, err = tx.st.insertSubscription.Exec(sub.ID, sub.Tenant, sub.Room, string(sub.Type), sub.URL, sub.SecretEnv,
			string(typesJSON), delay, multiplier, attempts, unixms.From(sub.CreatedAt), sub.Secret)
		return err
	})
	return wrap("create subscription", err)
}

// Subscription returns the subscription id.
func (s *Store) Subscription(ctx context.Context, id string) (*herald.Subscription, error) {
	sub, err := scanSubscription(s.rs.subscription.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, herald.ErrNotFound
	}
	return &sub, wrap("subscription", err)
}

// Subscriptions returns the subscriptions of tenant's room, by id.
func (s *Store) Subscriptions(ctx context.Context, tenant, room string) ([]herald.Subscription, error) {
	rows, err := s.rs.subscriptions.QueryContext(ctx, tenant, room)
	subs, err := collect(rows, err, scanSubscription)
	return subs, wrap("subscriptions", err)
}

// scanSubscription reads the subCols.
func scanSubscription(sc rowScanner) (herald.Subscription, error) {
	var (
		sub        herald.Subscription
		typ, types string
		delay      sql.NullInt64
		multiplier sql.NullFloat64
		attempts   sql.NullInt64
		createdAt  int64
	)
	if err := sc.Scan(&sub.ID, &sub.Tenant, &sub.Room, &typ, &sub.URL, &sub.SecretEnv, &types,
		&delay, &multiplier, &attempts, &createdAt, &sub.Secret); err != nil {
		return sub, err
	}
	sub.Type, sub.CreatedAt = herald.SubscriptionType(typ), unixms.Time(createdAt)
	var pairs [][2]string
	if err := json.Unmarshal([]byte(types), &pairs); err != nil {
		return sub, err
	}
	for _, p := range pairs {
		sub.EventTypes = append(sub.EventTypes, herald.EventType{Type: p[0], Version: p[1]})
	}
	if delay.Valid {
		d := time.Duration(delay.Int64) * time.Millisecond
		sub.Delivery.Delay = &d
	}
	if multiplier.Valid {
		sub.Delivery.Multiplier = &multiplier.Float64
	}
	if attempts.Valid {
		a := int(attempts.Int64)
		sub.Delivery.Attempts = &a
	}
	return sub, nil
}

// DeleteSubscription deletes tenant's subscription id, changes its room's
// revision and ends its active deliveries, in one transaction.
func (s *Store) DeleteSubscription(ctx context.Context, tenant, id string, end herald.DeliveryEnd) (int, error) {
	var n int
	err := s.write(ctx, func(tx *wtx) error {
		var room string
		err := tx.st.subRoom.QueryRow(id, tenant).Scan(&room)
		if errors.Is(err, sql.ErrNoRows) {
			return herald.ErrNotFound
		}
		if err != nil {
			return err
		}
		if n, err = tx.endDeliveries(herald.RoomRoutePrefix+room, id, end); err != nil {
			return err
		}
		if _, err := tx.st.deleteSubscription.Exec(id); err != nil {
			return err
		}
		_, err = tx.st.bumpRoom.Exec(tenant, room)
		return err
	})
	return n, wrap("delete subscription", err)
}

// endDeliveries ends the active deliveries of route to subscription sub
// as end says, and returns how many.
func (tx *wtx) endDeliveries(route, sub string, end herald.DeliveryEnd) (int, error) {
	rows, err := tx.st.activeDeliveries.Query(route, sub)
	active, err := collect(rows, err, func(sc rowScanner) (herald.Transition, error) {
		t := herald.Transition{At: end.At, Reason: end.Reason}
		err := sc.Scan(&t.ID, &t.From)
		return t, err
	})
	if err != nil {
		return 0, err
	}
	for _, t := range active {
		if t.From.Waiting() {
			t.To, t.Notify = herald.StatusCancelled, end.CancelNotify
		} else {
			t.To, t.Notify, t.LastError = herald.StatusDeliveryFailed, end.FailNotify, end.Reason
		}
		if err := tx.transition(t); err != nil {
			return 0, err
		}
	}
	return len(active), nil
}

// Publish stores p's event and creates its deliveries in one transaction,
// once the room's revision is p.Revision.
func (s *Store) Publish(ctx context.Context, p herald.Publication) error {
	ev := p.Event
	pairs := make([][2]string, len(ev.Deliveries))
	for i, d := range ev.Deliveries {
		pairs[i] = [2]string{d.SubscriptionID, d.MessageID}
	}
	deliveries, err := json.Marshal(pairs)
	if err != nil {
		return wrap("publish", err)
	}
	msgs := make([]herald.Message, len(p.Deliveries))
	params := make([]string, len(p.Deliveries))
	for i, m := range p.Deliveries {
		msgs[i] = herald.AsCreated(m)
		if params[i], err = encodeParams(m.Params); err != nil {
			return wrap("publish", err)
		}
	}
	err = s.write(ctx, func(tx *wtx) error {
		var rev int64
		err := tx.st.roomRevision.QueryRow(ev.Tenant, ev.Room).Scan(&rev)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return herald.ErrNotFound
		case err != nil:
			return err
		case rev != p.Revision:
			return herald.ErrConflict
		}
		if _, err := tx.st.insertRoomEvt.Exec(ev.ID, ev.Tenant, ev.Room, ev.Type, ev.Version, ev.CorrelationID, []byte(ev.Data),
			string(deliveries), unixms.From(ev.CreatedAt)); err != nil {
			return err
		}
		for i := range msgs {
			if err := tx.insert(&msgs[i], params[i], ""); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("publish", err)
}

// RoomEvent returns the room event id.
func (s *Store) RoomEvent(ctx context.Context, id string) (*herald.RoomEvent, error) {
	var (
		ev         herald.RoomEvent
		data       []byte
		deliveries string
		createdAt  int64
	)
	err := s.rs.roomEvent.QueryRowContext(ctx, id).Scan(&ev.ID, &ev.Tenant, &ev.Room, &ev.Type, &ev.Version,
		&ev.CorrelationID, &data, &deliveries, &createdAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, herald.ErrNotFound
	}
	if err != nil {
		return nil, wrap("room event", err)
	}
	ev.Data, ev.CreatedAt = data, unixms.Time(createdAt)
	var pairs [][2]string
	if err := json.Unmarshal([]byte(deliveries), &pairs); err != nil {
		return nil, wrap("room event", err)
	}
	for _, p := range pairs {
		ev.Deliveries = append(ev.Deliveries, herald.Delivery{SubscriptionID: p[0], MessageID: p[1]})
	}
	return &ev, nil
}

// Pull moves up to p.Limit due, unexpired pull messages of p.Route and
// p.Target to SENT_TO_NS under p.Lease, with one UPDATE in the
// writer's transaction, and returns them in lease order.
func (s *Store) Pull(ctx context.Context, p herald.PullClaim) ([]*herald.Message, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	var msgs []*herald.Message
	err := s.write(ctx, func(tx *wtx) error {
		rows, err := tx.st.pull.Query(unixms.From(p.Now), unixms.From(p.Deadline), p.Lease,
			entryTail(p.Now, herald.StatusQueued, herald.StatusSentToNS, p.Reason), p.Route, p.Target, p.Limit)
		msgs, err = scanMessages(rows, err)
		return err
	})
	if err != nil {
		return nil, wrap("pull", err)
	}
	slices.SortFunc(msgs, func(a, b *herald.Message) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), strings.Compare(a.ID, b.ID))
	})
	return msgs, nil
}

// PullQueue counts the QUEUED pull messages of route and target, in
// messages_pull.
func (s *Store) PullQueue(ctx context.Context, route, target string) (int, error) {
	var n int
	err := s.rs.pullQueue.QueryRowContext(ctx, route, target).Scan(&n)
	return n, wrap("pull queue", err)
}
