package herald

import (
	"context"
	"fmt"
	"time"
)

// The bounds of Engine.Lanes's limit.
const (
	// DefaultLaneLimit is the number of lanes Lanes returns when asked for
	// none in particular.
	DefaultLaneLimit = 20
	// MaxLaneLimit is the most lanes Lanes returns at once.
	MaxLaneLimit = 1000
)

// Lanes returns up to q.Limit lanes of the gated routes (of q.Route only,
// when it is not empty), busiest first: by queued plus in flight. A limit
// of 0 or less asks for DefaultLaneLimit; one above MaxLaneLimit is an
// *InvalidError, and an unknown route ErrUnknownRoute.
//
// The states are as of now: PausedUntil and PauseReason are cleared when
// the pause is over, NextAt when the lane's spacing no longer holds it.
//
// A lane is shared by every tenant whose messages take it (a gateway
// carries many tenants' messages, a chat's lane is named by its chat id).
// With q.Tenant, only the lanes that hold that tenant's messages are
// returned, and Queued and InFlight are its messages alone: no tenant
// learns of another's lanes. Without, Queued counts, and InFlight lists
// the ids of, every tenant's messages: for an operator.
func (e *Engine) Lanes(ctx context.Context, q LaneQuery) ([]LaneState, error) {
	if q.Route != "" {
		if _, ok := e.routes[q.Route]; !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownRoute, q.Route)
		}
	}
	switch {
	case q.Limit <= 0:
		q.Limit = DefaultLaneLimit
	case q.Limit > MaxLaneLimit:
		return nil, Invalid("limit", "want at most %d", MaxLaneLimit)
	}
	lanes, err := e.store.Lanes(ctx, q)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now()
	for i := range lanes {
		asOf(&lanes[i], now)
		if p, ok := e.operatorPause(lanes[i].Route, lanes[i].Lane, now); ok {
			lanes[i].Operator = &p
		}
	}
	return lanes, nil
}

// asOf clears what no longer holds the lane back at now.
func asOf(l *LaneState, now time.Time) {
	if !l.PausedUntil.After(now) {
		l.PausedUntil, l.PauseReason = time.Time{}, ""
	}
	if !l.NextAt.After(now) {
		l.NextAt = time.Time{}
	}
}
