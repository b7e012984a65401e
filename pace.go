package herald

import (
	"math"
	"time"
)

// pace decides how far the dispatcher claims ahead of its free send slots.
// A claimed message is SENT_TO_NS, and its attempt counts: it must be
// called about as soon as its claim is durable, not wait for a slot, nor
// for a call of its lane. So beyond the free slots (and a lane's free
// calls), the dispatcher claims only the messages that the calls ending
// while claims are written will make room for: in each send slot, as many
// calls as claimsAhead claims' time holds. pace keeps the averages this
// takes, of the claims' time and of the calls' time, node-wide and by
// route, on the engine's clock. A carrier slower than a claim gets no
// message ahead: its messages stay QUEUED until a slot is free for them.
// It is guarded by the Engine's dispatchMu.
type pace struct {
	claim  time.Duration            // a claim's time, averaged
	call   time.Duration            // a carrier call's time, averaged
	routes map[string]time.Duration // the same by route, of the routes whose lanes the node keeps
}

// paceWeight is the weight of a new time in an average.
const paceWeight = 8

// claimsAhead is how many claims' time of calls the dispatcher claims
// ahead: two claims may run at once, and a claim's time varies.
const claimsAhead = 4

// average moves avg towards d.
func average(avg, d time.Duration) time.Duration {
	if avg == 0 {
		return d
	}
	return avg + (d-avg)/paceWeight
}

// claimed records that a claim took d.
func (p *pace) claimed(d time.Duration) { p.claim = average(p.claim, d) }

// called records that a call of route took d; kept says whether the node
// keeps the route's lanes (Admission.ClaimAhead).
func (p *pace) called(route string, kept bool, d time.Duration) {
	p.call = average(p.call, d)
	if kept {
		if p.routes == nil {
			p.routes = make(map[string]time.Duration)
		}
		p.routes[route] = average(p.routes[route], d)
	}
}

// callsPerClaim returns how many calls of time call one slot makes while
// claimsAhead claims are written, 0 while either time is unknown.
func (p *pace) callsPerClaim(call time.Duration) float64 {
	if p.claim <= 0 || call < 0 {
		return 0
	}
	return claimsAhead * float64(p.claim) / float64(max(call, time.Microsecond))
}

// ahead returns how many messages to claim beyond the free slots, for
// slots send slots, at most most.
func (p *pace) ahead(slots, most int) int {
	return int(min(float64(most), math.Floor(float64(slots)*p.callsPerClaim(p.call))))
}

// keptAhead returns, by route whose lanes the node keeps with admission
// rules, how many of a lane's messages beyond its concurrency a claim may
// take (Claim.KeptAhead): the routes with none are left out.
func (p *pace) keptAhead(rules map[string]Admission) map[string]int {
	var ahead map[string]int
	for route, call := range p.routes {
		a := rules[route]
		n := int(min(float64(a.ClaimAhead), math.Floor(float64(a.Concurrency)*p.callsPerClaim(call))))
		if n > 0 {
			if ahead == nil {
				ahead = make(map[string]int)
			}
			ahead[route] = n
		}
	}
	return ahead
}
