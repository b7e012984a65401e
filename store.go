package herald

import (
	"context"
	"time"
)

// Store persists messages, their timelines and the outcome-event outbox.
// Every method is safe for concurrent use, and every change it reports as
// done is durable. Implementations must pass storetest.Exercise.
type Store interface {
	// Create stores m (status QUEUED) with a creation entry in its
	// timeline; every field of m is kept, Pull and Backoff included.
	// When m.IdempotencyKey is set and a message with the same tenant, route
	// and key exists, Create stores nothing and returns that message with
	// created = false. When m.CoalesceKey is set, every message of the same
	// tenant, route and key that is still QUEUED or TO_RETRY moves to
	// CANCELLED with reason "coalesced", in the same transaction. When
	// m.DedupKey and opt.DedupSince are set, and the last message sent to
	// m's target (of the same tenant and route) has m.DedupKey, was sent
	// at or after DedupSince, is also the last message with a DedupKey
	// created for that target and has not ended DELIVERY_FAILED or
	// CANCELLED, Create stores nothing and returns that message with
	// created = false. A message with a DedupKey is sent when a transition
	// moves it from SENT_TO_NS to DELIVERED_TO_NS or DELIVERY_SUCCESSFUL:
	// its network accepted it.
	Create(ctx context.Context, m *Message, opt CreateOptions) (stored *Message, created bool, err error)

	// Get returns the message with its timeline, or ErrNotFound.
	Get(ctx context.Context, id string) (*Message, error)

	// List returns messages matching q, newest first, without timelines, and
	// the cursor of the next page ("" when there is none).
	List(ctx context.Context, q Query) ([]*Message, string, error)

	// Claim atomically moves up to c.Limit due messages (QUEUED with DueAt <=
	// c.Now, Pull not set) to SENT_TO_NS, highest priority first and
	// first-in first-out within a priority: it increments Attempt, sets
	// Deadline to c.Now plus the route's accept timeout, assigns a fresh
	// Lease and records the transition. A message is claimed by one caller
	// only, across processes.
	//
	// A message of a gated route (see SetAdmission) is claimed only when
	// its lane (route and Lane) admits it at c.Now, and at most
	// c.GatedLimit of them: fewer than Concurrency of the lane's messages
	// in flight; Spacing since the lane's last dispatch (so one message of
	// the lane per claim); a token in the lane's Rate bucket, in its
	// tenant's TenantRate bucket on the route and in the route's RouteRate
	// bucket, shared by its lanes and tenants (buckets start full); the
	// lane not paused; on an Ordered route, no older message of the same
	// target that is not terminal. On a route with ClaimAhead, a lane's
	// messages are claimed when none is in flight or those in flight were
	// claimed by c.Node, up to ClaimAhead in flight in place of
	// Concurrency. Within a lane messages go by priority, then id;
	// across admissible lanes by their first message's priority, then id.
	// A lane that admits nothing never keeps another lane's messages back.
	// The claim updates the lanes' state in the same atomic step.
	Claim(ctx context.Context, c Claim) ([]*Message, error)

	// SetAdmission gives the store the admission of every gated route
	// (routes absent are not gated). The engine calls it at start, before
	// any claim; it applies to the messages already stored too, and it
	// recounts each lane's messages in flight from the messages themselves.
	SetAdmission(ctx context.Context, rules map[string]Admission) error

	// Lane returns the state of a gated route's lane, with tenant's bucket
	// on the route and the route's own bucket. A lane the store knows
	// nothing of has a zero state.
	Lane(ctx context.Context, route, lane, tenant string) (LaneState, error)

	// ReportCircuit feeds the circuit breaker of a lane whose route has a
	// Circuit (see SetAdmission) with one send's outcome, and returns what
	// changed. A failure counts; Failures of them in a row open the circuit:
	// the lane pauses for the CoolDown (PauseReason "circuit_open"). Once
	// the pause ends, a claim admits one message of the lane, the probe,
	// and pauses it again for the cool-down (PauseReason "circuit_probe");
	// a failure then opens the circuit again for twice the cool-down, at
	// most MaxCircuitCoolDown, and any success closes it (the lane resumes)
	// and resets the count. A lane of a route without a circuit is left alone.
	ReportCircuit(ctx context.Context, r CircuitReport) (CircuitChange, error)

	// Heartbeat records that node is alive for ttl from now. The lanes a
	// node keeps (Admission.ClaimAhead) stay its own while its heartbeat
	// lasts; once it has lapsed, a claim of another node takes such a
	// lane over, and the lapsed node's messages in flight no longer hold
	// the lane's slots (a node's carrier calls end with it; the messages
	// stay in flight until their deadline, as the reaper finds them). A
	// node of which the store has no heartbeat counts as alive on a store
	// that several processes share (a version before heartbeats), and as
	// lapsed on one that a single process writes (a process before this
	// one).
	Heartbeat(ctx context.Context, node string, now time.Time, ttl time.Duration) error

	// FirstActive returns the id of the oldest message of route and target
	// that is not terminal, or "" when there is none: on an ordered route,
	// the one every later message of the target waits behind.
	FirstActive(ctx context.Context, route, target string) (string, error)

	// Lanes returns up to q.Limit lanes of gated routes (of q.Route only,
	// when it is not empty), busiest first: by queued plus in flight. With
	// q.Tenant, only the lanes that hold messages of that tenant, queued
	// or in flight, whose Queued and InFlight are that tenant's alone.
	Lanes(ctx context.Context, q LaneQuery) ([]LaneState, error)

	// Release moves up to limit TO_RETRY messages whose DueAt <= now back to
	// QUEUED and returns how many moved.
	Release(ctx context.Context, now time.Time, limit int) (int, error)

	// Transition applies t if the message is still in t.From (and, when
	// t.Lease != 0, still under that lease, and when t.RequireSubscription
	// is set, that subscription exists); otherwise it changes nothing and
	// returns ErrConflict. It returns ErrNotFound for an unknown id. When
	// t.To == t.From the status stays and no timeline entry is written: the
	// transition only updates the fields (a poll rescheduled, a deadline
	// extended).
	Transition(ctx context.Context, t Transition) error

	// ClaimPoll takes the poll of pull task id, due at due, for the
	// caller, so that one node polls a task: it moves the message's DueAt
	// to until when the message is DELIVERED_TO_NS under lease with DueAt
	// due, and returns ErrConflict otherwise (another node took the poll,
	// or the task moved on) or ErrNotFound.
	ClaimPoll(ctx context.Context, id string, lease int64, due, until time.Time) error

	// Overdue returns up to limit active messages that need the reaper: in
	// flight past their Deadline, or past their ExpiresAt.
	Overdue(ctx context.Context, now time.Time, limit int) ([]*Message, error)

	// DuePolls returns up to limit DELIVERED_TO_NS messages whose poll is
	// due (a DueAt, <= now), earliest due first.
	DuePolls(ctx context.Context, now time.Time, limit int) ([]*Message, error)

	// FindByExternalID returns the active message of route whose carrier id is
	// externalID, or ErrNotFound.
	FindByExternalID(ctx context.Context, route, externalID string) (*Message, error)

	// ActiveRoutes returns the routes that have messages not yet terminal.
	ActiveRoutes(ctx context.Context) ([]string, error)

	// PauseLane keeps p, an operator's pause of a lane or (p.Lane empty)
	// of a whole route, in place of the pause of the same route and lane
	// it keeps, if any. The store only keeps it: the engine names the
	// paused lanes in Claim.Hold.
	PauseLane(ctx context.Context, p LanePause) error

	// ResumeLane deletes the operator's pause of route and lane (lane
	// empty: the pause of the whole route), and reports whether there was
	// one.
	ResumeLane(ctx context.Context, route, lane string) (bool, error)

	// LanePauses returns the operator's pauses kept, by route, then lane,
	// ended ones (Until before now) included.
	LanePauses(ctx context.Context) ([]LanePause, error)

	// Counts returns the number of messages by tenant, route and status.
	Counts(ctx context.Context) ([]Count, error)

	// Purge deletes DELIVERY_FAILED messages matching q and returns how many.
	Purge(ctx context.Context, q PurgeQuery) (int, error)

	// Prune deletes up to limit terminal messages last updated before
	// before, up to limit room events published before before none of
	// whose deliveries is active (a delivery reads its event's data when
	// it is sent), and up to
	// limit ids of settled inbox events received before before (see
	// SettleInbound), and returns how many of the three. It may also
	// forget the state of lanes without messages whose spacing, pause and
	// buckets ended before before (a forgotten lane reads as a fresh one,
	// as it would be).
	Prune(ctx context.Context, before time.Time, limit int) (int, error)

	// ClaimEvents returns up to limit outbox events due at now, and hides them
	// from other claims until leaseUntil.
	ClaimEvents(ctx context.Context, now time.Time, limit int, leaseUntil time.Time) ([]Event, error)

	// SettleEvent records what happened to a claimed event: delivered (it is
	// deleted), to be retried at r.RetryAt, or dead.
	SettleEvent(ctx context.Context, r EventResult) error

	// DeadEvents returns up to q.Limit dead outbox events that match q,
	// newest first (by At, then by id), each with its Attempt and
	// LastError, and where the next page starts: zero when no event that
	// matches q is left. It may return fewer than q.Limit and a next page,
	// when it looked through many dead events that do not match.
	DeadEvents(ctx context.Context, q EventQuery) ([]Event, EventCursor, error)

	// ReplayEvents makes the dead outbox events ids, those about tenant's
	// messages only when tenant is not empty, live again: due at now,
	// with no delivery tried. It returns how many; an id that names no
	// such event is skipped.
	ReplayEvents(ctx context.Context, tenant string, ids []string, now time.Time) (int, error)

	// AddInbound stores ev, an event a push carrier sent back, in the
	// inbox: durable on return, due at ev.DueAt. An event whose id the
	// inbox holds, or held and settled (see SettleInbound), is not stored
	// again: a copy that comes late (another node's session, a post
	// repeated) is not applied a second time.
	AddInbound(ctx context.Context, ev Inbound) error

	// ClaimInbound returns up to limit inbox events due at now, earliest
	// due first, and makes them due again only at leaseUntil, so that one
	// node looks at an event at a time.
	ClaimInbound(ctx context.Context, now time.Time, limit int, leaseUntil time.Time) ([]Inbound, error)

	// InboundByCorrelation returns the inbox events of route whose
	// Correlation is correlation (an ack and its uplink), claimed or not.
	InboundByCorrelation(ctx context.Context, route, correlation string) ([]Inbound, error)

	// SettleInbound applies s in one write: deletes s.Done, remembering
	// their ids until Prune is given a time after their At, makes s.Later
	// due at s.DueAt, and enqueues s.Event for each of s.Notify (its ID
	// and a subscriber's name make each outbox event's id; enqueueing an
	// id twice keeps one). Unknown ids are skipped.
	SettleInbound(ctx context.Context, s InboundSettle) error

	// CreateRoom stores r, or returns ErrRoomExists when its tenant has a
	// room of its name.
	CreateRoom(ctx context.Context, r Room) error

	// Room returns tenant's room name, with its Subscriptions counted, or
	// ErrNotFound.
	Room(ctx context.Context, tenant, name string) (*Room, error)

	// Rooms returns tenant's rooms, by name, with their Subscriptions
	// counted.
	Rooms(ctx context.Context, tenant string) ([]Room, error)

	// DeleteRoom deletes tenant's room name and its subscriptions, and
	// ends their deliveries that are not terminal as end says, in one
	// write, and returns how many it ended; ErrNotFound when there is no
	// such room.
	DeleteRoom(ctx context.Context, tenant, name string, end DeliveryEnd) (int, error)

	// CreateSubscription stores s in its room (s.Tenant's room s.Room)
	// and changes the room's Revision, in one write; ErrNotFound when
	// there is no such room.
	CreateSubscription(ctx context.Context, s Subscription) error

	// Subscription returns the subscription id, or ErrNotFound.
	Subscription(ctx context.Context, id string) (*Subscription, error)

	// Subscriptions returns the subscriptions of tenant's room, by id.
	Subscriptions(ctx context.Context, tenant, room string) ([]Subscription, error)

	// DeleteSubscription deletes tenant's subscription id, changes its
	// room's Revision and ends its deliveries that are not terminal as end
	// says, in one write, and returns how many it ended; ErrNotFound when
	// tenant has no such subscription.
	DeleteSubscription(ctx context.Context, tenant, id string, end DeliveryEnd) (int, error)

	// Publish stores p.Event and creates p.Deliveries (as Create does, with
	// no key of any kind) in one write: all or none. It returns
	// ErrNotFound when the event's room does not exist, and ErrConflict,
	// storing nothing, when the room's Revision is not p.Revision (a
	// subscription was made or deleted since the caller read them).
	Publish(ctx context.Context, p Publication) error

	// RoomEvent returns the room event id with its deliveries, or
	// ErrNotFound.
	RoomEvent(ctx context.Context, id string) (*RoomEvent, error)

	// Pull atomically moves up to p.Limit QUEUED messages with Pull set,
	// of route p.Route and target p.Target, due at p.Now and not expired
	// (ExpiresAt zero or after p.Now), to SENT_TO_NS, highest priority
	// first and first-in first-out within a priority, and returns them
	// (without timelines): it increments Attempt, sets Deadline to
	// p.Deadline, sets Lease to p.Lease and records the transition with
	// p.Reason. A message is leased to one caller only, across processes.
	// Claim never takes a Pull message.
	Pull(ctx context.Context, p PullClaim) ([]*Message, error)

	// PullQueue returns how many QUEUED messages with Pull set route and
	// target hold, due or not: a pull subscription's queue depth.
	PullQueue(ctx context.Context, route, target string) (int, error)

	// Ping reports whether the store answers.
	Ping(ctx context.Context) error

	// Close releases the store's resources.
	Close() error
}

