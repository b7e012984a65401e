package httpapi

import (
	"errors"
	"net/http"

	"github.com/heraldmq/herald"
)

// codeRouteConfigured refuses to fail the orphans of a route that is in
// the configuration (409).
const codeRouteConfigured = "route_configured"

// pauseBody is the JSON body of POST /v1/lanes/pause.
type pauseBody struct {
	Route  string   `json:"route"`
	Lane   string   `json:"lane"`
	Until  bodyTime `json:"until"`
	Reason string   `json:"reason"`
}

// routesList handles GET /v1/routes: the configured routes with the
// tenant's messages counted by status (every tenant's for an admin key),
// and the routes missing from the configuration that hold its pending
// messages.
func (a *api) routesList(w http.ResponseWriter, r *http.Request) {
	v, err := a.engine.Routes(r.Context(), figuresOf(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// failOrphans handles POST /v1/dead-letters/fail-orphans {"route"}: the
// tenant's pending messages of route, which is missing from the
// configuration, move to DELIVERY_FAILED; {"failed":N}. A configured route
// is 409 route_configured.
func (a *api) failOrphans(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Route string `json:"route"`
	}
	if bad := decodeRoute(w, r, &body, &body.Route); bad != nil {
		writeRequestError(w, bad)
		return
	}
	n, err := a.engine.FailOrphans(r.Context(), tenantOf(r), body.Route)
	if errors.Is(err, herald.ErrRouteConfigured) {
		writeError(w, http.StatusConflict, codeRouteConfigured, "route "+body.Route+" is in the configuration: its messages are not orphans")
		return
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"failed": n})
}

// pauseLane handles POST /v1/lanes/pause: the lane (the whole route when
// lane is empty) pauses for every tenant, until until (until resumed when
// absent); it answers the pause. Only an admin key may: a route's lanes
// carry every tenant's messages.
func (a *api) pauseLane(w http.ResponseWriter, r *http.Request) {
	if !a.adminOnly(w, r, "a pause") {
		return
	}
	var body pauseBody
	if bad := decodeRoute(w, r, &body, &body.Route); bad != nil {
		writeRequestError(w, bad)
		return
	}
	p := herald.LanePause{Route: body.Route, Lane: body.Lane, Reason: body.Reason, Tenant: tenantOf(r)}
	var bad *requestError
	if p.Until, bad = body.Until.parse("until"); bad != nil {
		writeRequestError(w, bad)
		return
	}
	if err := a.engine.PauseLane(r.Context(), p); err != nil {
		a.fail(w, r, err)
		return
	}
	for _, in := range a.engine.LanePauses() {
		if in.Route == p.Route && in.Lane == p.Lane {
			writeJSON(w, http.StatusOK, map[string]herald.PauseView{"pause": in.View()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]herald.PauseView{"pause": p.View()})
}

// resumeLane handles POST /v1/lanes/resume {"route","lane"}: the
// operator's pause of the lane (of the whole route when lane is empty)
// ends; {"resumed":false} when there was none.
func (a *api) resumeLane(w http.ResponseWriter, r *http.Request) {
	if !a.adminOnly(w, r, "a resume") {
		return
	}
	var body struct {
		Route string `json:"route"`
		Lane  string `json:"lane"`
	}
	if bad := decodeRoute(w, r, &body, &body.Route); bad != nil {
		writeRequestError(w, bad)
		return
	}
	ok, err := a.engine.ResumeLane(r.Context(), tenantOf(r), body.Route, body.Lane)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"resumed": ok})
}

// adminOnly reports whether r's key is an admin's. A change that holds
// every tenant's messages, such as an operator's pause of a lane, is
// refused (403) to a tenant's write key, so that a tenant cannot stop
// another's deliveries; what names the change.
func (a *api) adminOnly(w http.ResponseWriter, r *http.Request, what string) bool {
	id := identityOf(r)
	if id.Role == RoleAdmin {
		return true
	}
	closeUnread(w, r)
	a.log.Info("refused: only an admin key may pause or resume a lane", "tenant", id.Tenant, "role", id.Role, "path", r.URL.Path)
	a.problem(problemNotAdmin)
	writeError(w, http.StatusForbidden, codeForbidden, what+" holds or frees every tenant's messages of the lane: it needs an admin key (role admin)")
	return false
}

// decodeRoute reads r's body into v, whose route field, required, is
// *route.
func decodeRoute(w http.ResponseWriter, r *http.Request, v any, route *string) *requestError {
	if bad := decodeBody(w, r, v, false); bad != nil {
		return bad
	}
	if *route == "" {
		return badRequest(codeMissingField, "route: is required")
	}
	return nil
}
