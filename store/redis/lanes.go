package redis

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// Lanes: the messages of a gated route wait in their lane, R|L, instead of
// in ready, and a claim takes them through the lanes that admit one (see
// lua/lib.lua and lua/claim.lua). Each lane keeps its queue, the ids it
// has in flight, and its state (next dispatch under its spacing, its
// bucket, its pause, its circuit) in keys of its own, which the scripts
// that move its messages update in the same call. The rules live in the
// store too, in adm, so that every node and every script sees the same
// ones. The active messages of an ordered route are indexed by target as
// well (tgt), so that a claim sees whether an older message of the target
// holds one back, whatever its lane.

// SetAdmission keeps rules as the gated routes' admission, and applies
// them to the messages stored: see lua/admission.lua, which also counts
// the lanes' messages in flight afresh, in the same call. Rules equal to
// those kept change nothing but that count, which recount makes in steps.
func (s *Store) SetAdmission(ctx context.Context, rules map[string]herald.Admission) error {
	args := make([]any, 0, 2*len(rules)+1)
	for _, route := range slices.Sorted(maps.Keys(rules)) {
		a := rules[route]
		if err := a.Validate(); err != nil {
			return fmt.Errorf("redis set admission: route %q: %w", route, err)
		}
		args = append(args, esc(route), admission(a))
	}
	res, err := s.eval(ctx, admissionScript, append(args, s.laneClock)...)
	if err == nil && res == int64(0) && len(rules) > 0 {
		err = s.recount(ctx, args)
	}
	return wrap(ctx, "set admission", err)
}

// recountStep is how many lanes, or messages in flight, a step of recount
// looks at.
const recountStep = 500

// recount counts the messages in flight of the gated routes' lanes afresh
// from the messages, as SetAdmission promises, when the rules did not
// change (admission.lua does when they do). It walks the lanes of each
// route (every other of args, escaped), and then the messages in flight,
// in steps of lua/recount.lua: each is a short call, so that a store with
// many messages in flight is not held up, and needs no lock, as each
// decides by the messages as they are then.
func (s *Store) recount(ctx context.Context, args []any) error {
	walk := func(what, route string) error {
		for cursor := "0"; ; {
			res, err := s.eval(ctx, recountScript, what, route, cursor, recountStep)
			if err != nil {
				return err
			}
			if cursor = str(res); cursor == "0" {
				return nil
			}
		}
	}
	for i := 0; i < len(args); i += 2 {
		if err := walk("lanes", args[i].(string)); err != nil {
			return err
		}
	}
	return walk("flying", "")
}

// admission returns a as adm keeps it (see lua/lib.lua): its limits, then,
// when it orders its lanes, has a circuit, a route bucket or a ClaimAhead,
// those, then the route bucket, then the ClaimAhead when it has one; a
// rule without them stays as the versions before wrote it, and a version
// before, which reads no ClaimAhead, keeps the concurrency in its claims.
func admission(a herald.Admission) string {
	owned := a.ClaimAhead > 0
	v := fmt.Sprintf("%d|%d|%d|%d|%d|%d", ms(a.Spacing), a.Concurrency, a.Rate.N, ms(a.Rate.Per), a.TenantRate.N, ms(a.TenantRate.Per))
	if a.Ordered || a.Circuit.Failures > 0 || !a.RouteRate.IsZero() || owned {
		ordered := 0
		if a.Ordered {
			ordered = 1
		}
		v += fmt.Sprintf("|%d|%d|%d", ordered, a.Circuit.Failures, ms(a.Circuit.CoolDown))
	}
	if !a.RouteRate.IsZero() || owned {
		v += fmt.Sprintf("|%d|%d", a.RouteRate.N, ms(a.RouteRate.Per))
	}
	if owned {
		v += fmt.Sprintf("|%d", a.ClaimAhead)
	}
	return v
}

