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

// Lanes returns up to limit lanes of the gated routes (of route only, when
// it is not empty), busiest first: by queued plus in flight. A limit of 0
// or less asks for DefaultLaneLimit; one above MaxLaneLimit is an
// *InvalidError, and an unknown route ErrUnknownRoute.
//
// The states are as of now: PausedUntil and PauseReason are cleared when
// the pause is over, NextAt when the lane's spacing no longer holds it.
//
// A lane is shared by every tenant whose messages take it (a gateway
// carries many tenants' messages): Queued counts, and InFlight lists the
// ids of, the messages of all of them. A caller that answers one tenant
// should not pass the ids on.
func (e *Engine) Lanes(ctx context.Context, route string, limit int) ([]LaneState, error) {
	if route != "" {
		if _, ok := e.routes[route]; !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownRoute, route)
		}
	}
	switch {
	case limit <= 0:
		limit = DefaultLaneLimit
	case limit > MaxLaneLimit:
		return nil, Invalid("limit", "want at most %d", MaxLaneLimit)
	}
	lanes, err := e.store.Lanes(ctx, route, limit)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now()
	for i := range lanes {
		asOf(&lanes[i], now)
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
