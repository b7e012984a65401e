package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// noCap is a lane's cap when its route sets no concurrency.
const noCap = 1 << 62

// laneCap is how many messages a lane of a route with admission a may
// have in flight as lanes.cap holds it: 0 for a kept route's (its flights
// are in memory: kept.go), else its ClaimAhead when set, else its
// Concurrency, else noCap.
func laneCap(a herald.Admission) int {
	switch {
	case isKept(a):
		return 0
	case a.ClaimAhead > 0:
		return a.ClaimAhead
	case a.Concurrency > 0:
		return a.Concurrency
	}
	return noCap
}

// SetAdmission keeps rules for the messages created and claimed from now
// on, marks the stored active messages of the gated routes as gated (and
// the others not), and rebuilds every lane's head and in-flight count
// from the messages, which repairs whatever a bug might have left wrong:
// in the lanes' table, and for the kept routes in the writer's memory.
func (s *Store) SetAdmission(ctx context.Context, rules map[string]herald.Admission) error {
	for route, a := range rules {
		if !a.Gated() {
			delete(rules, route)
		}
	}
	err := s.write(ctx, func(tx *wtx) error { return tx.setAdmission(maps.Clone(rules)) })
	if err != nil {
		return wrap("set admission", err)
	}
	kept := map[string]bool{}
	for route, a := range rules {
		kept[route] = isKept(a)
	}
	s.kept.Store(&kept)
	return nil
}

