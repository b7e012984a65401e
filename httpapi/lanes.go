package httpapi

import (
	"net/http"
	"strconv"

	"github.com/heraldmq/herald"
)

// lanesBody is the answer of GET /v1/lanes.
type lanesBody struct {
	Lanes []herald.LaneView `json:"lanes"`
	// Pauses are the operator's pauses in force, of every route (gated or
	// not) and lane: shared by every tenant.
	Pauses []herald.PauseView `json:"pauses"`
}

// lanes handles GET /v1/lanes?route=&limit=: the busiest lanes of the
// gated routes (of route only, when given) that hold the tenant's
// messages, counting those alone (every lane and message for an admin
// key), at most limit of them (default herald.DefaultLaneLimit, at most
// herald.MaxLaneLimit).
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
	lanes, err := a.engine.Lanes(r.Context(), herald.LaneQuery{Route: r.URL.Query().Get("route"), Tenant: figuresOf(r), Limit: limit})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body := lanesBody{Lanes: make([]herald.LaneView, 0, len(lanes)), Pauses: []herald.PauseView{}}
	for _, l := range lanes {
		body.Lanes = append(body.Lanes, l.View())
	}
	for _, p := range a.engine.LanePauses() {
		if route := r.URL.Query().Get("route"); route == "" || p.Route == route {
			body.Pauses = append(body.Pauses, p.View())
		}
	}
	writeJSON(w, http.StatusOK, body)
}
