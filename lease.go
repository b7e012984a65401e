package herald

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Pull leases up to max (DefaultPull when 0) of the waiting deliveries of
// tenant's pull subscription id for lease (DefaultLease when 0), highest
// priority first, then oldest first: each moves to SENT_TO_NS, its attempt
// counted, until it is acknowledged (Ack), handed back (Nack) or the lease
// runs out, which counts as a hand-back. No delivery is leased to two
// callers at once, whichever node they call. A delivery past its room's
// expiration is not leased. It returns ErrNotFound for an unknown
// subscription, ErrNotPull for a push one, and an *InvalidError for max or
// lease out of bounds.
func (e *Engine) Pull(ctx context.Context, tenant, id string, max int, lease time.Duration) ([]*Message, error) {
	switch {
	case max < 0 || max > MaxPull:
		return nil, Invalid("max", "%d is not within 1..%d", max, MaxPull)
	case max == 0:
		max = DefaultPull
	}
	switch {
	case lease < 0 || lease > MaxLease || (lease > 0 && lease < time.Millisecond):
		return nil, Invalid("lease", "%v is not within 1ms..%v", lease, MaxLease)
	case lease == 0:
		lease = DefaultLease
	}
	s, err := e.pullSubscription(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now()
	msgs, err := e.store.Pull(ctx, PullClaim{Route: RoomRoutePrefix + s.Room, Target: s.ID, Now: now, Limit: max,
		Deadline: now.Add(lease), Reason: "leased to a puller"})
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		e.transitioned(m, StatusQueued, StatusSentToNS)
	}
	return msgs, nil
}

// Ack acknowledges the deliveries ids of tenant's pull subscription id:
// each that is leased ends DELIVERY_SUCCESSFUL. It returns how many did;
// an id that is not a leased delivery of the subscription is skipped.
func (e *Engine) Ack(ctx context.Context, tenant, id string, ids []string) (int, error) {
	return e.settle(ctx, tenant, id, ids, func(*route, *Message) Transition {
		return Transition{From: StatusSentToNS, To: StatusDeliverySuccessful, Reason: "acknowledged by the subscriber"}
	})
}

// Nack hands back the deliveries ids of tenant's pull subscription id:
// each that is leased goes back to wait for its subscription's backoff
// (TO_RETRY), or ends DELIVERY_FAILED when its attempts are used up. It
// returns how many it handed back; an id that is not a leased delivery of
// the subscription is skipped.
func (e *Engine) Nack(ctx context.Context, tenant, id string, ids []string) (int, error) {
	return e.settle(ctx, tenant, id, ids, func(r *route, m *Message) Transition {
		return e.failure(r, m, errors.New("handed back by the subscriber"), "nacked")
	})
}

// settle applies to each leased delivery of ids, of tenant's pull
// subscription id, the transition that to returns for it, under its
// lease, and returns how many it applied.
func (e *Engine) settle(ctx context.Context, tenant, id string, ids []string, to func(*route, *Message) Transition) (int, error) {
	if len(ids) > MaxPull {
		return 0, Invalid("ids", "%d ids; at most %d", len(ids), MaxPull)
	}
	s, err := e.pullSubscription(ctx, tenant, id)
	if err != nil {
		return 0, err
	}
	routeName := RoomRoutePrefix + s.Room
	r, ok := e.route(routeName)
	if !ok {
		return 0, e.servesRoom(s.Room)
	}
	n := 0
	for _, mid := range ids {
		m, err := e.store.Get(ctx, mid)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return n, err
		case m.Tenant != tenant || m.Route != routeName || m.Target != s.ID || !m.Pull || m.Status != StatusSentToNS:
			continue
		}
		t := to(r, m)
		t.Lease = m.Lease
		err = e.apply(ctx, m, t)
		switch {
		case errors.Is(err, ErrConflict):
			continue // its lease ran out meanwhile
		case err != nil:
			return n, err
		}
		n++
	}
	return n, nil
}

// pullSubscription returns tenant's subscription id, ErrNotPull when it
// is not a pull subscription.
func (e *Engine) pullSubscription(ctx context.Context, tenant, id string) (*Subscription, error) {
	s, err := e.Subscription(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if s.Type != SubscriptionPull {
		return nil, fmt.Errorf("%w: subscription %s is %s", ErrNotPull, id, s.Type)
	}
	return s, nil
}
