package herald

import (
	"context"
	"time"
)

// InboundKind is what an event a push carrier sends back says.
type InboundKind string

// The inbound kinds.
const (
	// InboundTransmitted: the network sent the message to the device
	// (ChirpStack's txack). A message that awaits the device's
	// acknowledgement moves to SENT_TO_DEVICE, any other succeeds.
	InboundTransmitted InboundKind = "transmitted"
	// InboundAck: the device answered a message that awaits its
	// acknowledgement (ChirpStack's ack). Acknowledged=false retries it; an
	// acknowledgement succeeds once paired with the device's uplink of the
	// same Correlation within AckWindow.
	InboundAck InboundKind = "ack"
	// InboundUplink: a device sent data (ChirpStack's up). It pairs with an
	// ack of the same Correlation; one that answers no message goes to the
	// subscribers as an uplink event once AckWindow has passed.
	InboundUplink InboundKind = "uplink"
	// InboundFailed: the network dropped the message (a ChirpStack log
	// event about its queue item). Permanent fails it at once; otherwise
	// it is retried.
	InboundFailed InboundKind = "failed"
	// InboundMessage: the network delivered a message to herald itself
	// (an LXMF message to herald's own address). It goes to the
	// subscribers at once, as an outcome event of type Reason (one of
	// MessageEventTypes) whose body is Uplink.
	InboundMessage InboundKind = "message"
)

// EventLXMFMessage is the type of the outcome event that carries an LXMF
// message addressed to herald's own destination.
const EventLXMFMessage Status = "lxmf.message"

// MessageEventTypes are the types of the outcome events that carry a
// message the network delivered to herald (InboundMessage).
var MessageEventTypes = []Status{EventLXMFMessage}

// AckWindow is how close in time a device's ack and its uplink must reach
// herald to pair (the LoRaWAN correlation window).
const AckWindow = 10 * time.Second

// Inbound is an event a push carrier sent back, kept in the store's inbox
// from the moment it is received until the engine has applied it.
type Inbound struct {
	ID    string // assigned at ingress, unique
	Route string
	Kind  InboundKind
	// ExternalID is the carrier's id of the message the event is about
	// (ChirpStack's queue item id); empty for uplinks.
	ExternalID string
	// Correlation pairs an ack with its uplink (ChirpStack's
	// deduplicationId); empty when there is nothing to pair.
	Correlation  string
	Acknowledged bool // InboundAck: the device acknowledged
	Permanent    bool // InboundFailed: no retry can succeed
	// Reason is the carrier's words: why it failed (InboundFailed), how
	// it was delivered (InboundTransmitted: the timeline's reason in place
	// of "transmitted to the device"), or the outcome event's type
	// (InboundMessage).
	Reason string
	Device string // the device (a DevEUI)
	// Uplink is the JSON sent to subscribers as the uplink event of an
	// InboundUplink that answers no message, or as the body of an
	// InboundMessage's event.
	Uplink []byte
	At     time.Time // received
	DueAt  time.Time // when the engine looks at it (again)
}

// EventReader is implemented by push carriers whose network sends events
// back (ChirpStack's integrations). The ingress hands it each event's
// body; a carrier that receives events itself (an MQTT subscription) also
// implements Listener.
type EventReader interface {
	// ReadEvent turns the body of an event of type eventType (ChirpStack:
	// up, ack, txack, log, join, status), as the carrier's integration
	// sends it with contentType, into an Inbound. It returns ok=false for
	// an event that says nothing herald acts on (a join, a status, a log
	// about no queue item), and an *InvalidError for a malformed body or an
	// unknown event type.
	ReadEvent(eventType, contentType string, body []byte) (ev Inbound, ok bool, err error)
	// AwaitsAck reports whether m, once transmitted, waits for the device's
	// acknowledgement (a confirmed downlink).
	AwaitsAck(m *Message) bool
	// IngressSecret is the bearer token the carrier's network sends with
	// its events to herald's HTTP ingress; "" accepts any caller.
	IngressSecret() string
}

// Listener is implemented by carriers that receive their network's events
// themselves (an MQTT subscription). The engine runs Listen while it runs;
// the carrier hands every event to ingest and acknowledges it to its
// network only after ingest returned nil: the event is then durable.
type Listener interface {
	Listen(ctx context.Context, ingest IngestFunc) error
}

// ListenOnly is implemented by EventReaders whose events come only
// through their Listener, from the carrier's own connection to its
// network (an LXMF node's proofs and messages): the HTTP ingress refuses
// them, as it does a route that takes no events, so that no caller can
// post one.
type ListenOnly interface {
	ListenOnly()
}

// IngestFunc takes one event body for a route, as Engine.Ingest does.
type IngestFunc func(ctx context.Context, eventType, contentType string, body []byte) error

// InboundSettle is what the engine did with claimed inbound events, for
// Store.SettleInbound.
type InboundSettle struct {
	// Done are the events applied or dropped: deleted.
	Done []string
	// Later, when not empty, is an event to look at again at DueAt (its
	// message has not reached the step it answers, or its partner has not
	// come yet).
	Later string
	DueAt time.Time
	// Event, when not nil, is an event about no message (its Data set: an
	// uplink, a lane event) to enqueue in the outbox for each of Notify,
	// in the same write as the rest.
	Event  *Event
	Notify []string
}
