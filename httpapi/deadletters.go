package httpapi

import (
	"net/http"

	"github.com/heraldmq/herald"
)

// replayBody is the JSON body of POST /v1/dead-letters/replay; every field
// is an optional filter.
type replayBody struct {
	Route    string   `json:"route"`
	Target   string   `json:"target"`
	Reason   string   `json:"reason"`
	Since    bodyTime `json:"since"`
	Until    bodyTime `json:"until"`
	RatePerS float64  `json:"rate_per_s"`
}

// deadLetters handles GET /v1/dead-letters?route=&reason=&limit=&cursor=:
// DELIVERY_FAILED messages, newest first.
func (a *api) deadLetters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, bad := parseLimit(r)
	if bad != nil {
		writeRequestError(w, bad)
		return
	}
	query := herald.Query{
		Status: herald.StatusDeliveryFailed, Route: q.Get("route"), Reason: q.Get("reason"),
		Limit: limit, Cursor: q.Get("cursor"),
	}
	a.listPage(w, r, query)
}

// replayDeadLetters handles POST /v1/dead-letters/replay: {"replayed":N}.
// An empty body replays every dead letter of the tenant.
func (a *api) replayDeadLetters(w http.ResponseWriter, r *http.Request) {
	var body replayBody
	if bad := decodeBody(w, r, &body, true); bad != nil {
		writeRequestError(w, bad)
		return
	}
	f := herald.DeadLetterFilter{Route: body.Route, Target: body.Target, Reason: body.Reason, RatePerS: body.RatePerS}
	var bad *requestError
	if f.Since, bad = body.Since.parse("since"); bad != nil {
		writeRequestError(w, bad)
		return
	}
	if f.Until, bad = body.Until.parse("until"); bad != nil {
		writeRequestError(w, bad)
		return
	}
	n, err := a.engine.ReplayDeadLetters(r.Context(), tenantOf(r), f)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"replayed": n})
}

// purgeDeadLetters handles DELETE /v1/dead-letters?route=&before=: {"purged":N}.
func (a *api) purgeDeadLetters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	before, bad := parseTime("before", q.Get("before"))
	if bad != nil {
		writeRequestError(w, bad)
		return
	}
	n, err := a.engine.PurgeDeadLetters(r.Context(), tenantOf(r), q.Get("route"), before)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"purged": n})
}
