package client

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The codes the API answers errors with (Error.Code).
const (
	// CodeInvalidJSON: the body is not one JSON object (400).
	CodeInvalidJSON = "invalid_json"
	// CodeInvalidField: a field's value is refused; the message names it (400).
	CodeInvalidField = "invalid_field"
	// CodeMissingField: a required field is absent; the message names it (400).
	CodeMissingField = "missing_field"
	// CodeUnknownField: the body has a field the API does not know; the
	// message names it (400).
	CodeUnknownField = "unknown_field"
	// CodeBodyTooLarge: the body is over 1 MiB (400).
	CodeBodyTooLarge = "body_too_large"
	// CodeUnknownRoute: the message names a route that is not configured (400).
	CodeUnknownRoute = "unknown_route"
	// CodeUnauthorized: no API key, or one the server does not know (401).
	CodeUnauthorized = "unauthorized"
	// CodeForbidden: the key may not do this: a read-only key (role read)
	// changes nothing; nor does a browser session without its CSRF token or
	// from another origin (403).
	CodeForbidden = "forbidden"
	// CodeNotFound: no such message, room, subscription or event (of this
	// tenant), or no such endpoint (404).
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed: the path exists for other methods (405).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeNotCancellable: the message is not QUEUED or TO_RETRY (409).
	CodeNotCancellable = "not_cancellable"
	// CodeNotReplayable: the message is not DELIVERY_FAILED or CANCELLED (409).
	CodeNotReplayable = "not_replayable"
	// CodeRoomExists: the tenant has a room of that name (409).
	CodeRoomExists = "room_exists"
	// CodeNotPull: the subscription pulled, acknowledged or handed back
	// from is a push one (409).
	CodeNotPull = "not_pull"
	// CodeConflict: the room's subscriptions kept changing under a
	// publish; try again (409).
	CodeConflict = "conflict"
	// CodeRouteConfigured (409): FailOrphans was asked to fail the
	// messages of a route that is in the configuration.
	CodeRouteConfigured = "route_configured"
	// CodeStoreUnavailable: the server's store did not answer; try again (503).
	CodeStoreUnavailable = "store_unavailable"
	// CodeInternal: the server failed (500).
	CodeInternal = "internal"
)

// Error is an answer of the API outside 2xx. The methods of Client return
// it wrapped with what they were doing: use errors.As, or the Is* helpers.
type Error struct {
	// Status is the HTTP status, e.g. 404.
	Status int
	// Code is the API's code, one of the Code* constants (or a newer one);
	// "" when the answer did not have the API's error shape (a proxy's page).
	Code string
	// Message says what went wrong; for bad input it starts with the field's
	// name and a colon (see Field). Without the API's shape it is the start
	// of the body, or the status text.
	Message string
	// RetryAfter is the wait the answer's Retry-After header asked for; -1
	// when it had none.
	RetryAfter time.Duration
}

// Error returns the status, the code and the message, e.g.
// "404 not_found: no such message".
func (e *Error) Error() string {
	if e.Code == "" {
		return strconv.Itoa(e.Status) + ": " + e.Message
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// Field returns the request field a 400 answer is about, read from the
// start of its message ("priority: want ..."), or "" when it names none.
func (e *Error) Field() string {
	if e.Status != http.StatusBadRequest {
		return ""
	}
	switch e.Code {
	case CodeInvalidField, CodeMissingField, CodeUnknownField, CodeUnknownRoute:
	default:
		return ""
	}
	name, _, ok := strings.Cut(e.Message, ": ")
	if !ok || strings.ContainsAny(name, " \t\n") {
		return ""
	}
	return strings.Trim(name, `"`)
}

// retryable reports whether the request that got e may be tried again.
func (e *Error) retryable() bool {
	return e.Status == http.StatusServiceUnavailable && e.Code == CodeStoreUnavailable
}

// asError returns the *Error in err's chain, or nil.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// ErrorCode returns the API's code of the *Error in err's chain, or "" when
// there is none.
func ErrorCode(err error) string {
	if e := asError(err); e != nil {
		return e.Code
	}
	return ""
}

// IsNotFound reports whether err is a 404 answer: no such message, room,
// subscription or event, or one of another tenant.
func IsNotFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

// IsInvalid reports whether err is a 400 answer: bad input, of which
// nothing was stored.
func IsInvalid(err error) bool { return hasStatus(err, http.StatusBadRequest) }

// IsConflict reports whether err is a 409 answer: the message's status does
// not allow the change (not_cancellable, not_replayable), the room exists
// (room_exists), the subscription is not a pull one (not_pull).
func IsConflict(err error) bool { return hasStatus(err, http.StatusConflict) }

// IsForbidden reports whether err is a 403 answer: the key may not do
// this (a read-only key changes nothing).
func IsForbidden(err error) bool { return hasStatus(err, http.StatusForbidden) }

// IsUnauthorized reports whether err is a 401 answer: no key, or an unknown one.
func IsUnauthorized(err error) bool { return hasStatus(err, http.StatusUnauthorized) }

// IsUnavailable reports whether err is a 503 answer: the store did not
// answer (after the client's retries, if any).
func IsUnavailable(err error) bool { return hasStatus(err, http.StatusServiceUnavailable) }

func hasStatus(err error, status int) bool {
	e := asError(err)
	return e != nil && e.Status == status
}
