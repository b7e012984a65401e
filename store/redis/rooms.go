package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// A room is a hash, room:<T|N>, listed in rooms:<T>; a subscription a
// hash, sub:<id>, listed in subs:<T|N>; a room event a hash, evt:<id>,
// listed in evts by time (see lua/lib.lua). A room's deliveries are
// messages whose field k ends in their kind (|p pulled, |d pushed): the
// active ones are in their subscription's sd:<R|G>, and a pull
// subscription's QUEUED ones in its pq:<R|G> instead of ready.

// roomKey returns the name of tenant's room name's hash, after room:.
func roomKey(tenant, name string) string { return esc(tenant) + "|" + name }

// CreateRoom stores r unless its tenant has a room of its name
// (herald.ErrRoomExists).
func (s *Store) CreateRoom(ctx context.Context, r herald.Room) error {
	res, err := s.eval(ctx, createRoomScript, esc(r.Tenant), r.Name,
		"exp", r.Expiration.Milliseconds(), "delay", r.Delivery.Delay.Milliseconds(), "mult", formatFloat(r.Delivery.Multiplier),
		"att", r.Delivery.Attempts, "rev", r.Revision, "at", unixms.From(r.CreatedAt))
	if err != nil {
		return wrap(ctx, "create room", err)
	}
	if res == int64(1) {
		return herald.ErrRoomExists
	}
	return nil
}

// Room returns tenant's room name.
func (s *Store) Room(ctx context.Context, tenant, name string) (*herald.Room, error) {
	var (
		h    *goredis.MapStringStringCmd
		subs *goredis.IntCmd
	)
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		h = p.HGetAll(ctx, s.key("room:"+roomKey(tenant, name)))
		subs = p.ZCard(ctx, s.key("subs:"+roomKey(tenant, name)))
		return nil
	})
	if err != nil {
		return nil, wrap(ctx, "room", err)
	}
	if len(h.Val()) == 0 {
		return nil, herald.ErrNotFound
	}
	r, err := decodeRoom(tenant, name, h.Val())
	if r != nil {
		r.Subscriptions = int(subs.Val())
	}
	return r, wrap(ctx, "room", err)
}

// Rooms returns tenant's rooms, by name.
func (s *Store) Rooms(ctx context.Context, tenant string) ([]herald.Room, error) {
	names, err := s.client.ZRange(ctx, s.key("rooms:"+esc(tenant)), 0, -1).Result()
	if err != nil {
		return nil, wrap(ctx, "rooms", err)
	}
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = s.key("room:" + roomKey(tenant, name))
	}
	hashes, err := s.hashesOf(ctx, keys)
	if err != nil {
		return nil, wrap(ctx, "rooms", err)
	}
	subKeys := make([]string, len(names))
	for i, name := range names {
		subKeys[i] = s.key("subs:" + roomKey(tenant, name))
	}
	counts, err := s.pipelined(ctx, subKeys, func(p goredis.Pipeliner, key string) { p.ZCard(ctx, key) })
	if err != nil {
		return nil, wrap(ctx, "rooms", err)
	}
	rooms := make([]herald.Room, 0, len(names))
	for i, h := range hashes {
		if len(h) == 0 {
			continue // deleted between the reads
		}
		r, err := decodeRoom(tenant, names[i], h)
		if err != nil {
			return nil, wrap(ctx, "rooms", err)
		}
		r.Subscriptions = int(counts[i].(*goredis.IntCmd).Val())
		rooms = append(rooms, *r)
	}
	return rooms, nil
}

// decodeRoom returns tenant's room name of hash h.
func decodeRoom(tenant, name string, h map[string]string) (*herald.Room, error) {
	var n [5]int64
	for i, f := range []string{"exp", "delay", "att", "rev", "at"} {
		v, err := strconv.ParseInt(h[f], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("malformed room %s: %s=%q", name, f, h[f])
		}
		n[i] = v
	}
	mult, err := strconv.ParseFloat(h["mult"], 64)
	if err != nil {
		return nil, fmt.Errorf("malformed room %s: mult=%q", name, h["mult"])
	}
	return &herald.Room{
		Tenant: tenant, Name: name, Expiration: time.Duration(n[0]) * time.Millisecond,
		Delivery: herald.DeliveryPolicy{Delay: time.Duration(n[1]) * time.Millisecond, Multiplier: mult, Attempts: int(n[2])},
		Revision: n[3], CreatedAt: unixms.Time(n[4]),
	}, nil
}

// DeleteRoom deletes tenant's room name with its subscriptions and ends
// their active deliveries, in one script.
func (s *Store) DeleteRoom(ctx context.Context, tenant, name string, end herald.DeliveryEnd) (int, error) {
	args := append([]any{esc(tenant), name, esc(herald.RoomRoutePrefix + name)}, endArgs(end)...)
	res, err := s.eval(ctx, deleteRoomScript, args...)
	if err != nil {
		return 0, wrap(ctx, "delete room", err)
	}
	return ended("delete room", res)
}

