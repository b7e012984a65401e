package herald

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A message is held, left where it is and not claimed, while its route is
// missing from the configuration (an orphan: it moves again once a config
// with the route is loaded, or an operator fails it with FailOrphans) or
// an operator paused its lane or route (PauseLane). The engine names the
// held routes and lanes in each Claim.Hold; the store keeps the pauses, so
// that they survive restarts and every node reads them.

// holdRefresh is how often the engine reads the operator's pauses from the
// store (at the reaper's rounds): a pause made through another node holds
// here within it and a ReapInterval.
const holdRefresh = 2 * time.Second

// orphanRecount is how often, while there are orphans, the engine counts
// their messages again (for HoldObserver and the log).
const orphanRecount = 30 * time.Second

// MaxPauseReason bounds the length of a pause's reason.
const MaxPauseReason = 200

// ErrRouteConfigured is returned by FailOrphans for a route that is in the
// configuration: its messages are not orphans.
var ErrRouteConfigured = errors.New("route is configured")

// HoldObserver is an Observer that is also told what the engine holds: the
// pending messages of each orphaned route, and the lanes and routes an
// operator paused. The engine calls it whenever either changes.
type HoldObserver interface {
	Held(orphaned map[string]int, operatorPaused int)
}

// holds is what the engine holds back.
type holds struct {
	mu       sync.Mutex
	orphans  map[string]int // route -> its pending messages, as last counted
	counted  time.Time      // when the orphans were last counted
	pauses   []LanePause    // the operator's pauses, as last read
	read     time.Time      // when the pauses were last read
	lastHeld string         // what HoldObserver was last told, to tell changes only
	// list is the claims' Hold, nil when nothing is held.
	list atomic.Pointer[[]LaneRef]
}

// holdList returns the claims' Hold.
func (e *Engine) holdList() []LaneRef {
	if p := e.holds.list.Load(); p != nil {
		return *p
	}
	return nil
}

// rebuildHolds makes the claims' Hold of the orphans and of the pauses in
// force at now, and tells the observer. The caller holds holds.mu.
func (e *Engine) rebuildHolds(now time.Time) {
	h := &e.holds
	var list []LaneRef
	for _, route := range slices.Sorted(maps.Keys(h.orphans)) {
		list = append(list, LaneRef{Route: route})
	}
	paused := 0
	for _, p := range h.pauses {
		if inForce(p, now) {
			list = append(list, LaneRef{Route: p.Route, Lane: p.Lane})
			paused++
		}
	}
	if len(list) == 0 {
		h.list.Store(nil)
	} else {
		h.list.Store(&list)
	}
	if ho, ok := e.obs.(HoldObserver); ok {
		if key := fmt.Sprint(h.orphans, paused); key != h.lastHeld {
			h.lastHeld = key
			ho.Held(maps.Clone(h.orphans), paused)
		}
	}
}

// inForce reports whether p holds at now.
func inForce(p LanePause, now time.Time) bool {
	return p.Until.IsZero() || p.Until.After(now)
}

// findOrphans counts the pending messages of the routes missing from the
// configuration and holds them, with a WARN for each such route.
func (e *Engine) findOrphans(ctx context.Context) error {
	active, err := e.store.ActiveRoutes(ctx)
	if err != nil {
		return err
	}
	missing := false
	for _, name := range active {
		if _, ok := e.route(name); !ok {
			missing = true
		}
	}
	orphans := map[string]int{}
	if missing {
		if orphans, err = e.countOrphans(ctx, ""); err != nil {
			return err
		}
	}
	for _, route := range slices.Sorted(maps.Keys(orphans)) {
		e.log.Warn("route missing from the configuration: its pending messages are held, not sent, until it is back (herald dlq fail-orphans --route "+route+" fails them)",
			"route", route, "messages", orphans[route])
	}
	e.holds.mu.Lock()
	defer e.holds.mu.Unlock()
	e.holds.orphans, e.holds.counted = orphans, e.clock.Now()
	e.rebuildHolds(e.clock.Now())
	return nil
}

// countOrphans returns the pending messages of tenant (every tenant's when
// empty) by route missing from the configuration.
func (e *Engine) countOrphans(ctx context.Context, tenant string) (map[string]int, error) {
	counts, err := e.store.Counts(ctx)
	if err != nil {
		return nil, err
	}
	orphans := map[string]int{}
	for _, c := range counts {
		if c.Status.Terminal() || (tenant != "" && c.Tenant != tenant) {
			continue
		}
		if _, ok := e.route(c.Route); !ok {
			orphans[c.Route] += c.N
		}
	}
	return orphans, nil
}

// orphaned holds the route of m, claimed though its route is missing from
// the configuration (another node's message, of a route this node does
// not have): the next claims pass its messages over.
func (e *Engine) orphaned(m *Message) {
	e.holds.mu.Lock()
	defer e.holds.mu.Unlock()
	if _, ok := e.holds.orphans[m.Route]; !ok {
		e.log.Warn("route missing from the configuration: its pending messages are held, not sent, until it is back", "route", m.Route, "id", m.ID)
	}
	if e.holds.orphans == nil {
		e.holds.orphans = map[string]int{}
	}
	e.holds.orphans[m.Route]++
	e.rebuildHolds(e.clock.Now())
}

