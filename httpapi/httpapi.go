// Package httpapi serves herald's HTTP API (JSON) over an engine: sending,
// reading, listing, cancelling and replaying messages, rooms with their
// subscriptions, events and pulls, dead letters, health,
// stats, the busiest lanes, the last hour's activity, carriers' events (ingress), probes and metrics. It imports the core only; stores and carriers
// reach it through the herald.Engine.
//
// Every /v1 path except /v1/ingress/ needs an "Authorization: Bearer <key>"
// header whose key maps to a tenant; a tenant sees only its own messages.
// The ingress checks its route's own secret instead. A request without an
// Authorization header may instead carry a browser session (Config.Sessions,
// the admin page's cookie); a state-changing one (any method but GET, HEAD
// and OPTIONS) must then also come from the same origin and carry the
// session's token in the CSRFHeader header, or it is refused 403.
// Every error is answered as {"error":{"code":"...","message":"..."}}.
package httpapi

import (
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
	// CheckSecretEnv, when set, tells whether a push subscription may
	// sign with the secret of the server's environment variable name; its
	// error is answered 400. Nil accepts every name.
	CheckSecretEnv func(name string) error
}

// Sessions finds browser sessions: the admin page's login cookie.
type Sessions interface {
	// Session returns the tenant of r's session and the token that r must
	// carry in the CSRFHeader header when it changes anything; ok is false
	// when r has no live session.
	Session(r *http.Request) (tenant, csrfToken string, ok bool)
}

// api holds what the handlers share.
type api struct {
	engine   *herald.Engine
	keys     keyring
	sessions Sessions
	log      *slog.Logger
	// checkSecretEnv is Config.CheckSecretEnv.
	checkSecretEnv func(name string) error
}

// New returns the API's handler.
func New(cfg Config) http.Handler {
	a := &api{engine: cfg.Engine, keys: newKeyring(cfg.Keys), sessions: cfg.Sessions, log: cfg.Logger, checkSecretEnv: cfg.CheckSecretEnv}
	if a.log == nil {
		a.log = slog.Default()
	}
	mux := http.NewServeMux()

	mux.HandleFunc("POST /v1/messages", a.send)
	mux.HandleFunc("GET /v1/messages", a.list)
	mux.HandleFunc("GET /v1/messages/{id}", a.get)
	mux.HandleFunc("POST /v1/messages/{id}/cancel", a.cancel)
	mux.HandleFunc("POST /v1/messages/{id}/replay", a.replay)
	mux.HandleFunc("GET /v1/messages/{id}/explain", a.explain)

	mux.HandleFunc("GET /v1/dead-letters", a.deadLetters)
	mux.HandleFunc("POST /v1/dead-letters/replay", a.replayDeadLetters)
	mux.HandleFunc("DELETE /v1/dead-letters", a.purgeDeadLetters)

	mux.HandleFunc("POST /v1/rooms", a.createRoom)
	mux.HandleFunc("GET /v1/rooms", a.listRooms)
	mux.HandleFunc("GET /v1/rooms/{name}", a.getRoom)
	mux.HandleFunc("DELETE /v1/rooms/{name}", a.deleteRoom)
	mux.HandleFunc("POST /v1/rooms/{room}/subscriptions", a.createSubscription)
	mux.HandleFunc("GET /v1/rooms/{room}/subscriptions", a.listSubscriptions)
	mux.HandleFunc("POST /v1/rooms/{room}/events", a.publish)
	mux.HandleFunc("GET /v1/rooms/{room}/events/{id}", a.getEvent)
	mux.HandleFunc("GET /v1/subscriptions/{id}", a.getSubscription)
	mux.HandleFunc("DELETE /v1/subscriptions/{id}", a.deleteSubscription)
	mux.HandleFunc("POST /v1/subscriptions/{id}/pull", a.pull)
	mux.HandleFunc("POST /v1/subscriptions/{id}/ack", a.ack)
	mux.HandleFunc("POST /v1/subscriptions/{id}/nack", a.nack)

	mux.HandleFunc("GET /v1/health", a.health)
	mux.HandleFunc("GET /v1/stats", a.stats)
	mux.HandleFunc("GET /v1/lanes", a.lanes)
	mux.HandleFunc("GET /v1/activity", a.activity)
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.HandleFunc("GET /readyz", a.readyz)

	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	mux.HandleFunc("POST /v1/ingress/{route}", a.ingress)
	return traced(cfg.Tracer, a.authenticate(notePattern(cfg.Tracer, jsonFallback(mux))))
}