// CreateOptions are Create's side effects.
type CreateOptions struct {
	// CoalesceNotify names the subscribers to tell about messages that the new
	// one cancels by coalescing.
	CoalesceNotify []string
	// DedupSince is the start of the dedup window of a message with a
	// DedupKey: a message sent to its target before it does not count.
	DedupSince time.Time
	// Coalesced, when not nil, is set to the number of messages that the
	// create cancelled by coalescing, once it stored the new one.
	Coalesced *int
}

// Claim is a request to Store.Claim.
type Claim struct {
	Now   time.Time
	Limit int
	// AcceptTimeouts gives each route's SENT_TO_NS deadline; DefaultAccept the rest.
	AcceptTimeouts map[string]time.Duration
	DefaultAccept  time.Duration
	// GatedLimit bounds the messages of gated routes in the claim (they
	// count in Limit too); 0 claims none of them.
	GatedLimit int
	// Node names the claiming node, unique to the process: the lanes of a
	// route with Admission.ClaimAhead are dispatched by one node at a time,
	// while its heartbeat lasts (see Store.Heartbeat).
	Node string
	// KeptAhead gives, by route with Admission.ClaimAhead, how many of a
	// lane's messages beyond its Concurrency the claim may leave in
	// flight: those whose calls the node expects to start while the claim
	// is written, because as many calls of the lane end meanwhile. A route
	// it does not name has none: its lanes' messages are claimed for their
	// free calls only, and the others stay QUEUED.
	KeptAhead map[string]int
	// KeptSent counts, for each lane the node keeps, its messages whose
	// carrier calls have ended and whose answers are not recorded yet:
	// in flight for the store, but no longer at the carrier, so that a
	// lane's next message is claimed while its last answer is on its way
	// to the store.
	KeptSent map[LaneRef]int
	// Hold names routes (Lane empty) and lanes whose messages the claim
	// leaves QUEUED: an operator's pauses and the routes missing from the
	// configuration. Empty in the usual case, where it costs the claim
	// nothing; otherwise every claim passes over the held messages.
	Hold []LaneRef
}

