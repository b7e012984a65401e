package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
)

// laneView is one lane in the answer of GET /v1/lanes. A lane is shared by
// every tenant whose messages take it, so it shows counts only: in_flight
// is a number, never the ids, which may be other tenants' messages.
type laneView struct {
	Route  string `json:"route"`
	Lane   string `json:"lane"`
	Queued int    `json:"queued"`
	// InFlight counts the lane's messages in flight, of every tenant.
	InFlight int `json:"in_flight"`
	// PausedUntil and PauseReason say until when and why the lane is
	// paused (backpressure); null and "" when it is not.
	PausedUntil *time.Time `json:"paused_until"`
	PauseReason string     `json:"pause_reason"`
	// NextAt is when the lane's spacing lets its next message go; null
	// when it may go now.
	NextAt *time.Time `json:"next_at"`
}

// lanesBody is the answer of GET /v1/lanes.
type lanesBody struct {
	Lanes []laneView `json:"lanes"`
}

// lanes handles GET /v1/lanes?route=&limit=: the busiest lanes of the
// gated routes (of route only, when given), at most limit of them (default
// herald.DefaultLaneLimit, at most herald.MaxLaneLimit).
func (a *api) lanes(w http.ResponseWriter, r *http.Request) {
	limit := herald.DefaultLaneLimit
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > herald.MaxLaneLimit {
			writeRequestError(w, badRequest(codeInvalidField, "limit: want an integer from 1 to %d", herald.MaxLaneLimit))
			return
		}
		limit = n
	}
	lanes, err := a.engine.Lanes(r.Context(), r.URL.Query().Get("route"), limit)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body := lanesBody{Lanes: make([]laneView, 0, len(lanes))}
	for _, l := range lanes {
		body.Lanes = append(body.Lanes, laneView{
			Route: l.Route, Lane: l.Lane, Queued: l.Queued, InFlight: len(l.InFlight),
			PausedUntil: timeOrNull(l.PausedUntil), PauseReason: l.PauseReason, NextAt: timeOrNull(l.NextAt),
		})
	}
	writeJSON(w, http.StatusOK, body)
}

// timeOrNull is t in UTC, or nil (JSON null) when t is zero.
func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
