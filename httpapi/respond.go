package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/heraldmq/herald"
)

// The error codes the API answers with.
const (
	codeInvalidJSON      = "invalid_json"
	codeInvalidField     = "invalid_field"
	codeMissingField     = "missing_field"
	codeUnknownField     = "unknown_field"
	codeBodyTooLarge     = "body_too_large"
	codeUnknownRoute     = "unknown_route"
	codeNotFound         = "not_found"
	codeForbidden        = "forbidden"
	codeMethodNotAllowed = "method_not_allowed"
	codeNotCancellable   = "not_cancellable"
	codeNotReplayable    = "not_replayable"
	codeNotWaiting       = "not_waiting"
	codeStoreUnavailable = "store_unavailable"
	codeInternal         = "internal"
)

// errorBody is the JSON shape of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeJSON answers status with v as JSON, which no browser may read as
// anything else (nosniff).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away: nothing left to tell it
}

// writeError answers status with the error shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: message}})
}

// fail answers err, mapping the engine's errors to statuses and codes; an
// unexpected error is logged and answered 500 without its text.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	var inv *herald.InvalidError
	switch {
	case errors.As(err, &inv):
		writeError(w, http.StatusBadRequest, codeInvalidField, inv.Error())
	case errors.Is(err, herald.ErrUnknownRoute):
		writeError(w, http.StatusBadRequest, codeUnknownRoute, "route: "+err.Error())
	case errors.Is(err, herald.ErrNotFound):
		writeError(w, http.StatusNotFound, codeNotFound, "no such message")
	case errors.Is(err, herald.ErrNotCancellable):
		writeError(w, http.StatusConflict, codeNotCancellable, err.Error())
	case errors.Is(err, herald.ErrNotReplayable):
		writeError(w, http.StatusConflict, codeNotReplayable, err.Error())
	case errors.Is(err, herald.ErrNotWaiting):
		writeError(w, http.StatusConflict, codeNotWaiting, err.Error())
	case errors.Is(err, herald.ErrStoreFull):
		a.log.Debug("store full", "method", r.Method, "path", r.URL.Path, "err", err) // the engine logs it once
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, codeStoreUnavailable, "the store refuses writes for want of room (a full disk); nothing was done, try again later")
	case errors.Is(err, herald.ErrStoreUnavailable):
		a.log.Warn("store unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, codeStoreUnavailable, "the store is unavailable; try again")
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; no one reads the answer.
		a.log.Debug("request cancelled", "method", r.Method, "path", r.URL.Path)
		writeError(w, http.StatusServiceUnavailable, codeStoreUnavailable, "request cancelled")
	default:
		a.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, codeInternal, "internal error")
	}
}