// endArgs returns the arguments that tell delete_room.lua and
// delete_sub.lua how to end deliveries.
func endArgs(end herald.DeliveryEnd) []any {
	args := make([]any, 0, 3+len(end.CancelNotify)+len(end.FailNotify))
	args = append(args, unixms.From(end.At), end.Reason, len(end.CancelNotify))
	for _, sub := range end.CancelNotify {
		args = append(args, sub)
	}
	for _, sub := range end.FailNotify {
		args = append(args, sub)
	}
	return args
}

// ended returns the reply of a deletion script: how many deliveries it
// ended, herald.ErrNotFound for -1.
func ended(op string, res any) (int, error) {
	n, err := count(op, res)
	if err == nil && n < 0 {
		return 0, herald.ErrNotFound
	}
	return n, err
}

// CreateSubscription stores sub and changes its room's revision, in one
// script.
func (s *Store) CreateSubscription(ctx context.Context, sub herald.Subscription) error {
	types := make([][2]string, len(sub.EventTypes))
	for i, et := range sub.EventTypes {
		types[i] = [2]string{et.Type, et.Version}
	}
	typesJSON, err := json.Marshal(types)
	if err != nil {
		return wrap(ctx, "create subscription", err)
	}
	var delay, mult, att string
	if d := sub.Delivery.Delay; d != nil {
		delay = strconv.FormatInt(d.Milliseconds(), 10)
	}
	if m := sub.Delivery.Multiplier; m != nil {
		mult = formatFloat(*m)
	}
	if a := sub.Delivery.Attempts; a != nil {
		att = strconv.Itoa(*a)
	}
	res, err := s.eval(ctx, createSubScript, esc(sub.Tenant), sub.Room, sub.ID,
		"t", esc(sub.Tenant), "r", sub.Room, "type", string(sub.Type), "url", sub.URL, "senv", sub.SecretEnv, "sec", sub.Secret,
		"types", typesJSON, "delay", delay, "mult", mult, "att", att, "at", unixms.From(sub.CreatedAt))
	if err != nil {
		return wrap(ctx, "create subscription", err)
	}
	return outcome("create subscription", res)
}

// Subscription returns the subscription id.
func (s *Store) Subscription(ctx context.Context, id string) (*herald.Subscription, error) {
	h, err := s.client.HGetAll(ctx, s.key("sub:"+id)).Result()
	if err != nil {
		return nil, wrap(ctx, "subscription", err)
	}
	if len(h) == 0 {
		return nil, herald.ErrNotFound
	}
	sub, err := decodeSubscription(id, h)
	return sub, wrap(ctx, "subscription", err)
}

// Subscriptions returns the subscriptions of tenant's room, by id.
func (s *Store) Subscriptions(ctx context.Context, tenant, room string) ([]herald.Subscription, error) {
	ids, err := s.client.ZRange(ctx, s.key("subs:"+roomKey(tenant, room)), 0, -1).Result()
	if err != nil {
		return nil, wrap(ctx, "subscriptions", err)
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.key("sub:" + id)
	}
	hashes, err := s.hashesOf(ctx, keys)
	if err != nil {
		return nil, wrap(ctx, "subscriptions", err)
	}
	subs := make([]herald.Subscription, 0, len(ids))
	for i, h := range hashes {
		if len(h) == 0 {
			continue // deleted between the reads
		}
		sub, err := decodeSubscription(ids[i], h)
		if err != nil {
			return nil, wrap(ctx, "subscriptions", err)
		}
		subs = append(subs, *sub)
	}
	return subs, nil
}

// decodeSubscription returns the subscription id of hash h.
func decodeSubscription(id string, h map[string]string) (*herald.Subscription, error) {
	bad := func(f string) error { return fmt.Errorf("malformed subscription %s: %s=%q", id, f, h[f]) }
	at, err := strconv.ParseInt(h["at"], 10, 64)
	if err != nil {
		return nil, bad("at")
	}
	sub := &herald.Subscription{ID: id, Tenant: unesc(h["t"]), Room: h["r"], Type: herald.SubscriptionType(h["type"]),
		URL: h["url"], SecretEnv: h["senv"], Secret: h["sec"], CreatedAt: unixms.Time(at)}
	var types [][2]string
	if err := json.Unmarshal([]byte(h["types"]), &types); err != nil {
		return nil, bad("types")
	}
	for _, t := range types {
		sub.EventTypes = append(sub.EventTypes, herald.EventType{Type: t[0], Version: t[1]})
	}
	if v := h["delay"]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, bad("delay")
		}
		d := time.Duration(n) * time.Millisecond
		sub.Delivery.Delay = &d
	}
	if v := h["mult"]; v != "" {
		m, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, bad("mult")
		}
		sub.Delivery.Multiplier = &m
	}
	if v := h["att"]; v != "" {
		a, err := strconv.Atoi(v)
		if err != nil {
			return nil, bad("att")
		}
		sub.Delivery.Attempts = &a
	}
	return sub, nil
}