// Holds reports whether c.Hold names route, or lane of route.
func (c Claim) Holds(route, lane string) bool {
	for _, h := range c.Hold {
		if h.Route == route && (h.Lane == "" || h.Lane == lane) {
			return true
		}
	}
	return false
}

// LanePause is an operator's pause of a lane, or of a whole route when
// Lane is empty: its messages are not claimed until Until (zero: until
// resumed).
type LanePause struct {
	Route, Lane string
	Until       time.Time
	Reason      string
	// Tenant is the tenant of the key that paused it; At is when.
	Tenant string
	At     time.Time
}

// KeptBound returns how many messages of lane l, of a route with
// admission a and a ClaimAhead, may be in flight after claim c: its
// Concurrency, plus its route's KeptAhead and the lane's KeptSent, and
// never more than its ClaimAhead.
func (c Claim) KeptBound(a Admission, l LaneRef) int {
	return min(a.ClaimAhead, a.Concurrency+c.KeptAhead[l.Route]+c.KeptSent[l])
}

// LaneRef names a lane of a route.
type LaneRef struct{ Route, Lane string }

// Transition is a compare-and-set of a message's status.
type Transition struct {
	ID    string
	From  Status // the status the message must be in
	To    Status
	Lease int64 // when non-zero, the lease the message must be under
	At    time.Time
	// Reason is recorded in the timeline entry. A transition that keeps
	// the status records an entry only when it has a Reason (an
	// operator's send-now of a scheduled message).
	Reason string
	// Call, when not zero, is what the carrier answered to the call that
	// this transition ends: its timeline entry keeps it.
	Call Call

	DueAt      time.Time // the message's new DueAt (zero clears it)
	Deadline   time.Time // the new stage deadline (zero clears it)
	ExpiresAt  time.Time // when non-zero, replaces ExpiresAt
	ExternalID string    // when non-empty, replaces ExternalID
	LastError  string    // when non-empty, replaces LastError
	// Result, when non-empty, replaces the message's Result; a replay
	// (ResetAttempts) without one clears it.
	Result map[string]string
	// ResetAttempts sets Attempt to 0 (replay).
	ResetAttempts bool
	// RequireSubscription, when set, applies the transition only while
	// the room subscription of that id exists, read in the same write:
	// otherwise it changes nothing and returns ErrConflict. A replay of a
	// room's delivery names the delivery's subscription, so that it
	// cannot re-queue a delivery whose subscription a deletion racing it
	// has just ended.
	RequireSubscription string
	// UndoAttempt takes one from Attempt: the send did not count (the
	// carrier said "not now").
	UndoAttempt bool
	// PauseUntil, when non-zero, pauses the message's lane until then, for
	// PauseReason, when its route is gated: no message of the lane is
	// claimed before. A pause never shortens the one in force; the reason
	// is the longer pause's.
	PauseUntil  time.Time
	PauseReason string
	// Notify names the subscribers to enqueue an outcome event for.
	Notify []string
}

