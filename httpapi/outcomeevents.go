package httpapi

import (
	"net/http"

	"github.com/heraldmq/herald"
)

// deadEventsBody is the answer of GET /v1/outcome-events.
type deadEventsBody struct {
	Events     []herald.DeadEventView `json:"events"`
	NextCursor string                 `json:"next_cursor"`
}

// outcomeEvents handles GET
// /v1/outcome-events?status=dead&subscriber=&since=&until=&limit=&cursor=:
// the tenant's dead outcome events, newest first.
func (a *api) outcomeEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if s := q.Get("status"); s != "" && s != "dead" {
		writeError(w, http.StatusBadRequest, codeInvalidField, "status: only the dead outcome events are listed: status=dead, or none")
		return
	}
	f := herald.DeadEventFilter{Subscriber: q.Get("subscriber"), Cursor: q.Get("cursor")}
	var bad *requestError
	if f.Limit, bad = parseLimit(r); bad == nil {
		if f.Since, bad = parseTime("since", q.Get("since")); bad == nil {
			f.Until, bad = parseTime("until", q.Get("until"))
		}
	}
	if bad != nil {
		writeRequestError(w, bad)
		return
	}
	events, next, err := a.engine.DeadEvents(r.Context(), tenantOf(r), f)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deadEventsBody{Events: events, NextCursor: next})
}

// eventReplayBody is the body of POST /v1/outcome-events/replay: ids, or a
// filter (every field optional).
type eventReplayBody struct {
	IDs        []string `json:"ids"`
	Subscriber string   `json:"subscriber"`
	Since      bodyTime `json:"since"`
	Until      bodyTime `json:"until"`
}

// replayOutcomeEvents handles POST /v1/outcome-events/replay:
// {"replayed":N}. An empty body replays every dead outcome event of the
// tenant.
func (a *api) replayOutcomeEvents(w http.ResponseWriter, r *http.Request) {
	var body eventReplayBody
	if bad := decodeBody(w, r, &body, true); bad != nil {
		writeRequestError(w, bad)
		return
	}
	rep := herald.EventReplay{IDs: body.IDs, Subscriber: body.Subscriber}
	var bad *requestError
	if rep.Since, bad = body.Since.parse("since"); bad == nil {
		rep.Until, bad = body.Until.parse("until")
	}
	if bad != nil {
		writeRequestError(w, bad)
		return
	}
	n, err := a.engine.ReplayEvents(r.Context(), tenantOf(r), rep)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"replayed": n})
}
