package herald

import (
	"context"
	"time"
)

// Path is the sequence of stages a carrier takes a message through.
type Path int

// The carrier paths.
const (
	// PathDirect: acceptance is final. SENT_TO_NS -> DELIVERY_SUCCESSFUL.
	PathDirect Path = iota
	// PathPush: SENT_TO_NS -> DELIVERED_TO_NS -> SENT_TO_DEVICE ->
	// DELIVERY_SUCCESSFUL, driven by the carrier's events.
	PathPush
	// PathPull: SENT_TO_NS -> DELIVERED_TO_NS, then the task is polled until
	// it finishes.
	PathPull
)

func (p Path) String() string {
	switch p {
	case PathPush:
		return "push"
	case PathPull:
		return "pull"
	default:
		return "direct"
	}
}

// Carrier hands messages to the next hop.
type Carrier interface {
	// Path says which stages this carrier's messages pass.
	Path() Path
	// Validate checks a new message's carrier fields (target, params) and
	// returns an *InvalidError when they are wrong.
	Validate(m *Message) error
	// Send hands m over. ctx carries the accept deadline. A nil error means
	// the carrier accepted it; the result's ExternalID identifies it there.
	// Return Permanent(err) when no retry can succeed, RetryAfter(d, err) to
	// ask for a minimum wait, and wrap an error in WithAnswer to say what
	// the carrier answered (its status or code), which the message's
	// timeline keeps.
	Send(ctx context.Context, m *Message) (SendResult, error)
}

// Resumer is implemented by carriers that deliver a message in several
// calls (a long chat text in chunks). The engine calls SendResumable
// instead of Send: after each call the platform accepted, the carrier
// calls progress with what identifies the parts delivered so far (their
// ids, joined by commas), and the engine makes it durable as the message's
// ExternalID before progress returns. A retry gets the message with that
// ExternalID, so the carrier resumes after the parts already delivered and
// no part is shown twice. When progress fails (the claim's lease ran out,
// the store is down), the carrier must stop and return its error.
type Resumer interface {
	SendResumable(ctx context.Context, m *Message, progress func(externalID string) error) (SendResult, error)
}

// SlowCaller is implemented by carriers whose call may rightly outlive
// the route's accept timeout (a vendor's create-task call that answers
// after 37 s): the engine bounds their call by CallTimeout instead. While
// any carrier's call runs, the engine keeps the message's claim alive (its
// SENT_TO_NS deadline moves on with the call), so no node retries the
// message while its call may still succeed.
type SlowCaller interface {
	CallTimeout() time.Duration
}

// Laner is implemented by carriers that derive a message's lane when
// neither the message nor its route names one (a chat carrier: the chat).
type Laner interface {
	Lane(m *Message) string
}

// LaneRequirer is implemented by carriers whose messages must name their
// lane when their route has no default lane: a lane the carrier cannot
// derive and that its flow control needs (a Calin meter's DCU). Send
// refuses a message without one (400, naming lane); RequiredLane says
// what the lane is, for that error.
type LaneRequirer interface {
	RequiredLane() string
}

// ContentHasher is implemented by carriers that know what of a message
// reaches its recipient (a downlink's device, bytes and port): on a route
// with dedup (Policy.DedupTTL), ContentHash is the message's dedup key, in
// place of herald's hash of its route, target, payload or text and
// params. It is called on a message that Validate accepted.
type ContentHasher interface {
	ContentHash(m *Message) string
}

// URLChecker is implemented by the carrier of the rooms' deliveries (the
// prefix route RoomRoutePrefix) when it keeps to a policy of the
// addresses it may reach: CreateSubscription asks it about each push
// subscription's URL, and refuses the subscription (an *InvalidError
// naming url) when it answers an error.
type URLChecker interface {
	CheckURL(rawURL string) error
}

// SendResult is what a carrier says when it accepts a message.
type SendResult struct {
	ExternalID string
	// StageTimeout, when positive, is a push carrier's own bound on the
	// DELIVERED_TO_NS stage of this send, in place of its route's carrier
	// timeout: how long it waits for its network's answer (an LXMF
	// recipient's proof, as long as its packet's receipt lives). The
	// reaper handles the deadline as any carrier timeout.
	StageTimeout time.Duration
	// Result is what the carrier reports beyond acceptance
	// (Message.Result: an LXMF delivery's method), nil for nothing.
	Result map[string]string
	// Answer is the carrier's code for the acceptance (an HTTP status,
	// "OK" of gRPC, a vendor's code), kept in the timeline entry that ends
	// the attempt (Call.Answer); empty for none. A failure carries its
	// code in its error (WithAnswer).
	Answer string
}

// Poller is implemented by pull carriers: it asks the carrier how a task it
// accepted is doing.
//
// Poll returns PollSucceeded once the task ended, with what the carrier
// reported beyond that as result (Message.Result, nil for nothing: a
// task's execution at the device, which the message's end shows).
// It returns PollFailed with the carrier's reason as the error when the
// task failed: the message is retried like a failed send (TO_RETRY, or
// DELIVERY_FAILED once its attempts are used up), or fails at once when
// the reason is permanent (Permanent(err), or a route's permanent pattern).
// Any other error is a poll that failed, whatever its class: the task is
// polled again at the next poll, and the error becomes the message's last
// error. The reaper polls several tasks at once, as sends run at once.
type Poller interface {
	Poll(ctx context.Context, m *Message) (res PollResult, result map[string]string, err error)
}

// PollResult is the state of a pulled task.
type PollResult int

// The poll results.
const (
	PollPending   PollResult = iota // not finished: poll again later
	PollSucceeded                   // done
	PollFailed                      // failed; the error says why
)

// QueueChecker is implemented by push carriers that can tell whether a
// message they accepted is still waiting in their own queue; the reaper then
// extends its DELIVERED_TO_NS deadline instead of retrying it. The reaper
// checks several messages at once.
type QueueChecker interface {
	StillQueued(ctx context.Context, m *Message) (bool, error)
}

// Route is a named carrier instance with its policy.
type Route struct {
	Name    string
	Carrier Carrier
	Policy  Policy
	Lane    string // default lane for messages that name none
	// PermanentErrors are the patterns whose errors fail at once. Nil means
	// DefaultPermanentPatterns.
	PermanentErrors []string
	// Prefix makes the route serve every route whose name starts with
	// Name: routes made at run time, such as each room's (Name
	// RoomRoutePrefix), whose messages only the engine makes (Send
	// refuses their names). A prefix route is not gated and takes no
	// carrier events.
	Prefix bool
}
