package herald

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Get returns tenant's message id with its timeline, or ErrNotFound.
func (e *Engine) Get(ctx context.Context, tenant, id string) (*Message, error) {
	m, err := e.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if m.Tenant != tenant {
		return nil, ErrNotFound
	}
	return m, e.fillEventData(ctx, m)
}

// List returns tenant's messages matching q, newest first, and the next cursor.
func (e *Engine) List(ctx context.Context, tenant string, q Query) ([]*Message, string, error) {
	if q.Cursor != "" && !validCursor(q.Cursor) {
		return nil, "", Invalid("cursor", "not a cursor this API gave: pass next_cursor from the previous page as it is")
	}
	q.Tenant = tenant
	msgs, next, err := e.store.List(ctx, q)
	if err == nil {
		err = e.fillEventData(ctx, msgs...)
	}
	return msgs, next, err
}

// Cancel moves tenant's QUEUED or TO_RETRY message to CANCELLED. Any other
// status returns ErrNotCancellable.
func (e *Engine) Cancel(ctx context.Context, tenant, id string) (*Message, error) {
	for try := 0; try < 3; try++ {
		m, err := e.Get(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		if !m.Status.Waiting() {
			return m, fmt.Errorf("%w: message is %s", ErrNotCancellable, m.Status)
		}
		err = e.transition(ctx, m, Transition{From: m.Status, To: StatusCancelled, Reason: "cancelled by user"})
		if errors.Is(err, ErrConflict) {
			continue // it moved between the read and the write: look again
		}
		if err != nil {
			return nil, err
		}
		return e.Get(ctx, tenant, id)
	}
	return nil, fmt.Errorf("%w: message keeps changing", ErrNotCancellable)
}

// Replay moves tenant's DELIVERY_FAILED or CANCELLED message back to QUEUED
// with its attempts reset; its timeline keeps the history.
func (e *Engine) Replay(ctx context.Context, tenant, id string) (*Message, error) {
	m, err := e.Get(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if err := e.replay(ctx, m, e.clock.Now(), "replayed by user"); err != nil {
		return m, err
	}
	return e.Get(ctx, tenant, id)
}

// replay re-queues m to be dispatched at due. A room's delivery is
// re-queued only while its subscription exists, checked in the same write
// (Transition.RequireSubscription), so that a deletion racing the replay
// leaves no QUEUED delivery without a subscription.
func (e *Engine) replay(ctx context.Context, m *Message, due time.Time, reason string) error {
	if m.Status != StatusDeliveryFailed && m.Status != StatusCancelled {
		return fmt.Errorf("%w: message is %s", ErrNotReplayable, m.Status)
	}
	now := e.clock.Now()
	t := Transition{From: m.Status, To: StatusQueued, At: now, DueAt: due, ResetAttempts: true, Reason: reason}
	if strings.HasPrefix(m.Route, RoomRoutePrefix) {
		t.RequireSubscription = m.Target
	}
	if !m.ExpiresAt.IsZero() {
		// The replayed message gets a fresh window as long as its first one.
		t.ExpiresAt = due.Add(m.ExpiresAt.Sub(m.CreatedAt))
	}
	err := e.transition(ctx, m, t)
	if errors.Is(err, ErrConflict) {
		if t.RequireSubscription != "" {
			if _, err := e.store.Subscription(ctx, m.Target); errors.Is(err, ErrNotFound) {
				return fmt.Errorf("%w: its subscription is deleted", ErrNotReplayable)
			}
		}
		return fmt.Errorf("%w: message changed meanwhile", ErrNotReplayable)
	}
	if err == nil {
		e.nudge(e.wake)
		e.nudge(e.retryPending)
	}
	return err
}

// DeadLetterFilter selects dead letters to replay.
type DeadLetterFilter struct {
	Route string
	// Target, when not empty, matches the message's target exactly (a
	// room's delivery: its subscription).
	Target string
	Reason string // substring of the last error
	Since  time.Time
	Until  time.Time
	// RatePerS spaces the replayed messages' dispatch: at most this many per
	// second. 0 means no spacing.
	RatePerS float64
}

// ReplayDeadLetters re-queues tenant's dead letters matching f, spreading
// their dispatch at f.RatePerS, and returns how many it re-queued.
func (e *Engine) ReplayDeadLetters(ctx context.Context, tenant string, f DeadLetterFilter) (int, error) {
	if f.RatePerS < 0 {
		return 0, Invalid("rate_per_s", "must not be negative")
	}
	q := Query{Tenant: tenant, Status: StatusDeliveryFailed, Route: f.Route, Target: f.Target, Reason: f.Reason, Since: f.Since, Until: f.Until, Limit: 500}
	var all []*Message
	for {
		page, next, err := e.store.List(ctx, q)
		if err != nil {
			return 0, err
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		q.Cursor = next
	}
	now := e.clock.Now()
	n := 0
	// Oldest first, so that the spacing keeps the original order.
	for i := len(all) - 1; i >= 0; i-- {
		due := now
		if f.RatePerS > 0 {
			due = now.Add(time.Duration(float64(n) / f.RatePerS * float64(time.Second)))
		}
		if err := e.replay(ctx, all[i], due, "dead letter replayed"); err != nil {
			if errors.Is(err, ErrNotReplayable) {
				continue
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// PurgeDeadLetters deletes tenant's dead letters of route (all routes when
// empty) last updated before before (any time when zero).
func (e *Engine) PurgeDeadLetters(ctx context.Context, tenant, route string, before time.Time) (int, error) {
	return e.store.Purge(ctx, PurgeQuery{Tenant: tenant, Route: route, Before: before})
}

// Explanation says why a message is or is not moving.
type Explanation struct {
	ID          string     `json:"id"`
	Status      Status     `json:"status"`
	Reason      string     `json:"reason"`
	Detail      string     `json:"detail"`
	Until       *time.Time `json:"until"`
	BlockingIDs []string   `json:"blocking_ids"`
	// ReplayHelps says, of a DELIVERY_FAILED or CANCELLED message
	// (reason terminal), whether a replay can deliver it; the detail
	// says why it ended and why a replay can help or not. Absent
	// otherwise.
	ReplayHelps *bool `json:"replay_helps,omitempty"`
}

// Explain says why tenant's message id is or is not moving.
func (e *Engine) Explain(ctx context.Context, tenant, id string) (Explanation, error) {
	m, err := e.Get(ctx, tenant, id)
	if err != nil {
		return Explanation{}, err
	}
	now := e.clock.Now()
	x := Explanation{ID: m.ID, Status: m.Status, BlockingIDs: []string{}}
	switch {
	case m.Status.Terminal():
		e.explainEnd(&x, m)
	case m.Status.Waiting() && e.isOrphan(m.Route):
		x.Reason = "route_missing"
		x.Detail = fmt.Sprintf("route %s is not in the configuration: the message waits until a configuration with the route is loaded (herald dlq fail-orphans --route %s fails it)", m.Route, m.Route)
	case scheduled(m, now):
		x.Reason, x.Until = "scheduled", utcPtr(m.DueAt)
		x.Detail = fmt.Sprintf("scheduled: not sent before %s (in %s)", m.DueAt.UTC().Format(time.RFC3339), m.DueAt.Sub(now).Round(time.Millisecond))
	case m.Status.Waiting():
		if p, ok := e.operatorPause(m.Route, m.Lane, now); ok {
			x.Reason, x.Until, x.Detail = "lane_paused", utcOrNil(p.Until), operatorDetail(p)
			return x, nil
		}
		if r := e.routes[m.Route]; r != nil && r.Policy.Admission.Ordered {
			first, err := e.store.FirstActive(ctx, m.Route, m.Target)
			if err != nil {
				return Explanation{}, err
			}
			if first != "" && first != m.ID {
				own, err := e.ownIDs(ctx, tenant, []string{first})
				if err != nil {
					return Explanation{}, err
				}
				x.Reason, x.BlockingIDs = "ordered_behind", own
				x.Detail = fmt.Sprintf("route %s sends to %q one message at a time, in order: %s goes first", m.Route, m.Target, first)
				if len(own) == 0 {
					x.Detail = fmt.Sprintf("route %s sends to %q one message at a time, in order: an earlier message of another tenant goes first", m.Route, m.Target)
				}
				return x, nil
			}
		}
		if r := e.routes[m.Route]; r != nil && r.Policy.Admission.Gated() {
			lane, err := e.store.Lane(ctx, m.Route, m.Lane, m.Tenant)
			if err != nil {
				return Explanation{}, err
			}
			if explainLane(&x, r.Policy.Admission, lane, m, now) {
				// A lane is shared: name only the tenant's own messages.
				if x.BlockingIDs, err = e.ownIDs(ctx, tenant, x.BlockingIDs); err != nil {
					return Explanation{}, err
				}
				return x, nil
			}
		}
		if reason := waitingFor(m, now); reason != "" {
			x.Reason, x.Until = reason, utcPtr(m.DueAt)
			x.Detail = fmt.Sprintf("waiting %s for its carrier (%s) before attempt %d of %d; last error: %s",
				m.DueAt.Sub(now).Round(time.Millisecond), reason, m.Attempt+1, m.MaxAttempts, m.LastError)
			return x, nil
		}
		if m.DueAt.After(now) {
			x.Reason, x.Until = "backoff", utcPtr(m.DueAt)
			x.Detail = fmt.Sprintf("waiting %s before attempt %d of %d", m.DueAt.Sub(now).Round(time.Millisecond), m.Attempt+1, m.MaxAttempts)
			if m.LastError != "" {
				x.Detail += "; last error: " + m.LastError
			}
			return x, nil
		}
		x.Reason, x.Detail = "dispatching", "due now: the dispatcher takes it as soon as a send slot is free"
		if m.Pull {
			x.Reason, x.Detail = "awaiting_carrier", "due now: waiting for its subscriber to pull it"
		}
	case m.Pull:
		x.Reason, x.Until = "awaiting_carrier", utcPtr(m.Deadline)
		x.Detail = "leased to a puller: waiting for its ack or nack until the lease ends"
	default:
		x.Reason, x.Until = "awaiting_carrier", utcPtr(m.Deadline)
		x.Detail = fmt.Sprintf("%s: waiting for the carrier until the stage deadline", m.Status)
	}
	return x, nil
}

// operatorDetail is explain's detail of a message held by p.
func operatorDetail(p LanePause) string {
	what := fmt.Sprintf("lane %q of route %s", p.Lane, p.Route)
	if p.Lane == "" {
		what = "route " + p.Route
	}
	d := what + " is paused by an operator"
	if p.Reason != "" {
		d += ": " + p.Reason
	}
	if !p.Until.IsZero() {
		d += " (until " + p.Until.UTC().Format(time.RFC3339) + ")"
	} else {
		d += " (until resumed)"
	}
	return d
}

// ownIDs returns those of ids that are messages of tenant, in order.
func (e *Engine) ownIDs(ctx context.Context, tenant string, ids []string) ([]string, error) {
	own := []string{}
	for _, id := range ids {
		switch _, err := e.Get(ctx, tenant, id); {
		case err == nil:
			own = append(own, id)
		case !errors.Is(err, ErrNotFound):
			return nil, err
		}
	}
	return own, nil
}

// explainLane fills x when m's lane holds it back at now, and reports
// whether it does: paused, at its concurrency, within its spacing, or out
// of tokens in its own bucket, its tenant's or its route's.
func explainLane(x *Explanation, a Admission, lane LaneState, m *Message, now time.Time) bool {
	name := fmt.Sprintf("lane %q of route %s", m.Lane, m.Route)
	switch {
	case lane.PausedUntil.After(now):
		x.Reason, x.Until = "lane_paused", utcPtr(lane.PausedUntil)
		if slices.Contains(WaitReasons, lane.PauseReason) { // the lane waits for its carrier: a path to the recipient
			x.Reason = lane.PauseReason
		}
		x.Detail = fmt.Sprintf("%s is paused for %s (%s)", name, lane.PausedUntil.Sub(now).Round(time.Millisecond), lane.PauseReason)
	case a.Concurrency > 0 && len(lane.InFlight) >= a.Concurrency:
		x.Reason, x.BlockingIDs = "lane_concurrency", lane.InFlight
		x.Detail = fmt.Sprintf("%s has %d of %d messages in flight", name, len(lane.InFlight), a.Concurrency)
	case a.Spacing > 0 && lane.NextAt.After(now):
		x.Reason, x.Until = "lane_spacing", utcPtr(lane.NextAt)
		x.Detail = fmt.Sprintf("%s takes one dispatch every %s", name, a.Spacing)
	case !a.Rate.IsZero() && !lane.TokensAt.IsZero() && a.Rate.Refill(lane.Tokens, lane.TokensAt, now) < 1:
		until := a.Rate.NextToken(a.Rate.Refill(lane.Tokens, lane.TokensAt, now), now)
		x.Reason, x.Until = "rate_limited", utcPtr(until)
		x.Detail = fmt.Sprintf("%s is limited to %d per %s", name, a.Rate.N, a.Rate.Per)
	case !a.TenantRate.IsZero() && !lane.TenantTokensAt.IsZero() && a.TenantRate.Refill(lane.TenantTokens, lane.TenantTokensAt, now) < 1:
		until := a.TenantRate.NextToken(a.TenantRate.Refill(lane.TenantTokens, lane.TenantTokensAt, now), now)
		x.Reason, x.Until = "tenant_rate_limited", utcPtr(until)
		x.Detail = fmt.Sprintf("tenant %s is limited to %d per %s on route %s", m.Tenant, a.TenantRate.N, a.TenantRate.Per, m.Route)
	case !a.RouteRate.IsZero() && !lane.RouteTokensAt.IsZero() && a.RouteRate.Refill(lane.RouteTokens, lane.RouteTokensAt, now) < 1:
		until := a.RouteRate.NextToken(a.RouteRate.Refill(lane.RouteTokens, lane.RouteTokensAt, now), now)
		x.Reason, x.Until = "rate_limited", utcPtr(until)
		x.Detail = fmt.Sprintf("route %s's bucket is limited to %d per %s across its lanes and tenants", m.Route, a.RouteRate.N, a.RouteRate.Per)
	default:
		return false
	}
	return true
}

// Ready reports whether the store answers and takes writes and the
// engine has started: while the store refuses writes for want of room it
// returns an error that wraps ErrStoreFull, and while Start waits for the
// store one that wraps ErrStoreUnavailable.
func (e *Engine) Ready(ctx context.Context) error {
	if why := e.storeFull(); why != "" {
		return fmt.Errorf("%w: %s", ErrStoreFull, why)
	}
	if err := e.store.Ping(ctx); err != nil {
		return err
	}
	if e.waiting.Load() {
		return fmt.Errorf("%w: herald is starting (the store's admission and the startup drain)", ErrStoreUnavailable)
	}
	return nil
}
