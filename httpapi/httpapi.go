// Package httpapi serves herald's HTTP API (JSON) over an engine: sending,
// reading, listing, cancelling and replaying messages, rooms with their
// subscriptions, events and pulls, dead letters, health,
// stats, the busiest lanes, the last hour's activity, carriers' events (ingress), probes, metrics
// and the API's OpenAPI document. It imports the core only; stores and carriers
// reach it through the herald.Engine.
//
// Every /v1 path except /v1/ingress/ and /v1/openapi.json (the API's
// OpenAPI document, package api) needs an "Authorization: Bearer <key>"
// header whose key maps to a tenant; a tenant sees only its own messages,
// and only its own figures in stats, health, activity and lanes (a key of
// RoleAdmin sees every tenant's figures; one of RoleRead may only read).
// The ingress checks its route's own secret instead. A request without an
// Authorization header may instead carry a browser session (Config.Sessions,
// the admin page's cookie); a state-changing one (any method but GET, HEAD
// and OPTIONS) must then also come from the same origin and carry the
// session's token in the CSRFHeader header, or it is refused 403.
// Every error is answered as {"error":{"code":"...","message":"..."}}.
package httpapi

import (
	"crypto/sha256"
	"log/slog"
	"net/http"

	"github.com/heraldmq/herald"
)

// MaxBodyBytes bounds a request body; a larger one is answered 400 body_too_large.
const MaxBodyBytes = 1 << 20

// Config configures the handler returned by New.
type Config struct {
	// Engine does the work. Required.
	Engine *herald.Engine
	// Keys maps each bearer key to its tenant. Keys that are empty or map to
	// an empty tenant are ignored. With no keys every /v1 request is refused.
	Keys map[string]string
	// Roles gives a key of Keys its role; a key it does not name is
	// RoleWrite.
	Roles map[string]Role
	// MetricsKey, when set, is the bearer key GET /metrics requires (401
	// without it); it is none of Keys'. Empty serves /metrics to anyone.
	MetricsKey string
	// Metrics is served at GET /metrics; nil answers 404 there.
	Metrics http.Handler
	// Logger receives a line for every answer 500 and 503. Defaults to slog.Default().
	Logger *slog.Logger
	// Sessions finds the browser session of a request that has no
	// Authorization header; nil accepts bearer keys only.
	Sessions Sessions
	// Tracer traces every request (a span each, continuing the caller's
	// traceparent); nil traces nothing.
	Tracer Tracer
	// MaxBodyBytesInFlight bounds the request body bytes held in memory at
	// once, across requests: a request whose body (its Content-Length, or
	// MaxBodyBytes when unknown) does not fit is answered 503 overloaded
	// with Retry-After, unread. 0 sets no bound.
	MaxBodyBytesInFlight int64
	// Problem counts something that went wrong, by kind (a metric); nil
	// counts nothing.
	Problem func(kind string)
}

// Sessions finds browser sessions: the admin page's login cookie.
type Sessions interface {
	// Session returns the identity of r's session (the tenant and role of
	// the key it was opened with) and the token that r must carry in the
	// CSRFHeader header when it changes anything; ok is false when r has
	// no live session. err is set when the sessions could not be read
	// (their store does not answer): the request is answered as a store
	// error is (503 store_unavailable).
	Session(r *http.Request) (id Identity, csrfToken string, ok bool, err error)
}

// api holds what the handlers share.
type api struct {
	engine   *herald.Engine
	keys     keyring
	sessions Sessions
	log      *slog.Logger
	// metricsHandler is Config.Metrics, and metricsKey the SHA-256 of
	// Config.MetricsKey (nil when none).
	metricsHandler http.Handler
	metricsKey     []byte
	// budget bounds the bodies in memory; nil when unbounded.
	budget     *bodyBudget
	budgetWarn sometimes
	// problem is Config.Problem, never nil.
	problem func(kind string)
}

// route is one endpoint of the API: New registers each of routes on its
// mux, and nothing else. The OpenAPI document (package api) describes
// every one, which the tests check.
type route struct {
	method, path string
	serve        func(*api, http.ResponseWriter, *http.Request)
}