func (tx *wtx) setAdmission(rules map[string]herald.Admission) error {
	routes := append([]string{}, slices.Sorted(maps.Keys(rules))...) // [] in JSON, not null
	routesJSON, err := json.Marshal(routes)
	if err != nil {
		return err
	}
	ordered := []string{}
	for _, r := range routes {
		if rules[r].Ordered {
			ordered = append(ordered, r)
		}
	}
	orderedJSON, err := json.Marshal(ordered)
	if err != nil {
		return err
	}
	kept := []string{}
	for _, r := range routes {
		if isKept(rules[r]) {
			kept = append(kept, r)
		}
	}
	keptJSON, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	stmts := []struct {
		query string
		args  []any
	}{
		{`DELETE FROM lane_caps`, nil},
		// The active messages of routes no longer gated leave the lanes,
		// those of gated routes join them, and those of kept routes go to
		// the kept ones' (gated = 3): the QUEUED ones whose index is not
		// their route's, and the TO_RETRY and in-flight ones.
		{`UPDATE messages SET gated = ` + gatedCase("?1", "?2") + ` WHERE id IN (
				SELECT id FROM messages INDEXED BY ` + readyQueued + ` AND route IN (SELECT value FROM json_each(?1))
				UNION ALL SELECT id FROM messages INDEXED BY ` + laneQueued + `
					AND (route NOT IN (SELECT value FROM json_each(?1)) OR route IN (SELECT value FROM json_each(?2)))
				UNION ALL SELECT id FROM messages INDEXED BY ` + keptQueued + ` AND route NOT IN (SELECT value FROM json_each(?2))
				UNION ALL SELECT id FROM messages INDEXED BY messages_retry WHERE status = 'TO_RETRY'
				UNION ALL SELECT id FROM messages INDEXED BY messages_inflight WHERE ` + inFlightSQL + `)
			AND gated != 2 AND gated != ` + gatedCase("?1", "?2"),
			[]any{string(routesJSON), string(keptJSON)}},
		{`DELETE FROM lanes WHERE route NOT IN (SELECT value FROM json_each(?1))`, []any{string(routesJSON)}},
		// Then ordered marks the active messages of the ordered routes' lanes,
		// and no other: messages_target indexes them by target (an index of
		// every gated message would cost every claim and end of a flight
		// two writes more). The first statement walks the messages marked,
		// the second the active messages of the ordered routes only.
		{`UPDATE messages SET ordered = 0 WHERE id IN (
				SELECT id FROM messages INDEXED BY messages_target
					WHERE ordered = 1 AND ` + activeSQL + `
						AND (gated != 1 OR route NOT IN (SELECT value FROM json_each(?1))))`, []any{string(orderedJSON)}},
		{`UPDATE messages SET ordered = 1 WHERE id IN (` + routesActive(laneQueued, "IN") + `) AND gated = 1 AND ordered = 0`,
			[]any{string(orderedJSON)}},
	}
	for _, r := range routes {
		capacity := laneCap(rules[r])
		stmts = append(stmts, struct {
			query string
			args  []any
		}{`INSERT INTO lane_caps (route, cap) VALUES (?, ?)`, []any{r, capacity}})
	}
	stmts = append(stmts, []struct {
		query string
		args  []any
	}{
		// A lane stays parked while it is paused; the next claim parks it
		// again for its spacing or buckets.
		{`UPDATE lanes SET head_id = '', head_prio = 0, inflight = 0, ready_at = paused_until, held = 0,
			cap = (SELECT cap FROM lane_caps c WHERE c.route = lanes.route)`, nil},
		{`INSERT INTO lanes (route, lane, inflight, cap)
			SELECT route, lane, COUNT(*), (SELECT cap FROM lane_caps c WHERE c.route = m.route)
			FROM messages m INDEXED BY messages_inflight WHERE gated = 1 AND ` + inFlightSQL + `
			GROUP BY route, lane
			ON CONFLICT (route, lane) DO UPDATE SET inflight = excluded.inflight`, nil},
		// Each lane's first message: the first entry of messages_lane past
		// the lane before, one seek a lane (not a walk of every message).
		{`INSERT INTO lanes (route, lane, head_prio, head_id, cap)
			WITH RECURSIVE h(v) AS (
				SELECT (SELECT json_array(route, lane, priority, id) FROM messages INDEXED BY messages_lane
					WHERE status = 'QUEUED' AND gated = 1 ORDER BY route, lane, priority DESC, id LIMIT 1)
				UNION ALL
				SELECT (SELECT json_array(route, lane, priority, id) FROM messages INDEXED BY messages_lane
					WHERE status = 'QUEUED' AND gated = 1 AND (route, lane) > (h.v ->> 0, h.v ->> 1)
					ORDER BY route, lane, priority DESC, id LIMIT 1)
				FROM h WHERE h.v IS NOT NULL)
			SELECT v ->> 0, v ->> 1, v ->> 2, v ->> 3, (SELECT cap FROM lane_caps c WHERE c.route = v ->> 0)
			FROM h WHERE v IS NOT NULL
			ON CONFLICT (route, lane) DO UPDATE SET head_prio = excluded.head_prio, head_id = excluded.head_id`, nil},
	}...)
	for _, st := range stmts {
		if _, err := tx.conn.ExecContext(context.Background(), st.query, st.args...); err != nil {
			return err
		}
	}
	was, gatedWas, orderedWas, keptWas := tx.rules, tx.gatedJSON, tx.orderedJSON, tx.keptJSON
	tx.kept.onRollBack(func() {
		tx.rules, tx.gatedJSON, tx.orderedJSON, tx.keptJSON = was, gatedWas, orderedWas, keptWas
	})
	tx.rules = rules
	tx.gatedJSON, tx.orderedJSON, tx.keptJSON = string(routesJSON), string(orderedJSON), string(keptJSON)
	return tx.recount()
}

// The QUEUED messages of gated routes (laneQueued), of the others
// (readyQueued) and of the kept routes (keptQueued, kept.go), as
// routesActive walks them: a partial index and its terms.
const (
	laneQueued  = `messages_lane WHERE status = 'QUEUED' AND gated = 1`
	readyQueued = `messages_ready WHERE status = 'QUEUED' AND gated = 0`
	keptQueued  = `messages_kept WHERE status = 'QUEUED' AND gated = 3`
)

// routesActive returns a SELECT of the ids of the active messages, but
// for pull messages, of the routes that are (op "IN") or are not ("NOT
// IN") in the JSON array ?1: the QUEUED ones that queued holds, and the
// TO_RETRY and in-flight ones. It walks the partial indexes that hold
// them, not the table, which holds the terminal messages of the last days
// too.
func routesActive(queued, op string) string {
	routes := ` AND route ` + op + ` (SELECT value FROM json_each(?1))`
	return `SELECT id FROM messages INDEXED BY ` + queued + routes + `
		UNION ALL SELECT id FROM messages INDEXED BY messages_retry WHERE status = 'TO_RETRY'` + routes + `
		UNION ALL SELECT id FROM messages INDEXED BY messages_inflight WHERE ` + inFlightSQL + routes
}

