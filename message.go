package herald

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Message is one payload for one target through one route, with its
// lifecycle state. Stores persist every field; the Timeline is filled only
// by Store.Get.
type Message struct {
	ID             string            // time-ordered, assigned by herald
	Tenant         string            // owner; a tenant sees only its own messages
	Route          string            // the configured route it is sent through
	Target         string            // the recipient as the carrier knows it
	Lane           string            // flow-control key
	Payload        []byte            // bytes to deliver (or Text)
	Text           string            // text to deliver (or Payload)
	Params         map[string]string // carrier-specific options
	Priority       int               // higher is sent sooner
	CorrelationID  string            // the caller's own id
	IdempotencyKey string            // repeat sends with this key return the first message
	CoalesceKey    string            // a newer message with this key replaces a waiting older one
	// DedupKey is the content hash of a message of a route with dedup
	// (Policy.DedupTTL); empty otherwise.
	DedupKey string
	// TraceParent is the W3C traceparent of the request that sent it
	// (Config.Tracer): its carrier calls continue that trace. Empty when
	// it was not traced.
	TraceParent string
	// Pull marks a message that no dispatcher sends: its recipient leases
	// it (Store.Pull), then acknowledges it or hands it back (a room's
	// delivery to a pull subscription).
	Pull bool
	// Backoff, when set, replaces the route's retry policy for this
	// message (a room's delivery: its subscription's).
	Backoff Backoff

	Status      Status
	Attempt     int       // sends started so far
	MaxAttempts int       // sends allowed before DELIVERY_FAILED
	CreatedAt   time.Time // when it was first stored
	UpdatedAt   time.Time // when it last changed status
	DueAt       time.Time // when a QUEUED/TO_RETRY message may be dispatched, or a pull message polled
	Deadline    time.Time // the current in-flight stage's deadline; zero when none
	ExpiresAt   time.Time // after it the message fails "expired"; zero for never
	ExternalID  string    // the carrier's id for the item or task
	LastError   string    // the last failure's text
	Lease       int64     // fencing token of the current claim; 0 when not claimed
	// Result is what the carrier reported beyond delivery, as a few
	// short strings: a task's execution ("execution": "success" or
	// "failure", with its "reason"). Nil when it reported nothing.
	Result map[string]string

	Timeline []TimelineEntry

	// Deduplicated is set by Engine.Send on the earlier message it returns
	// in place of a duplicate; it is not stored.
	Deduplicated bool
}

// TimelineEntry records one transition of a message.
type TimelineEntry struct {
	At      time.Time
	From    Status // empty for the entry that records the message's creation
	To      Status
	Attempt int
	Reason  string
	// Call is what the carrier answered, on the entry that ends an
	// attempt; zero on the others.
	Call
}

// Call is what a carrier answered to one call of an attempt: the timeline
// entry that ends the attempt keeps it, so that every attempt's answer
// stays with the message for its retention.
type Call struct {
	// Answer is the carrier's code: an HTTP status ("503"), a gRPC code
	// ("UNAVAILABLE") or a vendor's code; empty when it gave none (a
	// network failure, a timeout).
	Answer string
	// Error is the failure's text, at most MaxCallError bytes; empty when
	// the carrier accepted the message.
	Error string
	// Duration is how long the call took, in whole milliseconds.
	Duration time.Duration
}

// MaxCallError bounds the error text a timeline entry keeps (Call.Error).
const MaxCallError = 512

// IsZero reports whether c records no call.
func (c Call) IsZero() bool { return c == Call{} }

// newCall returns the call that took d and answered err (nil: accepted,
// with answer as the carrier's code), its error text cut to MaxCallError
// bytes on a rune boundary and d to whole milliseconds.
func newCall(answer string, err error, d time.Duration) Call {
	c := Call{Answer: answer, Duration: d.Truncate(time.Millisecond)}
	if err != nil {
		if c.Answer == "" {
			c.Answer = AnswerOf(err)
		}
		c.Error = strings.ToValidUTF8(cut(err.Error(), MaxCallError), "")
	}
	return c
}

// cut returns s cut to at most n bytes, not within a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// AsCreated returns a copy of m as Store.Create stores it: QUEUED, under no
// lease, UpdatedAt defaulting to CreatedAt, and a timeline that holds only
// the creation entry. Stores call it so that they all agree.
func AsCreated(m *Message) Message {
	c := *m
	c.Status, c.Lease = StatusQueued, 0
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	c.Timeline = []TimelineEntry{{At: c.CreatedAt, To: StatusQueued, Attempt: c.Attempt, Reason: "created"}}
	return c
}
