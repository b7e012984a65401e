package herald

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Pull leases up to max (DefaultPull when 0) of the waiting deliveries of
// tenant's pull subscription id for lease (DefaultLease when 0), highest
// priority first, then oldest first: each moves to SENT_TO_NS, its attempt
// counted, until it is acknowledged (Ack), handed back (Nack) or the lease
// runs out, which counts as a hand-back. No delivery is leased to two
// callers at once, whichever node they call. The deliveries of one pull
// share one lease, drawn at random; each one's LeaseID names it to Ack
// and Nack. A delivery past its room's expiration is not leased. It
// returns ErrNotFound for an unknown subscription, ErrNotPull for a push
// one, and an *InvalidError for max or lease out of bounds.
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
		Deadline: now.Add(lease), Lease: randomLease(), Reason: "leased to a puller"})
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		e.transitioned(m, StatusQueued, StatusSentToNS)
	}
	// Leased already: should the events' data not be read, the leases run
	// out and the deliveries come back.
	if err := e.fillEventData(ctx, msgs...); err != nil {
		return nil, err
	}
	return msgs, nil
}

// randomLease returns a lease drawn at random: 63 bits, never 0.
func randomLease() int64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		if l := int64(binary.BigEndian.Uint64(b[:]) >> 1); l != 0 {
			return l
		}
	}
}

// LeaseID names the lease under which m, a pulled delivery, is held: its
// message id, a dot, and its lease as 16 hexadecimal digits; "" when m is
// not leased. A pull's lease is drawn at random (63 bits), so a puller
// cannot name another's lease but by the 2^63 guesses it would take.
func (m *Message) LeaseID() string {
	if m.Lease == 0 {
		return ""
	}
	return fmt.Sprintf("%s.%016x", m.ID, uint64(m.Lease))
}

// heldLease is a lease id read: the delivery and the lease it names.
type heldLease struct {
	id      string // the lease id as given
	message string
	lease   int64
}

// parseLeaseID reads a lease id that LeaseID made.
func parseLeaseID(s string) (heldLease, bool) {
	dot := strings.LastIndexByte(s, '.')
	if dot <= 0 || len(s)-dot-1 != 16 {
		return heldLease{}, false
	}
	n, err := strconv.ParseUint(s[dot+1:], 16, 64)
	if err != nil || n == 0 || n > math.MaxInt64 {
		return heldLease{}, false
	}
	return heldLease{id: s, message: s[:dot], lease: int64(n)}, true
}

// Ack acknowledges the deliveries of tenant's pull subscription id that
// leaseIDs name (each a LeaseID, as a pull gave it): each still held
// under its lease ends DELIVERY_SUCCESSFUL. It returns how many did, and
// the lease ids no longer held (the lease ran out, the delivery was
// leased again, acknowledged or ended otherwise, or it is not the
// subscription's), which it changed nothing for. A lease id given twice
// counts once. A lease id that LeaseID cannot have made, or more than
// MaxPull of them, is an *InvalidError naming lease_ids, and changes
// nothing.
func (e *Engine) Ack(ctx context.Context, tenant, id string, leaseIDs []string) (acked int, lost []string, err error) {
	return e.settle(ctx, tenant, id, leaseIDs, func(*route, *Message) Transition {
		return Transition{From: StatusSentToNS, To: StatusDeliverySuccessful, Reason: "acknowledged by the subscriber"}
	})
}

// Nack hands back the deliveries of tenant's pull subscription id that
// leaseIDs name: each still held under its lease goes back to wait for
// its subscription's backoff (TO_RETRY), or ends DELIVERY_FAILED when its
// attempts are used up. It returns how many it handed back, and the
// lease ids no longer held, as Ack does.
func (e *Engine) Nack(ctx context.Context, tenant, id string, leaseIDs []string) (nacked int, lost []string, err error) {
	return e.settle(ctx, tenant, id, leaseIDs, func(r *route, m *Message) Transition {
		return e.failure(r, m, errors.New("handed back by the subscriber"), "nacked")
	})
}

// settle applies to each delivery of tenant's pull subscription id that
// a lease of leaseIDs still holds the transition that to returns for it,
// under that lease, and returns how many it applied and the lease ids
// that held nothing.
func (e *Engine) settle(ctx context.Context, tenant, id string, leaseIDs []string, to func(*route, *Message) Transition) (int, []string, error) {
	if len(leaseIDs) > MaxPull {
		return 0, nil, Invalid("lease_ids", "%d lease ids; at most %d", len(leaseIDs), MaxPull)
	}
	leases := make([]heldLease, 0, len(leaseIDs))
	given := make(map[string]bool, len(leaseIDs))
	for i, lid := range leaseIDs {
		l, ok := parseLeaseID(lid)
		if !ok {
			return 0, nil, Invalid(fmt.Sprintf("lease_ids[%d]", i), "%q is not a lease id: give the lease_id of a pulled delivery as the pull gave it", truncate(lid, 80))
		}
		if !given[lid] {
			given[lid] = true
			leases = append(leases, l)
		}
	}
	s, err := e.pullSubscription(ctx, tenant, id)
	if err != nil {
		return 0, nil, err
	}
	routeName := RoomRoutePrefix + s.Room
	r, ok := e.route(routeName)
	if !ok {
		return 0, nil, e.servesRoom(s.Room)
	}
	n, lost := 0, []string{}
	for _, l := range leases {
		m, err := e.store.Get(ctx, l.message)
		switch {
		case errors.Is(err, ErrNotFound):
			lost = append(lost, l.id)
			continue
		case err != nil:
			return n, lost, err
		case m.Tenant != tenant || m.Route != routeName || m.Target != s.ID || !m.Pull ||
			m.Status != StatusSentToNS || m.Lease != l.lease || !e.clock.Now().Before(m.Deadline):
			lost = append(lost, l.id) // not this subscription's, or no longer held: its lease ran out
			continue
		}
		t := to(r, m)
		t.Lease = l.lease
		err = e.apply(ctx, m, t)
		switch {
		case errors.Is(err, ErrConflict):
			lost = append(lost, l.id) // the reaper ended the lease meanwhile
			continue
		case err != nil:
			return n, lost, err
		}
		n++
	}
	return n, lost, nil
}

// PullQueue returns how many deliveries of s, a pull subscription, wait
// to be pulled (QUEUED, due or not): its queue's depth. A push
// subscription's is ErrNotPull.
func (e *Engine) PullQueue(ctx context.Context, s *Subscription) (int, error) {
	if s.Type != SubscriptionPull {
		return 0, fmt.Errorf("%w: subscription %s is %s", ErrNotPull, s.ID, s.Type)
	}
	return e.store.PullQueue(ctx, RoomRoutePrefix+s.Room, s.ID)
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