// gated returns the gated column's value for a message of route:
// gatedKept, gatedLanes or gatedFree.
func (tx *wtx) gated(route string) int {
	if a, ok := tx.rules[route]; ok {
		if isKept(a) {
			return gatedKept
		}
		return gatedLanes
	}
	return gatedFree
}

// pause pauses lane (route, lane) until until, making its row if need be
// (a kept route's lane has none until it is paused or its circuit counts).
func (tx *wtx) pause(route, lane string, until time.Time, reason string) error {
	if _, err := tx.st.ensureLane.Exec(route, lane); err != nil {
		return err
	}
	_, err := tx.st.pauseLane.Exec(route, lane, unixms.From(until), reason)
	return err
}

// Claims look at no more than maxLaneScan lanes, lanePage at a time: a
// claim's cost stays bounded when many lanes hold messages that their
// tenants' buckets keep back.
const (
	maxLaneScan = 4096
	lanePage    = 64
)

// laneRow is a lane as a claim reads it.
type laneRow struct {
	route, lane      string
	headPrio         int64
	headID           string
	inflight         int
	nextAt, tokensAt int64
	tokens           float64
	pausedUntil      int64
	circuit          string
	cool             int64
	owner            string
}

// pickLanes returns the ids of the gated messages that their lanes (but
// the kept routes': pickKept) admit at c.Now, at most c.GatedLimit: lanes
// in the order of their first message, each admitting what its limits
// allow of the priority of the first it takes. Lanes held back by time
// (spacing, pause, an empty bucket) are parked until then, so that the
// next claims skip them; full lanes are out of lanes_ready until a slot
// frees. It updates the lanes' spacing and buckets, the tenants' and the
// routes'. cut reports that a lane left due messages of a lower priority
// that it might have admitted: the pass ends before the lanes whose first
// message comes after the first of those, which the next pass (see claim)
// takes in their place. A lane that admits nothing with time on its side
// is held (see hold), but in a later pass, which may visit a lane that
// gave the claim messages in an earlier one.
func (tx *wtx) pickLanes(c herald.Claim, later bool) (picked []string, lanes []laneTaken, cut bool, err error) {
	limit := min(c.GatedLimit, c.Limit)
	if limit <= 0 || len(tx.rules) == 0 {
		return nil, nil, false, nil
	}
	now := unixms.From(c.Now)
	if _, err := tx.st.unparkLanes.Exec(now); err != nil {
		return nil, nil, false, err
	}
	var (
		buckets          = map[bucketKey]*claimBucket{}
		afterPrio, after = int64(math.MaxInt64), "" // before every lane: no priority is this high
		stop             *keptKey                   // the first message a lane left, when one did
	)
	for scanned := 0; len(picked) < limit && scanned < maxLaneScan && stop == nil; {
		want := min(lanePage, limit-len(picked)+8) // a few more, for the lanes that admit nothing
		rows, err := tx.st.readyLanes.Query(afterPrio, after, want)
		page, err := collect(rows, err, func(sc rowScanner) (laneRow, error) {
			var l laneRow
			err := sc.Scan(&l.route, &l.lane, &l.headPrio, &l.headID, &l.inflight, &l.nextAt, &l.tokens, &l.tokensAt, &l.pausedUntil, &l.circuit, &l.cool, &l.owner)
			return l, err
		})
		if err != nil {
			return nil, nil, false, err
		}
		for _, l := range page {
			if stop != nil && stop.before(keptKey{l.headPrio, l.headID}) {
				break
			}
			scanned++
			afterPrio, after = l.headPrio, l.headID
			a, ok := tx.rules[l.route]
			if !ok || c.Holds(l.route, l.lane) {
				continue
			}
			if a.ClaimAhead > 0 && l.inflight > 0 && l.owner != c.Node {
				if tx.beats.alive(l.owner, now) {
					continue // another node dispatches it
				}
				if l.inflight, err = tx.takeOverLane(herald.LaneRef{Route: l.route, Lane: l.lane}, l.inflight); err != nil {
					return nil, nil, false, err
				}
			}
			if a.ClaimAhead > 0 {
				a.ClaimAhead = c.KeptBound(a, herald.LaneRef{Route: l.route, Lane: l.lane})
			}
			took, left, err := tx.admitLane(c.Now, a, l, limit-len(picked), buckets, !later)
			if err != nil {
				return nil, nil, false, err
			}
			if left != nil && (stop == nil || left.before(*stop)) {
				stop = left
			}
			if len(took) > 0 {
				lanes = append(lanes, laneTaken{l.route, l.lane, len(took)})
			}
			if picked = append(picked, took...); len(picked) >= limit {
				break
			}
		}
		if len(page) < want {
			break
		}
	}
	for key, b := range buckets {
		if !b.drawn {
			continue
		}
		var err error
		if key.whole {
			_, err = tx.st.saveRouteBucket.Exec(key.route, b.tokens, now)
		} else {
			_, err = tx.st.saveTenantBucket.Exec(key.route, key.tenant, b.tokens, now)
		}
		if err != nil {
			return nil, nil, false, err
		}
	}
	return picked, lanes, stop != nil, nil
}