// metricsPath is served only when Config.Metrics is set.
const metricsPath = "/metrics"

// routes are the API's endpoints.
var routes = []route{
	{"POST", "/v1/messages", (*api).send},
	{"GET", "/v1/messages", (*api).list},
	{"GET", "/v1/messages/{id}", (*api).get},
	{"POST", "/v1/messages/{id}/cancel", (*api).cancel},
	{"POST", "/v1/messages/{id}/replay", (*api).replay},
	{"POST", "/v1/messages/{id}/send-now", (*api).sendNow},
	{"POST", "/v1/messages/cancel", (*api).cancelMessages},
	{"GET", "/v1/messages/{id}/explain", (*api).explain},

	{"GET", "/v1/dead-letters", (*api).deadLetters},
	{"POST", "/v1/dead-letters/replay", (*api).replayDeadLetters},
	{"DELETE", "/v1/dead-letters", (*api).purgeDeadLetters},
	{"POST", "/v1/dead-letters/fail-orphans", (*api).failOrphans},

	{"GET", "/v1/outcome-events", (*api).outcomeEvents},
	{"POST", "/v1/outcome-events/replay", (*api).replayOutcomeEvents},

	{"POST", "/v1/rooms", (*api).createRoom},
	{"GET", "/v1/rooms", (*api).listRooms},
	{"GET", "/v1/rooms/{name}", (*api).getRoom},
	{"DELETE", "/v1/rooms/{name}", (*api).deleteRoom},
	{"POST", "/v1/rooms/{room}/subscriptions", (*api).createSubscription},
	{"GET", "/v1/rooms/{room}/subscriptions", (*api).listSubscriptions},
	{"POST", "/v1/rooms/{room}/events", (*api).publish},
	{"GET", "/v1/rooms/{room}/events/{id}", (*api).getEvent},
	{"GET", "/v1/subscriptions/{id}", (*api).getSubscription},
	{"DELETE", "/v1/subscriptions/{id}", (*api).deleteSubscription},
	{"POST", "/v1/subscriptions/{id}/pull", (*api).pull},
	{"POST", "/v1/subscriptions/{id}/ack", (*api).ack},
	{"POST", "/v1/subscriptions/{id}/nack", (*api).nack},

	{"GET", "/v1/health", (*api).health},
	{"GET", "/v1/stats", (*api).stats},
	{"GET", "/v1/lanes", (*api).lanes},
	{"POST", "/v1/lanes/pause", (*api).pauseLane},
	{"POST", "/v1/lanes/resume", (*api).resumeLane},
	{"GET", "/v1/routes", (*api).routesList},
	{"GET", "/v1/activity", (*api).activity},
	{"GET", "/healthz", (*api).healthz},
	{"GET", "/readyz", (*api).readyz},
	{"GET", metricsPath, (*api).metrics},

	{"POST", "/v1/ingress/{route}", (*api).ingress},
	{"GET", openAPIPath, (*api).openAPI},
}

// New returns the API's handler.
func New(cfg Config) http.Handler {
	a := &api{engine: cfg.Engine, keys: newKeyring(cfg.Keys, cfg.Roles), sessions: cfg.Sessions, log: cfg.Logger,
		metricsHandler: cfg.Metrics}
	if cfg.MetricsKey != "" {
		sum := sha256.Sum256([]byte(cfg.MetricsKey))
		a.metricsKey = sum[:]
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	if a.problem = cfg.Problem; a.problem == nil {
		a.problem = func(string) {}
	}
	if cfg.MaxBodyBytesInFlight > 0 {
		a.budget = &bodyBudget{free: cfg.MaxBodyBytesInFlight}
	}
	mux := http.NewServeMux()
	for _, rt := range routes {
		if rt.path == metricsPath && a.metricsHandler == nil {
			continue // answered 404, as any unknown path
		}
		serve := rt.serve
		mux.HandleFunc(rt.method+" "+rt.path, func(w http.ResponseWriter, r *http.Request) { serve(a, w, r) })
	}
	return traced(cfg.Tracer, a.authenticate(a.bounded(notePattern(cfg.Tracer, jsonFallback(mux)))))
}
