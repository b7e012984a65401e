package herald

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Sentinel errors.
var (
	// ErrNotFound is returned when a message does not exist or belongs to another tenant.
	ErrNotFound = errors.New("not found")
	// ErrConflict is returned by Store.Transition when the message is no longer
	// in the expected status or under the expected lease.
	ErrConflict = errors.New("status conflict")
	// ErrUnknownRoute is returned when a message names a route that is not configured.
	ErrUnknownRoute = errors.New("unknown route")
	// ErrNotCancellable is returned when cancelling a message that is not QUEUED or TO_RETRY.
	ErrNotCancellable = errors.New("not cancellable")
	// ErrNotWaiting is returned when sending now a message that neither
	// waits for its send_at (QUEUED, scheduled) nor to retry (TO_RETRY).
	ErrNotWaiting = errors.New("not waiting")
	// ErrNotReplayable is returned when replaying a message that is not DELIVERY_FAILED or CANCELLED.
	ErrNotReplayable = errors.New("not replayable")
	// ErrStoreUnavailable is returned when the store cannot be reached; callers may try again.
	ErrStoreUnavailable = errors.New("store unavailable")
	// ErrRoomExists is returned when creating a room whose name its tenant has already.
	ErrRoomExists = errors.New("room exists")
	// ErrNotPull is returned when pulling, acknowledging or handing back the
	// deliveries of a subscription that is not a pull subscription.
	ErrNotPull = errors.New("not a pull subscription")
)

// InvalidError is returned for bad input: Field names what is wrong.
type InvalidError struct {
	Field   string
	Message string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

// Invalid returns an *InvalidError for field.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// PermanentError marks a carrier failure that no retry can fix: the message
// fails at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the engine fails the message without retrying.
func Permanent(err error) error { return &PermanentError{Err: err} }

// RetryAfterError is a carrier's "not now, try again after After" (an HTTP
// 429 or 503 with Retry-After, a platform's retry_after): the send does not
// count as an attempt, and a gated route's lane pauses until then.
//
// With Counted set it is the carrier's own schedule for a send that did
// count (an LXMF attempt that found no path to its recipient and asked for
// one): the message waits After, in place of its route's retry policy, and
// fails once its attempts are used up; its lane does not pause.
type RetryAfterError struct {
	After time.Duration
	Err   error
	// Counted makes the send count as an attempt (see above).
	Counted bool
	// Reason names what the message waits for: the reason of its timeline
	// entry and of its lane's pause, and what explain says while it waits
	// (one of WaitReasons). Empty means backpressure.
	Reason string
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps err as a "not now" that asks to wait d.
func RetryAfter(d time.Duration, err error) error { return &RetryAfterError{After: d, Err: err} }

// WaitFor wraps err as a carrier's "the next attempt in d, once reason is
// met": counted says whether the send spent an attempt (see
// RetryAfterError). reason is one of WaitReasons.
func WaitFor(d time.Duration, reason string, counted bool, err error) error {
	return &RetryAfterError{After: d, Err: err, Counted: counted, Reason: reason}
}

// ReasonPathRequested is the wait of a message whose carrier asked its
// network for a path to the recipient (LXMF): explain's path_requested.
const ReasonPathRequested = "path_requested"

// WaitReasons are the reasons a carrier may give WaitFor; each is an
// explain reason of its own.
var WaitReasons = []string{ReasonPathRequested}

// DefaultPermanentPatterns are the error texts that mean the target is gone
// for good (the chat platforms' texts): a message failing with one of them is not retried.
var DefaultPermanentPatterns = []string{
	`chat not found`,
	`user not found`,
	`bot was blocked`,
	`forbidden: bot was kicked`,
	`chat_id is empty`,
	`no conversation reference found`,
	`ambiguous.*recipient`,
}

// ErrorClassifier decides whether a carrier error is permanent.
type ErrorClassifier struct {
	patterns []*regexp.Regexp
}

// NewErrorClassifier compiles patterns (case-insensitive regular expressions).
func NewErrorClassifier(patterns []string) (*ErrorClassifier, error) {
	c := &ErrorClassifier{}
	for _, p := range patterns {
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			return nil, fmt.Errorf("permanent error pattern %q: %w", p, err)
		}
		c.patterns = append(c.patterns, re)
	}
	return c, nil
}

// Permanent reports whether err is permanent: a *PermanentError, or a text
// that matches one of the classifier's patterns.
func (c *ErrorClassifier) Permanent(err error) bool {
	var pe *PermanentError
	if errors.As(err, &pe) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, re := range c.patterns {
		if re.MatchString(msg) {
			return true
		}
	}
	return false
}

// retryAfter returns the wait a transient error asks for, or 0.
func retryAfter(err error) time.Duration {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return ra.After
	}
	return 0
}

// AnswerError is a carrier's failure with what the carrier answered: an
// HTTP status ("503"), a gRPC code ("UNAVAILABLE") or a vendor's code. The
// engine records Code in the timeline entry that ends the attempt
// (TimelineEntry.Answer). It classifies nothing: wrap it in Permanent or
// RetryAfter as any error.
type AnswerError struct {
	Code string
	Err  error
}

func (e *AnswerError) Error() string { return e.Err.Error() }
func (e *AnswerError) Unwrap() error { return e.Err }

// WithAnswer returns err carrying the carrier's answer code; a nil err
// stays nil and an empty code adds nothing.
func WithAnswer(code string, err error) error {
	if err == nil || code == "" {
		return err
	}
	return &AnswerError{Code: code, Err: err}
}

// AnswerOf returns the answer code that err carries (see WithAnswer), or
// "" when it carries none.
func AnswerOf(err error) string {
	var ae *AnswerError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}