// takeOverLane takes lane l, whose row counts inflight flights, over from
// its node, whose heartbeat lapsed: its messages in flight become orphans
// (takeOver), and the row counts the others. It returns that count.
func (tx *wtx) takeOverLane(l herald.LaneRef, inflight int) (int, error) {
	n, err := tx.takeOver(l)
	if err != nil || n == 0 {
		return inflight, err
	}
	if _, err := tx.st.laneTakenOver.Exec(l.Route, l.Lane, n); err != nil {
		return inflight, err
	}
	return max(0, inflight-n), nil
}

// laneTaken is how many messages a claim took from a lane.
type laneTaken struct {
	route, lane string
	n           int
}

// claimedFrom records in each lane what a claim by node took from it (each
// lane once: pickLanes visits a lane once a pass): its slots, its new
// first message and its owner (Admission.ClaimAhead), in one statement.
// (The lanes_dequeued trigger and laneFlights leave claims to this, which
// does once per lane what a trigger would do once per message.)
func (tx *wtx) claimedFrom(lanes []laneTaken, node string) error {
	taken := make([][3]any, len(lanes))
	for i, l := range lanes {
		taken[i] = [3]any{l.route, l.lane, l.n}
	}
	takenJSON, err := json.Marshal(taken)
	if err != nil {
		return err
	}
	_, err = tx.st.lanesClaimed.Exec(string(takenJSON), node)
	return err
}

