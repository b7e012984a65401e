package herald

import (
	"fmt"
	"math"
	"time"
)

// Rate is a token bucket's refill: N tokens every Per, continuously. Its
// burst, the tokens a full bucket holds, is N.
type Rate struct {
	N   int
	Per time.Duration
}

// IsZero reports whether r sets no bucket.
func (r Rate) IsZero() bool { return r.N == 0 }

// String formats r as the config writes it, "30/1m0s".
func (r Rate) String() string { return fmt.Sprintf("%d/%v", r.N, r.Per) }

// Refill returns a bucket's tokens at now, when it held tokens at at:
// refilled at N per Per since, and at most N.
func (r Rate) Refill(tokens float64, at, now time.Time) float64 {
	if now.After(at) {
		tokens += float64(now.Sub(at)) * float64(r.N) / float64(r.Per)
	}
	return math.Min(tokens, float64(r.N))
}

// NextToken returns when a bucket that holds tokens at now holds one whole
// token: now when it already does.
func (r Rate) NextToken(tokens float64, now time.Time) time.Time {
	if tokens >= 1 {
		return now
	}
	missing := (1 - tokens) * float64(r.Per) / float64(r.N)
	return now.Add(time.Duration(math.Ceil(missing)))
}

// Admission is the flow control of a route's lanes: each lane (a network,
// a gateway, a DCU) is admitted on its own, and the limits hold across
// every node sharing the store.
type Admission struct {
	// Spacing is the minimum interval between two dispatches on a lane.
	Spacing time.Duration
	// Concurrency bounds the messages of a lane in flight (SENT_TO_NS to
	// terminal or TO_RETRY); 0 for no bound.
	Concurrency int
	// Rate is a token bucket per lane; zero for none.
	Rate Rate
	// TenantRate is a token bucket per tenant across the route's lanes;
	// zero for none.
	TenantRate Rate
	// RouteRate is a token bucket for the whole route, across its lanes
	// and tenants; zero for none.
	RouteRate Rate
	// Ordered allows one message per target at a time, in creation order:
	// the next is claimed once the one before is terminal (as a network
	// server's per-device queue does).
	Ordered bool
	// Circuit is each lane's circuit breaker; zero for none.
	Circuit Circuit
	// ClaimAhead, when positive, moves the keeping of Concurrency from the
	// claims to the node that dispatches the lane. The engine sets it
	// (configuration does not) on a route whose carrier is direct, whose
	// flight at the carrier is the call itself. A claim then takes a
	// lane's messages only when none of them is in flight or those in
	// flight are the claiming node's (Claim.Node), or that node's
	// heartbeat lapsed (Store.Heartbeat), up to Claim.KeptBound in flight,
	// never more than ClaimAhead; and that node makes at most Concurrency
	// carrier calls of the lane at once: one node at a time dispatches a
	// lane.
	ClaimAhead int
}

// Circuit is a lane's circuit breaker: after Failures transient failures
// of its carrier in a row, the lane opens for CoolDown (its messages wait
// and spend no attempt); then one probe message goes: a success closes the
// circuit, a failure opens it again for twice as long, at most
// MaxCircuitCoolDown.
type Circuit struct {
	Failures int
	CoolDown time.Duration
}

// MaxCircuitCoolDown caps a circuit's cool-down as failed probes double it.
const MaxCircuitCoolDown = time.Hour

// CircuitReport is one send's outcome on a lane whose route has a circuit.
type CircuitReport struct {
	Route, Lane string
	At          time.Time
	Failed      bool // a transient failure; false for a success
}

// CircuitChange is what a CircuitReport did to the lane's circuit.
type CircuitChange struct {
	Opened   bool      // the circuit opened (or opened again after a failed probe)
	Closed   bool      // the circuit closed
	Until    time.Time // when Opened: the end of the cool-down
	Failures int       // transient failures in a row, this one included
}

// Gated reports whether a sets any limit: a gated route's messages are
// claimed through their lanes.
func (a Admission) Gated() bool {
	return a.Spacing > 0 || a.Concurrency > 0 || !a.Rate.IsZero() || !a.TenantRate.IsZero() || !a.RouteRate.IsZero() ||
		a.Ordered || a.Circuit.Failures > 0
}

// Timed reports whether a limits a lane over time (spacing, buckets): the
// carrier then sees the limit only if a claimed message is sent at once,
// not after a wait in the dispatcher's buffer.
func (a Admission) Timed() bool {
	return a.Spacing > 0 || !a.Rate.IsZero() || !a.TenantRate.IsZero() || !a.RouteRate.IsZero()
}

// Validate reports the first thing wrong with a.
func (a Admission) Validate() error {
	switch {
	case a.Spacing < 0:
		return fmt.Errorf("admission: spacing %v is negative", a.Spacing)
	case a.Concurrency < 0:
		return fmt.Errorf("admission: concurrency %d is negative", a.Concurrency)
	case a.Rate.N < 0 || (a.Rate.N > 0 && a.Rate.Per <= 0):
		return fmt.Errorf("admission: rate %v needs a positive amount and period", a.Rate)
	case a.TenantRate.N < 0 || (a.TenantRate.N > 0 && a.TenantRate.Per <= 0):
		return fmt.Errorf("tenant_rate %v needs a positive amount and period", a.TenantRate)
	case a.RouteRate.N < 0 || (a.RouteRate.N > 0 && a.RouteRate.Per <= 0):
		return fmt.Errorf("route_rate %v needs a positive amount and period", a.RouteRate)
	case a.Circuit.Failures < 0 || (a.Circuit.Failures > 0 && a.Circuit.CoolDown <= 0):
		return fmt.Errorf("circuit: failures %d needs a positive cool_down (%v)", a.Circuit.Failures, a.Circuit.CoolDown)
	}
	return nil
}

// LaneState is what a store knows of one lane of a route.
type LaneState struct {
	Route, Lane string
	// Queued counts the lane's QUEUED messages, due or not.
	Queued int
	// InFlight lists the ids of the lane's messages in flight that hold
	// its slots, oldest first (not those of a node whose heartbeat lapsed:
	// see Store.Heartbeat).
	InFlight []string
	// NextAt is the earliest time of the lane's next dispatch under its
	// spacing; zero when there is none.
	NextAt time.Time
	// Tokens is the lane's bucket as of TokensAt; TokensAt is zero while
	// the bucket was never drawn from (it is full).
	Tokens   float64
	TokensAt time.Time
	// PausedUntil is when the lane resumes after a pause; PauseReason says
	// why it paused (backpressure, circuit_open, circuit_probe: a probe
	// message is out).
	PausedUntil time.Time
	PauseReason string
	// Operator is the operator's pause of the lane or of its route, which
	// Engine.Lanes fills in (a store leaves it nil).
	Operator *LanePause
	// Circuit is the lane's circuit breaker: "" closed, "open" or
	// "probing"; Failures counts the transient failures in a row.
	Circuit  string
	Failures int
	// TenantTokens is the bucket of the tenant that Store.Lane was asked
	// about, as of TenantTokensAt (zero: full).
	TenantTokens   float64
	TenantTokensAt time.Time
	// RouteTokens is the route's own bucket (RouteRate), as of
	// RouteTokensAt (zero: full).
	RouteTokens   float64
	RouteTokensAt time.Time
}