// refreshHoldsEvery reads the operator's pauses when holdRefresh has passed
// since it last did (the reaper calls it on each of its rounds).
func (e *Engine) refreshHoldsEvery(ctx context.Context) {
	e.holds.mu.Lock()
	due := !e.clock.Now().Before(e.holds.read.Add(holdRefresh))
	e.holds.mu.Unlock()
	if !due {
		return
	}
	if err := e.refreshHolds(ctx); err != nil && ctx.Err() == nil {
		e.problem("store_error", "read the lanes' pauses", "err", err)
	}
}

// refreshHolds reads the operator's pauses, deletes those that ended, and
// counts the orphans again when it is time.
func (e *Engine) refreshHolds(ctx context.Context) error {
	pauses, err := e.store.LanePauses(ctx)
	if err != nil {
		return err
	}
	now := e.clock.Now()
	kept := pauses[:0]
	for _, p := range pauses {
		if inForce(p, now) {
			kept = append(kept, p)
			continue
		}
		if ok, err := e.store.ResumeLane(ctx, p.Route, p.Lane); err != nil {
			return err
		} else if ok {
			e.log.Info("lane resumed: its pause ended", "route", p.Route, "lane", p.Lane, "until", p.Until)
		}
	}
	var orphans map[string]int
	e.holds.mu.Lock()
	recount := len(e.holds.orphans) > 0 && now.Sub(e.holds.counted) >= orphanRecount
	e.holds.mu.Unlock()
	if recount {
		if orphans, err = e.countOrphans(ctx, ""); err != nil {
			return err
		}
	}
	e.holds.mu.Lock()
	defer e.holds.mu.Unlock()
	e.holds.pauses, e.holds.read = kept, now
	if recount {
		e.holds.orphans, e.holds.counted = orphans, now
	}
	e.rebuildHolds(now)
	return nil
}

// operatorPause returns the operator's pause in force at now of route's
// lane, or of the whole route, if any: the route's first.
func (e *Engine) operatorPause(route, lane string, now time.Time) (LanePause, bool) {
	e.holds.mu.Lock()
	defer e.holds.mu.Unlock()
	var found *LanePause
	for i, p := range e.holds.pauses {
		if p.Route == route && inForce(p, now) && (p.Lane == "" || (p.Lane == lane && found == nil)) {
			found = &e.holds.pauses[i]
		}
	}
	if found == nil {
		return LanePause{}, false
	}
	return *found, true
}

// isOrphan reports whether route is missing from the configuration.
func (e *Engine) isOrphan(route string) bool {
	_, ok := e.route(route)
	return !ok
}

// PauseLane pauses p.Lane of route p.Route, or the whole route when p.Lane
// is empty, until p.Until (zero: until resumed), for every tenant: its
// messages stay QUEUED, not claimed, on every node (within holdRefresh on
// the others). p.Tenant is the tenant of the key that asks, for the log.
// A route that is not configured is ErrUnknownRoute; an Until not after
// now, or a Reason too long, an *InvalidError.
func (e *Engine) PauseLane(ctx context.Context, p LanePause) error {
	if _, ok := e.routes[p.Route]; !ok {
		return fmt.Errorf("%w %q", ErrUnknownRoute, p.Route)
	}
	now := e.clock.Now()
	switch {
	case !p.Until.IsZero() && !p.Until.After(now):
		return Invalid("until", "want a time in the future")
	case len(p.Reason) > MaxPauseReason:
		return Invalid("reason", "want at most %d bytes", MaxPauseReason)
	}
	p.At = now
	if err := e.store.PauseLane(ctx, p); err != nil {
		return err
	}
	e.log.Info("lane paused by an operator", "route", p.Route, "lane", p.Lane, "until", p.Until, "reason", p.Reason, "tenant", p.Tenant)
	return e.refreshHolds(ctx)
}

// ResumeLane ends the operator's pause of route's lane (the whole route's
// when lane is empty) and reports whether there was one; tenant is the
// asking key's, for the log. A route that is not configured is
// ErrUnknownRoute.
func (e *Engine) ResumeLane(ctx context.Context, tenant, route, lane string) (bool, error) {
	if _, ok := e.routes[route]; !ok {
		return false, fmt.Errorf("%w %q", ErrUnknownRoute, route)
	}
	ok, err := e.store.ResumeLane(ctx, route, lane)
	if err != nil {
		return false, err
	}
	if ok {
		e.log.Info("lane resumed by an operator", "route", route, "lane", lane, "tenant", tenant)
	}
	if err := e.refreshHolds(ctx); err != nil {
		return ok, err
	}
	e.nudge(e.wake)
	return ok, nil
}

