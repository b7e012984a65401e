package herald

import (
	"encoding/json"
	"math"
	"net/url"
	"strings"
	"time"
)

// RoomRoutePrefix starts the route of every room's deliveries: the
// deliveries of a room named orders are messages of route "room:orders".
// A Route with Prefix set and this Name serves them.
const RoomRoutePrefix = "room:"

// Room fans each event published to it out to its subscriptions: one
// delivery, a message of route RoomRoutePrefix + Name, per subscription
// that takes the event.
type Room struct {
	Tenant string
	Name   string
	// Expiration bounds every delivery's life from its event's
	// publication: past it, the delivery fails "expired" wherever it is.
	// 0 is never. No subscription can change it.
	Expiration time.Duration
	// Delivery retries the room's deliveries, unless a subscription
	// overrides it.
	Delivery DeliveryPolicy
	// Revision changes with every subscription made or deleted in the
	// room: a Publication names the one its deliveries were made for. A
	// room starts at a random revision, so that a room deleted and made
	// again does not go through the revisions of the one before.
	Revision  int64
	CreatedAt time.Time
}

// DeliveryPolicy retries a room's deliveries (exponential backoff
// retry): the n-th redelivery waits Delay × Multiplier^(n-1)
// after the send before it failed, that is delay × multiplier^attempt
// with attempt the redeliveries so far.
type DeliveryPolicy struct {
	Delay      time.Duration
	Multiplier float64 // at least 1
	// Attempts is how many times a delivery is sent again after its
	// first send failed: 0 sends it once.
	Attempts int
}

// Backoff returns the backoff of the deliveries that p retries.
func (p DeliveryPolicy) Backoff() Backoff {
	return Backoff{Delay: p.Delay, Multiplier: p.Multiplier}
}

// DeliveryOverrides are the fields of its room's DeliveryPolicy that a
// subscription replaces; a nil field keeps the room's.
type DeliveryOverrides struct {
	Delay      *time.Duration
	Multiplier *float64
	Attempts   *int
}

// Apply returns p with the fields that o sets in place of its own.
func (o DeliveryOverrides) Apply(p DeliveryPolicy) DeliveryPolicy {
	if o.Delay != nil {
		p.Delay = *o.Delay
	}
	if o.Multiplier != nil {
		p.Multiplier = *o.Multiplier
	}
	if o.Attempts != nil {
		p.Attempts = *o.Attempts
	}
	return p
}

// Backoff, set on a Message, replaces its route's retry policy for that
// message alone: retry n (n = 1 for the first) waits Delay ×
// Multiplier^(n-1), with no jitter and no cap. A room's deliveries carry
// their subscription's. The zero Backoff (Multiplier 0) is unset.
type Backoff struct {
	Delay      time.Duration
	Multiplier float64
}

// IsZero reports whether b is unset.
func (b Backoff) IsZero() bool { return b.Multiplier == 0 }

// After returns the wait before retry n.
func (b Backoff) After(n int) time.Duration {
	f := float64(b.Delay) * math.Pow(b.Multiplier, float64(max(n, 1)-1))
	return time.Duration(min(f, float64(math.MaxInt64/2)))
}

// SubscriptionType is how a subscription receives its deliveries.
type SubscriptionType string

// The subscription types.
const (
	// SubscriptionPush: herald POSTs each delivery to the subscription's
	// URL; a 2xx answer acknowledges it.
	SubscriptionPush SubscriptionType = "push"
	// SubscriptionPull: the subscriber leases its deliveries (Engine.Pull)
	// and acknowledges (Engine.Ack) or hands back (Engine.Nack) each.
	SubscriptionPull SubscriptionType = "pull"
)

// EventType names the events a subscription takes: of type Type and, when
// Version is not empty, of that version only.
type EventType struct {
	Type    string
	Version string
}

// Subscription receives the events of its room that it takes.
type Subscription struct {
	ID     string
	Tenant string
	Room   string
	Type   SubscriptionType
	// URL is where a push subscription's deliveries are POSTed.
	URL string
	// SecretEnv names the environment variable of the server that holds
	// a push subscription's signing secret; "" sends unsigned.
	SecretEnv string
	// EventTypes are the events it takes; none takes every event.
	EventTypes []EventType
	Delivery   DeliveryOverrides
	CreatedAt  time.Time
}

// Takes reports whether s takes an event of typ and version: it names
// none, or one of the type whose version is empty or version.
func (s *Subscription) Takes(typ, version string) bool {
	if len(s.EventTypes) == 0 {
		return true
	}
	for _, et := range s.EventTypes {
		if et.Type == typ && (et.Version == "" || et.Version == version) {
			return true
		}
	}
	return false
}

// RoomEvent is an event published to a room, with the deliveries it made:
// the log of what each publication delivered.
type RoomEvent struct {
	ID            string
	Tenant        string
	Room          string
	Type          string
	Version       string
	CorrelationID string
	Data          []byte // JSON
	CreatedAt     time.Time
	Deliveries    []Delivery
}

// Delivery is the message that carries an event to one subscription.
type Delivery struct {
	SubscriptionID string `json:"subscription_id"`
	MessageID      string `json:"message_id"`
}

// RoomEventView is the JSON shape of a room event that users read (the
// answer of a publish, GET /v1/rooms/{room}/events/{id}).
type RoomEventView struct {
	ID            string          `json:"event_id"`
	Room          string          `json:"room"`
	Type          string          `json:"type"`
	Version       string          `json:"version"`
	Data          json.RawMessage `json:"data"`
	CorrelationID string          `json:"correlation_id"`
	CreatedAt     time.Time       `json:"created_at"`
	Deliveries    []Delivery      `json:"deliveries"`
}