// admitLane takes up to room messages of lane l at now, as a allows, of
// the priority of the first it takes, and records the dispatch in the
// lane; a lane held back by time is parked, and with mayHold one that
// admits nothing with time on its side is held. left is the first due
// message of a lower priority that it left when it had room for it, and
// its tenant a token, nil when none.
func (tx *wtx) admitLane(now time.Time, a herald.Admission, l laneRow, room int, buckets map[bucketKey]*claimBucket, mayHold bool) (took []string, left *keptKey, err error) {
	nowMS := unixms.From(now)
	n, park := min(room, laneCap(a)-l.inflight), int64(0)
	if l.pausedUntil > nowMS {
		park = l.pausedUntil
	}
	// The cool-down is over (or a probe never answered): one probe goes,
	// while the route still has a circuit.
	probe := l.circuit != "" && a.Circuit.Failures > 0
	if probe {
		n = min(n, 1)
	}
	if a.Spacing > 0 {
		if l.nextAt > nowMS {
			park = max(park, l.nextAt)
		}
		n = min(n, 1)
	}
	tokens := float64(a.Rate.N)
	if !a.Rate.IsZero() {
		if l.tokensAt != 0 {
			tokens = a.Rate.Refill(l.tokens, unixms.Time(l.tokensAt), now)
		}
		if tokens < 1 {
			park = max(park, unixms.From(a.Rate.NextToken(tokens, now)))
		}
		n = min(n, int(tokens))
	}
	var route *claimBucket // the route's own bucket, shared by its lanes
	if !a.RouteRate.IsZero() {
		if route, err = tx.bucket(buckets, a.RouteRate, bucketKey{route: l.route, whole: true}, now); err != nil {
			return nil, nil, err
		}
		if route.tokens < 1 {
			park = max(park, unixms.From(a.RouteRate.NextToken(route.tokens, now)))
		}
		n = min(n, int(route.tokens))
	}
	if park > 0 {
		_, err := tx.st.parkLane.Exec(l.route, l.lane, park)
		return nil, nil, err
	}
	if n <= 0 {
		return nil, nil, nil
	}
	// With a tenant bucket, messages of tenants out of tokens are passed
	// over (within a tenant, first in stays first out): look further.
	look := n
	if !a.TenantRate.IsZero() {
		look += lanePage
	}
	take := tx.st.laneTakeIDs
	if !a.TenantRate.IsZero() {
		take = tx.st.laneTake
	}
	if a.Ordered {
		take = tx.st.laneTakeOrdered
	}
	rows, qerr := take.Query(l.route, l.lane, nowMS, look)
	type queued struct {
		id, tenant string
		prio       int64
	}
	due, err := collect(rows, qerr, func(sc rowScanner) (queued, error) {
		var q queued
		err := sc.Scan(&q.id, &q.tenant, &q.prio)
		return q, err
	})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if len(took) == 0 && err == nil && mayHold {
			err = tx.hold(l, now)
		}
	}()
	var level int64 // the priority of the first taken
	for _, q := range due {
		if len(took) == n {
			break
		}
		var b *claimBucket
		if !a.TenantRate.IsZero() {
			if b, err = tx.bucket(buckets, a.TenantRate, bucketKey{route: l.route, tenant: q.tenant}, now); err != nil {
				return nil, nil, err
			}
			if b.tokens < 1 {
				continue // its tenant is out of tokens; another tenant's may go
			}
		}
		if len(took) > 0 && q.prio < level {
			// Other lanes' first messages of a higher priority go first.
			left = &keptKey{q.prio, q.id}
			break
		}
		if b != nil {
			b.tokens, b.drawn = b.tokens-1, true
		}
		if len(took) == 0 {
			level = q.prio
		}
		took = append(took, q.id)
	}
	if len(took) == 0 {
		return nil, nil, nil
	}
	if route != nil {
		route.tokens, route.drawn = route.tokens-float64(len(took)), true
	}
	nextAt, tokensAt, readyAt := l.nextAt, l.tokensAt, int64(0)
	if a.Spacing > 0 {
		nextAt = unixms.From(now.Add(a.Spacing))
		readyAt = nextAt
	}
	if !a.Rate.IsZero() {
		tokens -= float64(len(took))
		tokensAt = nowMS
		if tokens < 1 {
			readyAt = max(readyAt, unixms.From(a.Rate.NextToken(tokens, now)))
		}
	}
	if a.Timed() {
		if _, err = tx.st.laneDispatched.Exec(l.route, l.lane, nextAt, tokens, tokensAt, readyAt); err != nil {
			return nil, nil, err
		}
	}
	if probe { // no other message until the probe's answer, or the cool-down
		if _, err := tx.st.laneProbe.Exec(l.route, l.lane, nowMS+l.cool); err != nil {
			return nil, nil, err
		}
	}
	return took, left, nil
}

// ReportCircuit feeds the circuit breaker of r's lane (see herald.Store).
//
// A success on a lane with no failure counted and no circuit open, the
// usual answer, changes nothing: it is told from the read pool, without a
// write (and its commit) on every send.
func (s *Store) ReportCircuit(ctx context.Context, r herald.CircuitReport) (herald.CircuitChange, error) {
	var ch herald.CircuitChange
	if !r.Failed {
		var failures int
		var circuit string
		err := s.rs.laneCircuit.QueryRowContext(ctx, r.Route, r.Lane).Scan(&failures, &circuit)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && failures == 0 && circuit == "") {
			return ch, nil
		}
		if err != nil {
			return ch, wrap("report circuit", err)
		}
	}
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		ch, err = tx.reportCircuit(r)
		return err
	})
	return ch, wrap("report circuit", err)
}

