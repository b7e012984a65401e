package httpapi

import (
	"net/http"

	"github.com/heraldmq/herald"
)

// sendNow handles POST /v1/messages/{id}/send-now: a scheduled or
// TO_RETRY message becomes due now (200 with its view); 409 not_waiting
// otherwise.
func (a *api) sendNow(w http.ResponseWriter, r *http.Request) {
	m, err := a.engine.SendNow(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m.View())
}

// cancelBody is the JSON body of POST /v1/messages/cancel.
type cancelBody struct {
	Route  string   `json:"route"`
	Lane   string   `json:"lane"`
	Target string   `json:"target"`
	Status string   `json:"status"`
	Before bodyTime `json:"before"`
}

// cancelMessages handles POST /v1/messages/cancel: the tenant's waiting
// messages that match the body's filters are cancelled; {"cancelled":N}.
func (a *api) cancelMessages(w http.ResponseWriter, r *http.Request) {
	var body cancelBody
	if bad := decodeBody(w, r, &body, false); bad != nil {
		writeRequestError(w, bad)
		return
	}
	if body.Route == "" {
		writeRequestError(w, badRequest(codeMissingField, "route: is required: bulk cancel acts on one route's messages"))
		return
	}
	f := herald.CancelFilter{Route: body.Route, Lane: body.Lane, Target: body.Target, Status: herald.Status(body.Status)}
	var bad *requestError
	if f.Before, bad = body.Before.parse("before"); bad != nil {
		writeRequestError(w, bad)
		return
	}
	n, err := a.engine.CancelMessages(r.Context(), tenantOf(r), f)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"cancelled": n})
}
