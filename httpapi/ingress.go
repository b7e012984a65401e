package httpapi

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/heraldmq/herald"
)

// codeUnauthorized answers an ingress request without the route's secret.
const codeUnauthorized = "unauthorized"

// ingress takes one event a route's network sends back (ChirpStack's HTTP
// integration: POST /v1/ingress/{route}?event=up|ack|txack|log|join|status
// with a JSON or Protobuf body). It answers 204 once the event is durable
// in the inbox (or, for an event herald has no use for, counted and
// dropped), 400 for a malformed event, 401 without the route's secret as
// a bearer token, 404 for a route that takes no events, 413 for a body
// over MaxBodyBytes, and 503 when the store cannot keep it: ChirpStack
// does not retry, but an MQTT broker redelivers. Each refusal (400, 401,
// 404, 413) is counted and logged, rate-limited (Engine.RefuseEvent).
func (a *api) ingress(w http.ResponseWriter, r *http.Request) {
	route := r.PathValue("route")
	secret, ok := a.engine.IngressSecret(route)
	if !ok {
		a.engine.RefuseEvent(route, herald.RefusedUnknownRoute, "the route takes no carrier events")
		closeUnread(w, r)
		writeError(w, http.StatusNotFound, codeUnknownRoute, "route "+route+" takes no carrier events")
		return
	}
	if secret != "" && !bearerIs(r, secret) {
		a.engine.RefuseEvent(route, herald.RefusedUnauthorized, unauthorizedDetail(r))
		closeUnread(w, r)
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeError(w, http.StatusUnauthorized, codeUnauthorized, "the route's ingress secret is required as Authorization: Bearer")
		return
	}
	event := r.URL.Query().Get("event")
	if event == "" {
		a.engine.RefuseEvent(route, herald.RefusedInvalid, "no ?event= query parameter")
		writeError(w, http.StatusBadRequest, codeMissingField, "event: the query parameter ?event= is required")
		return
	}
	body, err := readBody(w, r)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		a.engine.RefuseEvent(route, herald.RefusedTooLarge, "body larger than 1 MiB")
		writeError(w, http.StatusRequestEntityTooLarge, codeBodyTooLarge, "body: larger than 1 MiB")
		return
	case err != nil:
		a.engine.RefuseEvent(route, herald.RefusedInvalid, "body: "+err.Error())
		writeError(w, http.StatusBadRequest, codeInvalidField, "body: "+err.Error())
		return
	}
	err = a.engine.Ingest(r.Context(), route, event, r.Header.Get("Content-Type"), body)
	var invalid *herald.InvalidError
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.As(err, &invalid):
		writeError(w, http.StatusBadRequest, codeInvalidField, invalid.Error())
	default:
		a.log.Warn("carrier event not stored", "route", route, "event", event, "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, codeStoreUnavailable, "the event could not be stored; send it again")
	}
}

// unauthorizedDetail says how a request without the route's secret came:
// with no Authorization header, or with another (never its value).
func unauthorizedDetail(r *http.Request) string {
	if r.Header.Get("Authorization") == "" {
		return "no Authorization header"
	}
	return "Authorization is not the route's ingress secret as a bearer token"
}

// bearerIs reports whether r carries secret as its bearer token (the
// scheme in any case), compared in constant time.
func bearerIs(r *http.Request, secret string) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(token), []byte(secret)) == 1
}