// Query selects messages for Store.List. Empty fields match everything.
type Query struct {
	Tenant        string
	Status        Status
	Route         string
	CorrelationID string
	// Target, when not empty, matches the message's Target exactly.
	Target string
	// IDPrefix, when not empty, keeps the messages whose id starts with
	// it (a person's shortened id): stores walk the range of ids
	// IDPrefixRange gives, not every message.
	IDPrefix string
	// Reason, with Status DELIVERY_FAILED, matches LastError by substring.
	Reason string
	// Since and Until bound UpdatedAt (inclusive, exclusive) when non-zero.
	Since, Until time.Time
	Limit        int    // defaults to 100
	Cursor       string // from the previous page
}

// IDPrefixRange returns the ids that start with prefix as a range of the
// ids' byte order: lo <= id < hi. hi is "" when no id is above the range
// (a prefix of 0xff bytes only).
func IDPrefixRange(prefix string) (lo, hi string) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return prefix, string(b[:i+1])
		}
	}
	return prefix, ""
}

// LaneQuery selects the lanes of Store.Lanes and Engine.Lanes.
type LaneQuery struct {
	// Route is the gated route whose lanes are wanted; "" for every one.
	Route string
	// Tenant, when not empty, keeps the lanes that hold messages of this
	// tenant, and counts its messages only.
	Tenant string
	// Limit bounds the lanes returned.
	Limit int
}