// LanePauses returns the operator's pauses in force, by route, then lane.
func (e *Engine) LanePauses() []LanePause {
	now := e.clock.Now()
	e.holds.mu.Lock()
	defer e.holds.mu.Unlock()
	var in []LanePause
	for _, p := range e.holds.pauses {
		if inForce(p, now) {
			in = append(in, p)
		}
	}
	return in
}

// FailOrphans moves tenant's pending messages (every tenant's when tenant
// is empty) of route, which is missing from the configuration, to
// DELIVERY_FAILED ("route removed"), and returns how many. A configured
// route is ErrRouteConfigured.
func (e *Engine) FailOrphans(ctx context.Context, tenant, route string) (int, error) {
	if !e.isOrphan(route) {
		return 0, fmt.Errorf("%w: %q", ErrRouteConfigured, route)
	}
	n, err := e.failRoute(ctx, tenant, route)
	if n > 0 {
		e.log.Warn("orphaned messages failed by an operator", "route", route, "messages", n, "tenant", tenant)
	}
	if err != nil {
		return n, err
	}
	orphans, err := e.countOrphans(ctx, "")
	if err != nil {
		return n, err
	}
	e.holds.mu.Lock()
	defer e.holds.mu.Unlock()
	e.holds.orphans, e.holds.counted = orphans, e.clock.Now()
	e.rebuildHolds(e.clock.Now())
	return n, nil
}

// failRoute fails tenant's (every tenant's when empty) pending messages of
// route.
func (e *Engine) failRoute(ctx context.Context, tenant, route string) (int, error) {
	n := 0
	for _, st := range Statuses {
		if st.Terminal() {
			continue
		}
		for {
			msgs, _, err := e.store.List(ctx, Query{Tenant: tenant, Route: route, Status: st, Limit: 500})
			if err != nil {
				return n, err
			}
			moved := 0
			for _, m := range msgs {
				lease := int64(0)
				if st.InFlight() {
					lease = m.Lease
				}
				if e.apply(ctx, m, Transition{From: st, To: StatusDeliveryFailed, Lease: lease, At: e.clock.Now(),
					Reason: "route removed", LastError: "route " + route + " removed from the configuration"}) == nil {
					moved++
				}
			}
			n += moved
			if len(msgs) < 500 || moved == 0 || ctx.Err() != nil {
				break
			}
		}
	}
	return n, ctx.Err()
}

// RouteCounts is a configured route with its messages counted by status.
type RouteCounts struct {
	Route  string         `json:"route"`
	Counts map[Status]int `json:"counts"`
	// Paused is the operator's pause of the whole route; null when none.
	Paused *PauseView `json:"paused"`
}

// OrphanedRoute is a route missing from the configuration that has
// pending messages, held until it is back.
type OrphanedRoute struct {
	Route    string `json:"route"`
	Messages int    `json:"messages"`
}

// RoutesView is the answer of GET /v1/routes.
type RoutesView struct {
	Routes   []RouteCounts   `json:"routes"`
	Orphaned []OrphanedRoute `json:"orphaned"`
}

// PauseView is an operator's pause as users read it.
type PauseView struct {
	Route  string     `json:"route"`
	Lane   string     `json:"lane"`
	Until  *time.Time `json:"until"`
	Reason string     `json:"reason"`
	At     time.Time  `json:"at"`
}

// View returns the shape of p that users read.
func (p LanePause) View() PauseView {
	return PauseView{Route: p.Route, Lane: p.Lane, Until: utcOrNil(p.Until), Reason: p.Reason, At: p.At.UTC()}
}

// Routes returns the configured routes, by name, with tenant's messages
// (every tenant's when empty) counted by status, and the routes missing
// from the configuration that hold pending messages of tenant.
func (e *Engine) Routes(ctx context.Context, tenant string) (RoutesView, error) {
	counts, err := e.store.Counts(ctx)
	if err != nil {
		return RoutesView{}, err
	}
	byRoute := map[string]map[Status]int{}
	orphans := map[string]int{}
	for _, c := range counts {
		if tenant != "" && c.Tenant != tenant {
			continue
		}
		if e.isOrphan(c.Route) {
			if !c.Status.Terminal() {
				orphans[c.Route] += c.N
			}
			continue
		}
		if byRoute[c.Route] == nil {
			byRoute[c.Route] = map[Status]int{}
		}
		byRoute[c.Route][c.Status] += c.N
	}
	now := e.clock.Now()
	v := RoutesView{Routes: []RouteCounts{}, Orphaned: []OrphanedRoute{}}
	for _, name := range slices.Sorted(maps.Keys(e.routes)) {
		rc := RouteCounts{Route: name, Counts: map[Status]int{}}
		for _, st := range Statuses {
			rc.Counts[st] = byRoute[name][st]
		}
		if p, ok := e.operatorPause(name, "", now); ok && p.Lane == "" {
			pv := p.View()
			rc.Paused = &pv
		}
		v.Routes = append(v.Routes, rc)
	}
	for _, name := range slices.Sorted(maps.Keys(orphans)) {
		v.Orphaned = append(v.Orphaned, OrphanedRoute{Route: name, Messages: orphans[name]})
	}
	return v, nil
}