// DeleteSubscription deletes tenant's subscription id, changes its room's
// revision and ends its active deliveries, in one script.
func (s *Store) DeleteSubscription(ctx context.Context, tenant, id string, end herald.DeliveryEnd) (int, error) {
	args := append([]any{esc(tenant), id, esc(herald.RoomRoutePrefix)}, endArgs(end)...)
	res, err := s.eval(ctx, deleteSubScript, args...)
	if err != nil {
		return 0, wrap(ctx, "delete subscription", err)
	}
	return ended("delete subscription", res)
}

// Publish stores p's event and creates its deliveries in one script call
// (with other publications: see batcher), once the room's revision is
// p.Revision.
func (s *Store) Publish(ctx context.Context, p herald.Publication) error {
	ev := p.Event
	pairs := make([][2]string, len(ev.Deliveries))
	for i, d := range ev.Deliveries {
		pairs[i] = [2]string{d.SubscriptionID, d.MessageID}
	}
	deliveries, err := json.Marshal(pairs)
	if err != nil {
		return wrap(ctx, "publish", err)
	}
	enc := newEncoding()
	args := slices.Grow(enc.args, 10+(1+createArgs)*len(p.Deliveries))
	args = append(args, esc(ev.Tenant), ev.Room, p.Revision, ev.ID, ev.Type, ev.Version, ev.CorrelationID, []byte(ev.Data),
		deliveries, unixms.From(ev.CreatedAt))
	for _, m := range p.Deliveries {
		msg := herald.AsCreated(m)
		one, _ := createCall(make([]any, 0, createArgs), nil, &msg, nil)
		args = append(append(args, len(one)), one...)
	}
	enc.args = args
	res, err := s.publishes.do(ctx, enc)
	if err != nil {
		return wrap(ctx, "publish", err)
	}
	switch res {
	case int64(0):
		return nil
	case int64(1):
		return herald.ErrNotFound
	case int64(2):
		return herald.ErrConflict
	case int64(3):
		return fmt.Errorf("redis publish: a delivery's id is taken")
	}
	return fmt.Errorf("redis publish: unexpected reply %v", res)
}

// RoomEvent returns the room event id.
func (s *Store) RoomEvent(ctx context.Context, id string) (*herald.RoomEvent, error) {
	h, err := s.client.HGetAll(ctx, s.key("evt:"+id)).Result()
	if err != nil {
		return nil, wrap(ctx, "room event", err)
	}
	if len(h) == 0 {
		return nil, herald.ErrNotFound
	}
	at, err := strconv.ParseInt(h["at"], 10, 64)
	var pairs [][2]string
	if err == nil {
		err = json.Unmarshal([]byte(h["dl"]), &pairs)
	}
	if err != nil {
		return nil, fmt.Errorf("redis room event: malformed event %s", id)
	}
	ev := &herald.RoomEvent{ID: id, Tenant: unesc(h["t"]), Room: h["r"], Type: h["type"], Version: h["ver"],
		CorrelationID: h["corr"], Data: []byte(h["data"]), CreatedAt: unixms.Time(at)}
	for _, p := range pairs {
		ev.Deliveries = append(ev.Deliveries, herald.Delivery{SubscriptionID: p[0], MessageID: p[1]})
	}
	return ev, nil
}

// Pull leases up to p.Limit due, unexpired pull messages of p.Route and
// p.Target in one script, and reads them as Claim does.
func (s *Store) Pull(ctx context.Context, p herald.PullClaim) ([]*herald.Message, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	res, err := s.eval(ctx, pullScript, unixms.From(p.Now), p.Limit, unixms.From(p.Deadline),
		esc(p.Route)+"|"+esc(p.Target), p.Reason, p.Lease)
	if err != nil {
		return nil, wrap(ctx, "pull", err)
	}
	msgs, err := s.readClaimed(ctx, res)
	return msgs, wrap(ctx, "pull", err)
}

// PullQueue counts the QUEUED pull messages of route and target: their pq.
func (s *Store) PullQueue(ctx context.Context, route, target string) (int, error) {
	n, err := s.client.ZCard(ctx, s.key("pq:"+esc(route)+"|"+esc(target))).Result()
	return int(n), wrap(ctx, "pull queue", err)
}

// hashesOf reads the hashes keys in one pipeline, in order; a hash that
// does not exist is empty.
func (s *Store) hashesOf(ctx context.Context, keys []string) ([]map[string]string, error) {
	cmds, err := s.pipelined(ctx, keys, func(p goredis.Pipeliner, key string) { p.HGetAll(ctx, key) })
	if err != nil {
		return nil, err
	}
	out := make([]map[string]string, len(cmds))
	for i, c := range cmds {
		out[i] = c.(*goredis.MapStringStringCmd).Val()
	}
	return out, nil
}

// formatFloat formats f with every digit it needs.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