// PurgeQuery selects dead letters for Store.Purge.
type PurgeQuery struct {
	Tenant string
	Route  string    // empty for all routes
	Before time.Time // zero for any time: UpdatedAt before it
}

// Count is one line of Store.Counts.
type Count struct {
	Tenant string
	Route  string
	Status Status
	N      int
	// OldestCreated is the oldest CreatedAt among the counted messages when
	// they wait (QUEUED, TO_RETRY: the age of the queue), zero otherwise.
	OldestCreated time.Time
}

// Event is an outcome event in the outbox, bound for one subscriber.
type Event struct {
	ID         string
	Subscriber string
	MessageID  string
	Type       Status // the status the message moved to
	At         time.Time
	Attempt    int // deliveries tried so far
	// Data is the body of an event about no message (MessageID is empty:
	// an uplink), delivered as it is.
	Data []byte
	// LastError is why its last delivery failed (DeadEvents).
	LastError string
}

// EventQuery selects dead outbox events (Store.DeadEvents). Empty fields
// match everything.
type EventQuery struct {
	// Tenant, when not empty, matches the events about that tenant's
	// messages only; empty matches every event, those about no message
	// (lane events, uplinks) included.
	Tenant     string
	Subscriber string
	// Since and Until bound the event's At (inclusive, exclusive) when
	// non-zero.
	Since, Until time.Time
	// IDs, when not nil, matches these events only.
	IDs []string
	// Limit bounds a page of DeadEvents.
	Limit int
	// After, when not zero, starts the page after this event: older.
	After EventCursor
}

// EventCursor is where a page of dead events starts: after the event of
// ID at At, in the order newest first.
type EventCursor struct {
	At time.Time
	ID string
}

// IsZero reports whether c is no cursor: from the newest.
func (c EventCursor) IsZero() bool { return c.ID == "" }

// EventResult settles a claimed Event.
type EventResult struct {
	ID        string
	Delivered bool      // the subscriber took it: delete it
	Dead      bool      // out of attempts: keep it as dead
	RetryAt   time.Time // otherwise: try again then
	Attempt   int       // deliveries tried so far, this one included
	Error     string
}