// ms returns d in milliseconds, the store's precision, rounded up: a
// limit never rounds away.
func ms(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// Lane returns the state of route's lane, with tenant's bucket on route
// and route's own bucket.
func (s *Store) Lane(ctx context.Context, route, lane, tenant string) (herald.LaneState, error) {
	states, err := s.laneStates(ctx, []herald.LaneState{{Route: route, Lane: lane}}, &tenant)
	if err != nil {
		return herald.LaneState{}, wrap(ctx, "lane", err)
	}
	return states[0], nil
}

// Lanes returns up to q.Limit lanes that hold messages, of q.Route or,
// when it is "", of every gated route: by queued plus in flight, most
// first, then by route and lane; with q.Tenant, those holding that
// tenant's messages, counting them alone (see ownLanes).
func (s *Store) Lanes(ctx context.Context, q herald.LaneQuery) ([]herald.LaneState, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	routes := []string{esc(q.Route)}
	if q.Route == "" {
		var err error
		if routes, err = s.client.HKeys(ctx, s.key("adm")).Result(); err != nil {
			return nil, wrap(ctx, "lanes", err)
		}
	}
	keys := make([]string, len(routes))
	for i, r := range routes {
		keys[i] = s.key("ln:" + r)
	}
	cmds, err := s.pipelined(ctx, keys, func(p goredis.Pipeliner, key string) { p.SMembers(ctx, key) })
	if err != nil {
		return nil, wrap(ctx, "lanes", err)
	}
	var lanes []herald.LaneState
	for i, c := range cmds {
		for _, lane := range c.(*goredis.StringSliceCmd).Val() {
			lanes = append(lanes, herald.LaneState{Route: unesc(routes[i]), Lane: unesc(lane)})
		}
	}
	if lanes, err = s.laneStates(ctx, lanes, nil); err != nil {
		return nil, wrap(ctx, "lanes", err)
	}
	if q.Tenant != "" {
		if lanes, err = s.ownLanes(ctx, lanes, routes, q.Tenant); err != nil {
			return nil, wrap(ctx, "lanes", err)
		}
	}
	slices.SortFunc(lanes, func(a, b herald.LaneState) int {
		return cmp.Or(cmp.Compare(b.Queued+len(b.InFlight), a.Queued+len(a.InFlight)),
			cmp.Compare(a.Route, b.Route), cmp.Compare(a.Lane, b.Lane))
	})
	return lanes[:min(q.Limit, len(lanes))], nil
}

// laneStates fills in the state of each lane of lanes (Route and Lane
// set), and, when tenant is not nil, that tenant's bucket on its route
// and the route's own bucket, in one round trip.
func (s *Store) laneStates(ctx context.Context, lanes []herald.LaneState, tenant *string) ([]herald.LaneState, error) {
	if len(lanes) == 0 {
		return lanes, nil
	}
	type laneCmds struct {
		lq, ld *goredis.IntCmd
		lin    *goredis.StringSliceCmd
		st, tb *goredis.SliceCmd
		rb     *goredis.SliceCmd
	}
	cmds := make([]laneCmds, len(lanes))
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, l := range lanes {
			rl, c := esc(l.Route)+"|"+esc(l.Lane), &cmds[i]
			c.lq, c.ld = p.ZCard(ctx, s.key("lq:"+rl)), p.ZCard(ctx, s.key("ld:"+rl))
			c.lin = p.ZRange(ctx, s.key("lin:"+rl), 0, -1)
			c.st = p.HMGet(ctx, s.key("lst:"+rl), "next", "tok", "tat", "pause", "why", "circ", "fails")
			if tenant != nil {
				c.tb = p.HMGet(ctx, s.key("tb:"+esc(l.Route)+"|"+esc(*tenant)), "tok", "tat")
				c.rb = p.HMGet(ctx, s.key("tb:"+esc(l.Route)), "tok", "tat")
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, c := range cmds {
		l, st := &lanes[i], c.st.Val()
		l.Queued, l.InFlight = int(c.lq.Val()+c.ld.Val()), c.lin.Val()
		l.NextAt, l.Tokens, l.TokensAt = msField(st[0]), floatField(st[1]), msField(st[2])
		l.PausedUntil, l.PauseReason = msField(st[3]), str(st[4])
		l.Circuit = str(st[5])
		l.Failures, _ = strconv.Atoi(str(st[6]))
		if c.tb != nil {
			tb := c.tb.Val()
			l.TenantTokens, l.TenantTokensAt = floatField(tb[0]), msField(tb[1])
		}
		if c.rb != nil {
			rb := c.rb.Val()
			l.RouteTokens, l.RouteTokensAt = floatField(rb[0]), msField(rb[1])
		}
	}
	return lanes, nil
}

// msField returns the time of a hash field of unix milliseconds: zero
// when it is absent or 0.
func msField(v any) time.Time {
	n, _ := strconv.ParseInt(str(v), 10, 64)
	return unixms.Time(n)
}

// floatField returns a hash field's number: 0 when it is absent.
func floatField(v any) float64 {
	f, _ := strconv.ParseFloat(str(v), 64)
	return f
}