func (tx *wtx) reportCircuit(r herald.CircuitReport) (herald.CircuitChange, error) {
	rule := tx.rules[r.Route].Circuit
	if rule.Failures == 0 {
		return herald.CircuitChange{}, nil
	}
	var (
		failures int
		circuit  string
		cool     int64
	)
	err := tx.st.laneCircuit.QueryRow(r.Route, r.Lane).Scan(&failures, &circuit, &cool)
	if errors.Is(err, sql.ErrNoRows) { // a kept route's lane has no row until it needs one
		if !r.Failed {
			return herald.CircuitChange{}, nil
		}
		if _, err = tx.st.ensureLane.Exec(r.Route, r.Lane); err != nil {
			return herald.CircuitChange{}, err
		}
	}
	if err != nil {
		return herald.CircuitChange{}, err
	}
	if !r.Failed {
		if failures == 0 && circuit == "" {
			return herald.CircuitChange{}, nil
		}
		_, err := tx.st.circuitClose.Exec(r.Route, r.Lane)
		return herald.CircuitChange{Closed: circuit != ""}, err
	}
	failures++
	switch {
	case circuit == "probing":
		cool = min(2*cool, herald.MaxCircuitCoolDown.Milliseconds())
	case circuit == "" && failures >= rule.Failures:
		cool = rule.CoolDown.Milliseconds()
	default: // counting, or open already: messages sent before it opened answer late
		_, err := tx.st.circuitCount.Exec(r.Route, r.Lane, failures, unixms.From(r.At))
		return herald.CircuitChange{Failures: failures}, err
	}
	until := unixms.From(r.At) + cool
	_, err = tx.st.circuitOpen.Exec(r.Route, r.Lane, failures, cool, until, unixms.From(r.At))
	return herald.CircuitChange{Opened: true, Until: unixms.Time(until), Failures: failures}, err
}

// holdRecheck is how long a lane that admitted nothing, with room and time
// on its side (its messages not due yet, their targets' turn not come on
// an ordered route, their tenants out of tokens), stays out of the claims'
// way, unless a message joins it or one of it ends first.
const holdRecheck = time.Second

// hold parks lane l, which admitted nothing at now, for holdRecheck.
func (tx *wtx) hold(l laneRow, now time.Time) error {
	_, err := tx.st.holdLane.Exec(l.route, l.lane, unixms.From(now.Add(holdRecheck)))
	return err
}

// claimBucket is a tenant's bucket on a route, or a route's own, during
// one claim.
type claimBucket struct {
	tokens float64 // as of the claim's time
	drawn  bool    // a token was taken: save it
}

// bucketKey names a bucket of a claim: tenant's on route (tenant_buckets),
// or, when whole, route's own (route_buckets; tenant is then "").
type bucketKey struct {
	route, tenant string
	whole         bool
}

// bucket returns the bucket key, which refills at rate, read once per
// claim.
func (tx *wtx) bucket(buckets map[bucketKey]*claimBucket, rate herald.Rate, key bucketKey, now time.Time) (*claimBucket, error) {
	if b, ok := buckets[key]; ok {
		return b, nil
	}
	b := &claimBucket{tokens: float64(rate.N)}
	var (
		tokens float64
		at     int64
		err    error
	)
	if key.whole {
		err = tx.st.routeBucket.QueryRow(key.route).Scan(&tokens, &at)
	} else {
		err = tx.st.tenantBucket.QueryRow(key.route, key.tenant).Scan(&tokens, &at)
	}
	switch {
	case err == nil:
		b.tokens = rate.Refill(tokens, unixms.Time(at), now)
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	}
	buckets[key] = b
	return b, nil
}

// Lane returns the state of route's lane, tenant's bucket on route and
// route's own bucket.
func (s *Store) Lane(ctx context.Context, route, lane, tenant string) (herald.LaneState, error) {
	st, err := s.laneState(ctx, route, lane, tenant, nil)
	if err != nil {
		return st, err
	}
	rows, err := s.rs.laneInFlight.QueryContext(ctx, route, lane)
	if st.InFlight, err = collect(rows, err, func(sc rowScanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	}); err != nil {
		return st, wrap("lane", err)
	}
	st.InFlight = s.beats.holding(st.InFlight)
	return st, nil
}

