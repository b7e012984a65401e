package herald

import (
	"strings"
	"sync"
	"time"
)

// Why a carrier event was refused before it reached the inbox
// (RefuseEvent, Observer.Refused): the values of the reason label.
const (
	// RefusedUnauthorized: without the route's ingress secret.
	RefusedUnauthorized = "unauthorized"
	// RefusedUnknownRoute: to a route that takes no events.
	RefusedUnknownRoute = "unknown_route"
	// RefusedInvalid: a malformed event, or one of an unknown type.
	RefusedInvalid = "invalid"
	// RefusedTooLarge: a body over the ingress's limit.
	RefusedTooLarge = "too_large"
)

// refusedLogEvery is how often the refusals of one route are logged at
// most: a network that keeps sending with a wrong secret, or a scanner,
// gets a line a minute, not a line an event.
const refusedLogEvery = time.Minute

// refusals rate-limits the log lines of refused events, per route.
type refusals struct {
	mu     sync.Mutex
	routes map[string]*refusedRoute
}

// refusedRoute is what one route's refusals owe the log: how many were
// refused since its last line, and when that line was written.
type refusedRoute struct {
	since  int
	logged time.Time
}

// count adds a refusal of route at now and reports whether a line is due,
// with the refusals it covers (this one included); the first refusal of a
// route is logged at once, the next once refusedLogEvery has passed.
func (r *refusals) count(route string, now time.Time) (n int, due bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.routes == nil {
		r.routes = map[string]*refusedRoute{}
	}
	rr, ok := r.routes[route]
	if !ok {
		rr = &refusedRoute{}
		r.routes[route] = rr
	}
	rr.since++
	if ok && now.Sub(rr.logged) < refusedLogEvery {
		return rr.since, false
	}
	n, rr.since, rr.logged = rr.since, 0, now
	return n, true
}

// RefuseEvent records that an event posted to route was refused before it
// reached the inbox, for reason (RefusedUnauthorized, RefusedUnknownRoute,
// RefusedInvalid, RefusedTooLarge; detail says more): it is counted
// (Observer.Refused, herald_inbound_total{result="refused"}) and logged,
// one WARN per route a minute at most, with the count refused since the
// route's last line (this one included) and the latest reason and detail. A route that is not configured is counted and logged
// under "" (whatever its name: the caller chose it), the line naming the
// latest one tried.
func (e *Engine) RefuseEvent(route, reason, detail string) {
	key := route
	if _, ok := e.routes[route]; !ok {
		key = ""
	}
	e.obs.Refused(key, reason)
	n, due := e.refusals.count(key, e.clock.Now())
	if !due {
		return
	}
	if len(route) > 64 {
		route = strings.ToValidUTF8(route[:64], "") + "…"
	}
	e.log.Warn("carrier events refused", "route", route, "refused", n, "reason", reason, "detail", detail)
}