// View returns the shape of ev that users read.
func (ev *RoomEvent) View() RoomEventView {
	deliveries := ev.Deliveries
	if deliveries == nil {
		deliveries = []Delivery{}
	}
	return RoomEventView{ID: ev.ID, Room: ev.Room, Type: ev.Type, Version: ev.Version, Data: ev.Data,
		CorrelationID: ev.CorrelationID, CreatedAt: ev.CreatedAt.UTC(), Deliveries: deliveries}
}

// Publication is a Store.Publish: an event and its deliveries, made for
// the room at Revision.
type Publication struct {
	Event      RoomEvent
	Revision   int64
	Deliveries []*Message
}

// DeliveryEnd says how Store.DeleteRoom and Store.DeleteSubscription end
// the deliveries they leave without a subscription: those waiting
// (QUEUED, TO_RETRY) move to CANCELLED, those in flight to
// DELIVERY_FAILED, at At with Reason (the failed ones' LastError too),
// and the subscribers named get an outcome event for each.
type DeliveryEnd struct {
	At           time.Time
	Reason       string
	CancelNotify []string
	FailNotify   []string
}

// PullClaim is a Store.Pull: up to Limit of the QUEUED pull messages of
// Route and Target, due at Now and not expired by then, leased under
// Lease until Deadline.
type PullClaim struct {
	Route    string
	Target   string
	Now      time.Time
	Limit    int
	Deadline time.Time
	// Lease is the fencing token every message leased gets: non-zero,
	// and drawn at random by the engine (see LeaseID), so that no puller
	// can guess another's.
	Lease  int64
	Reason string // the timeline entry's
}

// Limits of rooms and subscriptions.
const (
	// MaxRoomName is the longest room name, in bytes.
	MaxRoomName = 200
	// MaxSubscriptions is the most subscriptions a room has at once.
	MaxSubscriptions = 1000
	// MaxEventTypes is the most event types a subscription names.
	MaxEventTypes = 100
	// MaxDeliveryAttempts is the most redeliveries a policy allows.
	MaxDeliveryAttempts = 1000
	// MaxMultiplier is the largest backoff multiplier.
	MaxMultiplier = 1000
	// MaxPull is the most deliveries one pull leases, and one ack or nack
	// names.
	MaxPull = 1000
	// DefaultPull is how many deliveries a pull leases when asked for none
	// in particular.
	DefaultPull = 10
	// DefaultLease is a pull's lease when it names none.
	DefaultLease = 30 * time.Second
	// MaxLease is the longest lease a pull may ask for.
	MaxLease = 12 * time.Hour
)

// validRoomName reports whether name may name a room: 1 to MaxRoomName
// letters, digits, '.', '_' and '-'.
func validRoomName(name string) bool {
	if name == "" || len(name) > MaxRoomName {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// validEnvName reports whether name may name an environment variable:
// a letter or '_', then letters, digits and '_', at most 256 bytes.
func validEnvName(name string) bool {
	if name == "" || len(name) > 256 || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// checkDelivery returns an *InvalidError for the first field of o that is
// out of bounds, named under field.
func checkDelivery(field string, o DeliveryOverrides) error {
	switch {
	case o.Delay != nil && *o.Delay < 0:
		return Invalid(field+".delay", "%v is negative", *o.Delay)
	case o.Delay != nil && *o.Delay%time.Millisecond != 0:
		return Invalid(field+".delay", "%v is not a whole number of milliseconds, which the stores keep", *o.Delay)
	case o.Multiplier != nil && !(*o.Multiplier >= 1 && *o.Multiplier <= MaxMultiplier):
		return Invalid(field+".multiplier", "%v is not within 1..%d", *o.Multiplier, MaxMultiplier)
	case o.Attempts != nil && (*o.Attempts < 0 || *o.Attempts > MaxDeliveryAttempts):
		return Invalid(field+".attempts", "%d is not within 0..%d", *o.Attempts, MaxDeliveryAttempts)
	}
	return nil
}

// checkPushURL returns an *InvalidError unless s is an absolute http or
// https URL with a host.
func checkPushURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Invalid("url", "%q is not an absolute http or https URL", s)
	}
	return nil
}

// DeliveryView is the JSON shape of a room's delivery as its subscriber
// gets it: the body of a push, an item of a pull. ID is the delivery's
// message id, the same on every redelivery; LeaseID, in a pull's items
// only, names the lease that Ack and Nack take (see Message.LeaseID);
// Attempt counts the redeliveries before this one (0 on the first send).
type DeliveryView struct {
	ID            string          `json:"id"`
	LeaseID       string          `json:"lease_id,omitempty"`
	EventID       string          `json:"event_id"`
	Room          string          `json:"room"`
	Type          string          `json:"type"`
	Version       string          `json:"version"`
	Data          json.RawMessage `json:"data"`
	CorrelationID string          `json:"correlation_id"`
	Attempt       int             `json:"attempt"`
}

// DeliveryView returns the shape of m, a room's delivery, as its
// subscriber gets it while m is sent or leased (m.Attempt counts that
// send), without a LeaseID: a pull's answer adds m.LeaseID().
func (m *Message) DeliveryView() DeliveryView {
	data := json.RawMessage(m.Text)
	if !json.Valid(data) {
		data = json.RawMessage("null")
	}
	return DeliveryView{
		ID: m.ID, EventID: m.Params["event_id"], Room: strings.TrimPrefix(m.Route, RoomRoutePrefix),
		Type: m.Params["type"], Version: m.Params["version"], Data: data,
		CorrelationID: m.CorrelationID, Attempt: max(m.Attempt-1, 0),
	}
}