// laneState is Lane but for the ids of the lane's messages in flight. Its
// QUEUED count is queued when it is given, else counted.
func (s *Store) laneState(ctx context.Context, route, lane, tenant string, queued *int) (herald.LaneState, error) {
	st := herald.LaneState{Route: route, Lane: lane}
	var nextAt, tokensAt, paused int64
	err := s.rs.lane.QueryRowContext(ctx, route, lane).Scan(&nextAt, &st.Tokens, &tokensAt, &paused, &st.PauseReason, &st.Circuit, &st.Failures)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return st, wrap("lane", err)
	}
	st.NextAt, st.TokensAt, st.PausedUntil = unixms.Time(nextAt), unixms.Time(tokensAt), unixms.Time(paused)
	if queued != nil {
		st.Queued = *queued
	} else {
		count := s.rs.laneQueued
		if kept := s.kept.Load(); kept != nil && (*kept)[route] {
			count = s.rs.keptLaneQueued // walks every kept message: no index has them by lane
		}
		if err := count.QueryRowContext(ctx, route, lane).Scan(&st.Queued); err != nil {
			return st, wrap("lane", err)
		}
	}
	tokensAt = 0 // a bucket never drawn from has no row: full
	err = s.rs.tenantBucket.QueryRowContext(ctx, route, tenant).Scan(&st.TenantTokens, &tokensAt)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return st, wrap("lane", err)
	}
	st.TenantTokensAt = unixms.Time(tokensAt)
	tokensAt = 0
	err = s.rs.routeBucket.QueryRowContext(ctx, route).Scan(&st.RouteTokens, &tokensAt)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return st, wrap("lane", err)
	}
	st.RouteTokensAt = unixms.Time(tokensAt)
	return st, nil
}

// FirstActive returns the oldest message of route and target that is not
// terminal, or "". Only ordered routes' messages are indexed by target
// (their column ordered, set by SetAdmission and Create).
func (s *Store) FirstActive(ctx context.Context, route, target string) (string, error) {
	var id string
	err := s.rs.firstActive.QueryRowContext(ctx, route, target).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, wrap("first active", err)
}

// Lanes returns up to q.Limit lanes of gated routes (of q.Route alone,
// unless it is empty), busiest first, with their queued count, in-flight
// ids and state; with q.Tenant, the lanes holding that tenant's messages,
// counting only those.
func (s *Store) Lanes(ctx context.Context, q herald.LaneQuery) ([]herald.LaneState, error) {
	route := q.Route
	busiest, busiestArgs := s.rs.busiestLanes, []any{route, q.Limit}
	inFlight, inFlightArgs := s.rs.lanesInFlight, []any{route}
	if q.Tenant != "" {
		busiest, busiestArgs = s.rs.tenantLanes, append(busiestArgs, q.Tenant)
		inFlight, inFlightArgs = s.rs.tenantLanesInFlight, append(inFlightArgs, q.Tenant)
	}
	rows, err := busiest.QueryContext(ctx, busiestArgs...)
	type busy struct {
		route, lane string
		queued      int
	}
	found, err := collect(rows, err, func(sc rowScanner) (busy, error) {
		var b busy
		return b, sc.Scan(&b.route, &b.lane, &b.queued)
	})
	if err != nil {
		return nil, wrap("lanes", err)
	}
	out := make([]herald.LaneState, 0, len(found))
	index := make(map[herald.LaneRef]int, len(found)) // each lane's in out
	for _, b := range found {
		l, err := s.laneState(ctx, b.route, b.lane, "", &b.queued)
		if err != nil {
			return nil, err
		}
		index[herald.LaneRef{Route: b.route, Lane: b.lane}] = len(out)
		out = append(out, l)
	}
	if len(out) == 0 {
		return out, nil
	}
	// The ids in flight of all those lanes, from one walk of the messages
	// in flight rather than one a lane.
	type flight struct {
		lane herald.LaneRef
		id   string
	}
	rows, err = inFlight.QueryContext(ctx, inFlightArgs...)
	flights, err := collect(rows, err, func(sc rowScanner) (flight, error) {
		var f flight
		return f, sc.Scan(&f.lane.Route, &f.lane.Lane, &f.id)
	})
	if err != nil {
		return nil, wrap("lanes", err)
	}
	for _, f := range flights {
		if i, ok := index[f.lane]; ok {
			out[i].InFlight = append(out[i].InFlight, f.id)
		}
	}
	for i := range out {
		out[i].InFlight = s.beats.holding(out[i].InFlight)
	}
	return out, nil
}
