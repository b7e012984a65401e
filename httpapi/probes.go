package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/heraldmq/herald"
)

// statusBody is the answer of the probes.
type statusBody struct {
	Status string `json:"status"`
}

// health handles GET /v1/health: the tenant's queue against the
// thresholds (every tenant's for an admin key).
func (a *api) health(w http.ResponseWriter, r *http.Request) {
	h, err := a.engine.Health(r.Context(), figuresOf(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// stats handles GET /v1/stats: the tenant's counts and latencies (every
// tenant's for an admin key).
func (a *api) stats(w http.ResponseWriter, r *http.Request) {
	s, err := a.engine.Stats(r.Context(), figuresOf(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// activityBody is the answer of GET /v1/activity.
type activityBody struct {
	Minutes []herald.ActivityMinute `json:"minutes"`
}

// activity handles GET /v1/activity: what this process did with the
// tenant's messages (every tenant's for an admin key) in each minute of
// the last hour, oldest first, like the counters of GET /v1/stats.
func (a *api) activity(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, activityBody{Minutes: a.engine.Activity(figuresOf(r))})
}

// healthz handles GET /healthz: the process answers.
func (a *api) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, statusBody{Status: "ok"})
}

// readyz handles GET /readyz: 200 when the store answers, 503 otherwise.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	if err := a.engine.Ready(r.Context()); err != nil {
		msg := "the store does not answer"
		if errors.Is(err, herald.ErrStoreFull) {
			msg = "the store refuses writes for want of room (a full disk, or Redis out of memory)"
		}
		a.log.Warn("not ready", "err", err)
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, codeStoreUnavailable, msg)
		return
	}
	writeJSON(w, http.StatusOK, statusBody{Status: "ok"})
}

// metrics handles GET /metrics with Config.Metrics, after checking
// Config.MetricsKey when there is one.
func (a *api) metrics(w http.ResponseWriter, r *http.Request) {
	if a.metricsKey != nil {
		scheme, key, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(key)))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], a.metricsKey) != 1 {
			a.log.Info("refused: /metrics without its key", "remote", r.RemoteAddr)
			a.problem(problemMetricsKey)
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, http.StatusUnauthorized, "unauthorized", "/metrics needs the metrics key: Authorization: Bearer <key>")
			return
		}
	}
	a.metricsHandler.ServeHTTP(w, r)
}
