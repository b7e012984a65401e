package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// testLanes checks the admission of gated routes' lanes in Claim, and
// SetAdmission, Lane and Lanes.
func testLanes(t *testing.T, open opener) {
	t.Run("Concurrency", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Concurrency: 2}})
		msgs := h.createN("g", "dcu-1", 5)
		got := h.claimGated(t0, 10)
		if want := ids(msgs[:2]); !slices.Equal(ids(got), want) {
			t.Fatalf("first claim = %v, want the lane's first two %v", ids(got), want)
		}
		if got := h.claimGated(t0, 10); len(got) != 0 {
			t.Fatalf("claim with 2 of 2 in flight = %v, want none", ids(got))
		}
		// A move between in-flight stages keeps the slot.
		h.transition(herald.Transition{ID: msgs[0].ID, From: herald.StatusSentToNS, To: herald.StatusDeliveredToNS, At: t0})
		if got := h.claimGated(t0, 10); len(got) != 0 {
			t.Fatalf("claim after SENT_TO_NS -> DELIVERED_TO_NS = %v, want none (the slot is held)", ids(got))
		}
		// Terminal frees a slot; so does TO_RETRY.
		h.transition(herald.Transition{ID: msgs[0].ID, From: herald.StatusDeliveredToNS, To: herald.StatusDeliverySuccessful, At: t0})
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{msgs[2].ID}) {
			t.Fatalf("claim after one ended = %v, want %s", ids(got), msgs[2].ID)
		}
		h.transition(herald.Transition{ID: msgs[1].ID, From: herald.StatusSentToNS, To: herald.StatusToRetry, At: t0, DueAt: at(time.Hour)})
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{msgs[3].ID}) {
			t.Fatalf("claim after one went TO_RETRY = %v, want %s", ids(got), msgs[3].ID)
		}
		lane := h.lane("g", "dcu-1", "acme")
		if lane.Queued != 1 || !sameSet(lane.InFlight, []string{msgs[2].ID, msgs[3].ID}) {
			t.Errorf("Lane = queued %d, in flight %v; want 1 and %v", lane.Queued, lane.InFlight, []string{msgs[2].ID, msgs[3].ID})
		}
	})

	t.Run("NeverOverCapConcurrently", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Concurrency: 3}})
		h.createN("g", "dcu-1", 40)
		results := make(chan []*herald.Message, 8)
		for range 8 {
			go func() {
				got, _ := h.s.Claim(h.ctx, herald.Claim{Now: t0, Limit: 10, GatedLimit: 10, DefaultAccept: 20 * time.Second})
				results <- got
			}()
		}
		n := 0
		for range 8 {
			n += len(<-results)
		}
		if n != 3 {
			t.Errorf("8 concurrent claims took %d messages of a lane capped at 3", n)
		}
	})

	// ClaimAhead: one node at a time takes a lane's messages, up to its
	// concurrency and the claim's KeptAhead for the route in flight, never
	// more than ClaimAhead; the lane goes to whichever node claims once
	// none of them is in flight; other lanes stay free to every node.
	t.Run("ClaimAhead", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Concurrency: 2, ClaimAhead: 4}})
		a := h.createN("g", "dcu-1", 6)
		claim := func(node string, limit int) []*herald.Message {
			return h.claimKept(node, limit, map[string]int{"g": 10}, nil)
		}
		if got := claim("n1", 3); !slices.Equal(ids(got), ids(a[:3])) {
			t.Fatalf("n1's claim = %v, want the lane's first three %v (beyond its concurrency)", ids(got), ids(a[:3]))
		}
		b := h.createN("g", "dcu-2", 1)
		if got := claim("n2", 10); !slices.Equal(ids(got), ids(b)) {
			t.Fatalf("n2's claim = %v, want only %v: n1 dispatches dcu-1", ids(got), ids(b))
		}
		if got := claim("n1", 10); !slices.Equal(ids(got), ids(a[3:4])) {
			t.Fatalf("n1's second claim = %v, want %v: ClaimAhead 4 in flight", ids(got), ids(a[3:4]))
		}
		for _, m := range a[:3] {
			h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0})
		}
		if got := claim("n2", 10); len(got) != 0 {
			t.Fatalf("n2's claim with one of n1's in flight = %v, want none", ids(got))
		}
		h.transition(herald.Transition{ID: a[3].ID, From: herald.StatusSentToNS, To: herald.StatusToRetry, At: t0, DueAt: at(time.Hour)})
		if got := claim("n2", 10); !slices.Equal(ids(got), ids(a[4:])) {
			t.Fatalf("n2's claim with none in flight = %v, want %v", ids(got), ids(a[4:]))
		}
		if got := claim("n1", 10); len(got) != 0 {
			t.Fatalf("n1's claim after n2 took the lane = %v, want none", ids(got))
		}
	})

	// A lane a node keeps, held back by its concurrency: a claim without
	// KeptAhead for its route takes no more than the concurrency, and the
	// others stay QUEUED, no attempt spent, the lane's state naming the two
	// in flight (what explain gives as lane_concurrency's blocking ids).
	t.Run("HeldBackByItsLane", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Concurrency: 2, ClaimAhead: 514}})
		msgs := h.createN("g", "dcu-1", 8)
		got := h.claimKept("n1", 100, nil, nil)
		if !slices.Equal(ids(got), ids(msgs[:2])) {
			t.Fatalf("claim = %v, want the concurrency's two %v", ids(got), ids(msgs[:2]))
		}
		for _, m := range msgs[2:] {
			if got := h.get(m.ID); got.Status != herald.StatusQueued || got.Attempt != 0 {
				t.Errorf("%s after the claim: %s attempt %d, want QUEUED attempt 0", m.ID, got.Status, got.Attempt)
			}
		}
		if lane := h.lane("g", "dcu-1", "acme"); lane.Queued != 6 || !sameSet(lane.InFlight, ids(msgs[:2])) {
			t.Errorf("Lane = queued %d, in flight %v; want 6 and %v", lane.Queued, lane.InFlight, ids(msgs[:2]))
		}
		if got := h.claimKept("n1", 100, nil, nil); len(got) != 0 {
			t.Fatalf("claim with 2 of 2 in flight = %v, want none", ids(got))
		}
	})

	// KeptAhead raises a lane's bound above its concurrency, by route: a
	// route it does not name is held to its concurrency; never above
	// ClaimAhead.
	t.Run("KeptAhead", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{
			"g": {Concurrency: 2, ClaimAhead: 6},
			"h": {Concurrency: 1, ClaimAhead: 6},
		})
		a := h.createN("g", "dcu-1", 8)
		b := h.createN("h", "dcu-1", 4)
		if got := h.claimKept("n1", 20, map[string]int{"g": 1}, nil); !slices.Equal(ids(got), append(ids(a[:3]), ids(b[:1])...)) {
			t.Fatalf("claim with KeptAhead g: 1 = %v, want g's first three %v and h's concurrency's one %v", ids(got), ids(a[:3]), ids(b[:1]))
		}
		if got := h.claimKept("n1", 20, map[string]int{"g": 100}, nil); !slices.Equal(ids(got), ids(a[3:6])) {
			t.Fatalf("claim with KeptAhead g: 100 = %v, want up to ClaimAhead 6: %v", ids(got), ids(a[3:6]))
		}
	})

	// KeptSent raises a lane's bound by the messages the node sent whose
	// answers are on their way, that lane's only, and never past
	// ClaimAhead.
	t.Run("KeptSent", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Concurrency: 1, ClaimAhead: 6}})
		a := h.createN("g", "dcu-1", 8)
		b := h.createN("g", "dcu-2", 4)
		ahead := map[string]int{"g": 1}
		if got := h.claimKept("n1", 20, ahead, nil); !slices.Equal(ids(got), append(ids(a[:2]), ids(b[:2])...)) {
			t.Fatalf("claim with KeptAhead 1 = %v, want two of each lane: %v %v", ids(got), ids(a[:2]), ids(b[:2]))
		}
		sent := map[herald.LaneRef]int{{Route: "g", Lane: "dcu-1"}: 2, {Route: "g", Lane: "dcu-9"}: 5}
		if got := h.claimKept("n1", 20, ahead, sent); !slices.Equal(ids(got), ids(a[2:4])) {
			t.Fatalf("claim with 2 of dcu-1 sent = %v, want dcu-1's next two %v and none of dcu-2", ids(got), ids(a[2:4]))
		}
		sent[herald.LaneRef{Route: "g", Lane: "dcu-1"}] = 10
		if got := h.claimKept("n1", 20, ahead, sent); !slices.Equal(ids(got), ids(a[4:6])) {
			t.Fatalf("claim with 10 of dcu-1 sent = %v, want up to ClaimAhead 6: %v", ids(got), ids(a[4:6]))
		}
	})

	// A node whose heartbeat lapsed gives its lanes up: another node's
	// claim takes the lane over at once, the lapsed node's messages in
	// flight hold none of its slots (nor does their end free one), and
	// its QUEUED messages go with no attempt spent. Before it lapses, the
	// lane stays the first node's.
	eachLaneKind(t, "TakenOverFromALapsedNode", func(t *testing.T, a herald.Admission) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": a})
		msgs := make([]*herald.Message, 8)
		for i := range msgs {
			m := newMessage("g")
			m.Lane, m.Target = "dcu-1", fmt.Sprintf("meter-%d", i) // ordered: each its own target's turn
			msgs[i] = h.create(m)
		}
		h.beat("n1", t0, 5*time.Second)
		first := h.claimKeptAt(t0, "n1", 100, nil)
		if !slices.Equal(ids(first), ids(msgs[:2])) {
			t.Fatalf("n1's claim = %v, want the concurrency's two %v", ids(first), ids(msgs[:2]))
		}
		h.beat("n2", at(time.Second), time.Hour)
		if got := h.claimKeptAt(at(time.Second), "n2", 100, nil); len(got) != 0 {
			t.Fatalf("n2's claim while n1's heartbeat lasts = %v, want none", ids(got))
		}
		took := h.claimKeptAt(at(6*time.Second), "n2", 100, nil)
		if !slices.Equal(ids(took), ids(msgs[2:4])) {
			t.Fatalf("n2's claim once n1's heartbeat lapsed = %v, want the next two %v", ids(took), ids(msgs[2:4]))
		}
		for _, m := range took {
			if m.Attempt != 1 {
				t.Errorf("%s taken over at attempt %d, want 1: no attempt spent while it waited", m.ID, m.Attempt)
			}
		}
		if lane := h.lane("g", "dcu-1", "acme"); !sameSet(lane.InFlight, ids(msgs[2:4])) {
			t.Errorf("Lane in flight = %v, want n2's %v: n1's hold no slot", lane.InFlight, ids(msgs[2:4]))
		}
		for _, m := range first { // n1's flights time out: no slot of n2's frees
			h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusToRetry, At: at(25 * time.Second), DueAt: at(time.Hour)})
		}
		if got := h.claimKeptAt(at(25*time.Second), "n2", 100, nil); len(got) != 0 {
			t.Fatalf("n2's claim after n1's flights ended = %v, want none: n2 has its two in flight", ids(got))
		}
		h.transition(herald.Transition{ID: took[0].ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: at(26 * time.Second)})
		if got := h.claimKeptAt(at(26*time.Second), "n2", 100, nil); !slices.Equal(ids(got), ids(msgs[4:5])) {
			t.Fatalf("n2's claim after one of its own ended = %v, want %v", ids(got), ids(msgs[4:5]))
		}
	})

	t.Run("Spacing", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Spacing: 2 * time.Second}})
		msgs := h.createN("g", "net-1", 3)
		var claimedAt []time.Duration
		for ms := time.Duration(0); ms <= 5*time.Second; ms += 250 * time.Millisecond {
			for range h.claimGated(at(ms), 10) {
				claimedAt = append(claimedAt, ms)
			}
		}
		if want := []time.Duration{0, 2 * time.Second, 4 * time.Second}; !slices.Equal(claimedAt, want) {
			t.Errorf("dispatches at %v, want %v", claimedAt, want)
		}
		if lane := h.lane("g", "net-1", ""); !sameTime(lane.NextAt, at(6*time.Second)) {
			t.Errorf("NextAt = %v, want t0+6s", lane.NextAt)
		}
		_ = msgs
	})

	// A spacing taken away (SetAdmission, as at a restart with a new
	// configuration) no longer holds the lane back.
	t.Run("SpacingRemoved", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Spacing: time.Hour}})
		msgs := h.createN("g", "net-1", 3)
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), ids(msgs[:1])) {
			t.Fatalf("claim = %v, want %v", ids(got), ids(msgs[:1]))
		}
		h.admit(map[string]herald.Admission{"g": {Concurrency: 10}})
		if got := h.claimGated(at(time.Second), 10); !slices.Equal(ids(got), ids(msgs[1:])) {
			t.Errorf("claim once the route has no spacing = %v, want %v", ids(got), ids(msgs[1:]))
		}
	})

	t.Run("RateBucket", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Rate: herald.Rate{N: 3, Per: time.Minute}}})
		h.createN("g", "gw-1", 10)
		if got := h.claimGated(t0, 10); len(got) != 3 {
			t.Fatalf("first claim took %d, want the burst of 3", len(got))
		}
		if got := h.claimGated(at(19*time.Second), 10); len(got) != 0 {
			t.Fatalf("claim at +19s took %d, want 0 (one token every 20s)", len(got))
		}
		if got := h.claimGated(at(20*time.Second), 10); len(got) != 1 {
			t.Fatalf("claim at +20s took %d, want 1", len(got))
		}
		if got := h.claimGated(at(80*time.Second), 10); len(got) != 3 {
			t.Fatalf("claim at +80s took %d, want 3 (refilled to the burst, not beyond)", len(got))
		}
	})

	t.Run("TenantRateAcrossLanes", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {TenantRate: herald.Rate{N: 3, Per: time.Minute}}})
		h.createN("g", "gw-1", 3)
		h.createN("g", "gw-2", 3)
		other := newMessage("g")
		other.Tenant, other.Lane = "globex", "gw-2"
		h.create(other)
		got := h.claimGated(t0, 10)
		byTenant := map[string]int{}
		for _, m := range got {
			byTenant[m.Tenant]++
		}
		if byTenant["acme"] != 3 || byTenant["globex"] != 1 {
			t.Errorf("claimed by tenant %v, want acme 3 (its bucket, across both lanes) and globex 1", byTenant)
		}
		if got := h.claimGated(at(20*time.Second), 10); len(got) != 1 {
			t.Errorf("claim at +20s took %d, want 1", len(got))
		}
	})

	t.Run("RouteRateAcrossLanesAndTenants", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {RouteRate: herald.Rate{N: 3, Per: time.Minute}}})
		h.createN("g", "gw-1", 3)
		h.createN("g", "gw-2", 3)
		for _, lane := range []string{"gw-1", "gw-2"} {
			for range 2 {
				other := newMessage("g")
				other.Tenant, other.Lane = "globex", lane
				h.create(other)
			}
		}
		if got := h.claimGated(t0, 10); len(got) != 3 {
			t.Fatalf("first claim took %d, want the route's burst of 3 across its lanes and tenants", len(got))
		}
		if got := h.claimGated(at(19*time.Second), 10); len(got) != 0 {
			t.Fatalf("claim at +19s took %d, want 0 (one token every 20s)", len(got))
		}
		if got := h.claimGated(at(20*time.Second), 10); len(got) != 1 {
			t.Fatalf("claim at +20s took %d, want 1", len(got))
		}
		if lane := h.lane("g", "gw-1", "acme"); lane.RouteTokens >= 1 || !sameTime(lane.RouteTokensAt, at(20*time.Second)) {
			t.Errorf("Lane = route tokens %v at %v, want under 1 at t0+20s", lane.RouteTokens, lane.RouteTokensAt)
		}
	})

	eachKeeper(t, "FloodedLaneKeepsNoneBack", func(t *testing.T, keep keeper) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": keep(herald.Admission{Concurrency: 1})})
		h.createN("g", "A", 2000)
		b := h.createN("g", "B", 1)[0]
		first := h.claimGated(t0, 10)
		if !slices.Contains(ids(first), b.ID) || len(first) != 2 {
			t.Errorf("claim = %d messages %v, want A's first and B's %s", len(first), ids(first), b.ID)
		}
	})

	t.Run("OrderAcrossLanes", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Concurrency: 1}})
		a := h.createN("g", "A", 1)[0]
		b := h.createN("g", "B", 1)[0]
		c := newMessage("g")
		c.Lane, c.Priority = "C", 5
		h.create(c)
		got := h.claimGated(t0, 2)
		if want := []string{c.ID, a.ID}; !slices.Equal(ids(got), want) {
			t.Errorf("claim of 2 = %v, want the higher priority then the older: %v", ids(got), want)
		}
		if got := h.claimGated(t0, 2); !slices.Equal(ids(got), []string{b.ID}) {
			t.Errorf("next claim = %v, want %s", ids(got), b.ID)
		}
	})

	t.Run("PriorityWithinLane", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Concurrency: 1}})
		low := h.createN("g", "A", 1)[0]
		high := newMessage("g")
		high.Lane, high.Priority = "A", 3
		h.create(high)
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{high.ID}) {
			t.Errorf("claim = %v, want the higher priority %s before %s", ids(got), high.ID, low.ID)
		}
	})

	// A lane gives its messages of a lower priority only after the other
	// lanes' first messages of a higher one, whether the claim's limit or
	// the route's bucket is what runs short.
	lowerAfterOtherLanes := func(t *testing.T, a herald.Admission, limit int, want func(bLow, bHigh, aHigh string) []string) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": a})
		bLow := h.createN("g", "B", 1)[0]
		bHigh, aHigh := newMessage("g"), newMessage("g")
		bHigh.Lane, bHigh.Priority = "B", 1
		aHigh.Lane, aHigh.Priority = "A", 1
		h.create(bHigh)
		h.create(aHigh)
		if got, want := h.claimGated(t0, limit), want(bLow.ID, bHigh.ID, aHigh.ID); !slices.Equal(ids(got), want) {
			t.Errorf("claim of %d = %v, want %v: B's priority 0 %s after both lanes' priority 1", limit, ids(got), want, bLow.ID)
		}
	}
	eachKeeper(t, "LowerPriorityAfterOtherLanes", func(t *testing.T, keep keeper) {
		lowerAfterOtherLanes(t, keep(herald.Admission{Concurrency: 5}), 2, func(_, bHigh, aHigh string) []string {
			return []string{bHigh, aHigh}
		})
	})
	t.Run("LowerPriorityAfterOtherLanesOnRouteRate", func(t *testing.T) {
		lowerAfterOtherLanes(t, herald.Admission{RouteRate: herald.Rate{N: 2, Per: time.Minute}}, 10, func(_, bHigh, aHigh string) []string {
			return []string{bHigh, aHigh}
		})
	})
	eachKeeper(t, "LowerPriorityInTheSameClaim", func(t *testing.T, keep keeper) {
		lowerAfterOtherLanes(t, keep(herald.Admission{Concurrency: 5}), 10, func(bLow, bHigh, aHigh string) []string {
			return []string{bHigh, aHigh, bLow}
		})
	})

	// A lane that gave a claim its first priority is not kept back by the
	// same claim when its next message's tenant is out of tokens: the
	// message goes once the tenant has a token again.
	t.Run("LowerPriorityGoesWithItsTenantsNextToken", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {TenantRate: herald.Rate{N: 1, Per: 100 * time.Millisecond}}})
		high, low := newMessage("g"), newMessage("g")
		high.Lane, high.Priority = "A", 1
		low.Lane = "A"
		h.create(high)
		h.create(low)
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{high.ID}) {
			t.Fatalf("claim at t0 = %v, want %s alone (the tenant's one token)", ids(got), high.ID)
		}
		if got := h.claimGated(at(200*time.Millisecond), 10); !slices.Equal(ids(got), []string{low.ID}) {
			t.Errorf("claim at t0+200ms, the tenant's token back = %v, want %s", ids(got), low.ID)
		}
	})
	// The same when another lane spends the tenant's last token after the
	// lane left its lower priority for that lane's higher one.
	t.Run("LowerPriorityGoesWhenAnotherLaneSpentTheToken", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {TenantRate: herald.Rate{N: 2, Per: 100 * time.Millisecond}}})
		bHigh, bLow, aHigh := newMessage("g"), newMessage("g"), newMessage("g")
		bHigh.Lane, bHigh.Priority = "B", 1
		bLow.Lane = "B"
		aHigh.Lane, aHigh.Priority = "A", 1
		h.create(bHigh)
		h.create(bLow)
		h.create(aHigh)
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{bHigh.ID, aHigh.ID}) {
			t.Fatalf("claim at t0 = %v, want the priority 1 %v (the tenant's two tokens)", ids(got), []string{bHigh.ID, aHigh.ID})
		}
		if got := h.claimGated(at(60*time.Millisecond), 10); !slices.Equal(ids(got), []string{bLow.ID}) {
			t.Errorf("claim at t0+60ms, a token back = %v, want %s", ids(got), bLow.ID)
		}
	})

	t.Run("GatedLimit", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Concurrency: 10}})
		gated := h.createN("g", "A", 3)
		free := h.create(newMessage("free"))
		got, err := h.s.Claim(h.ctx, herald.Claim{Now: t0, Limit: 10, DefaultAccept: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), []string{free.ID}) {
			t.Errorf("claim with GatedLimit 0 = %v, want only the ungated %s", ids(got), free.ID)
		}
		got, err = h.s.Claim(h.ctx, herald.Claim{Now: t0, Limit: 10, GatedLimit: 2, DefaultAccept: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), ids(gated[:2])) {
			t.Errorf("claim with GatedLimit 2 = %v, want %v", ids(got), ids(gated[:2]))
		}
	})

	eachKeeper(t, "PauseAndUndoAttempt", func(t *testing.T, keep keeper) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": keep(herald.Admission{Concurrency: 5})})
		msgs := h.createN("g", "A", 2)
		first := h.claimGated(t0, 1)[0]
		h.transition(herald.Transition{ID: first.ID, From: herald.StatusSentToNS, To: herald.StatusToRetry, Lease: first.Lease,
			At: t0, DueAt: at(30 * time.Second), Reason: "backpressure", UndoAttempt: true,
			PauseUntil: at(30 * time.Second), PauseReason: "backpressure"})
		if m := h.get(first.ID); m.Attempt != 0 || m.Status != herald.StatusToRetry {
			t.Errorf("after a backpressure: %s attempt %d, want TO_RETRY attempt 0", m.Status, m.Attempt)
		}
		if got := h.claimGated(at(29*time.Second), 10); len(got) != 0 {
			t.Errorf("claim of a paused lane = %v, want none", ids(got))
		}
		lane := h.lane("g", "A", "acme")
		if !sameTime(lane.PausedUntil, at(30*time.Second)) || lane.PauseReason != "backpressure" {
			t.Errorf("Lane paused until %v for %q, want t0+30s for backpressure", lane.PausedUntil, lane.PauseReason)
		}
		if _, err := h.s.Release(h.ctx, at(30*time.Second), 10); err != nil {
			t.Fatal(err)
		}
		got := h.claimGated(at(30*time.Second), 10)
		if want := ids(msgs); !slices.Equal(ids(got), want) {
			t.Errorf("claim when the pause ends = %v, want %v (the paused message first)", ids(got), want)
		}
	})

	eachKeeper(t, "AppliesToStoredMessages", func(t *testing.T, keep keeper) {
		h := open(t)
		h.admit(map[string]herald.Admission{})
		msgs := h.createN("g", "A", 4)
		h.walk(msgs[0].ID, t0, herald.StatusQueued, herald.StatusSentToNS) // in flight before the rules came
		h.admit(map[string]herald.Admission{"g": keep(herald.Admission{Concurrency: 2})})
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{msgs[1].ID}) {
			t.Errorf("claim = %v, want only %s: the one in flight counts", ids(got), msgs[1].ID)
		}
		// Rules that go away ungate the route.
		h.admit(map[string]herald.Admission{})
		got, err := h.s.Claim(h.ctx, herald.Claim{Now: t0, Limit: 10, DefaultAccept: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), ids(msgs[2:])) {
			t.Errorf("claim after the rules went = %v, want %v", ids(got), ids(msgs[2:]))
		}
	})

	// A route's concurrency kept by the claims, then by the dispatching
	// node (ClaimAhead), then by the claims again: the messages in flight
	// count across each change.
	t.Run("KeeperChanges", func(t *testing.T) {
		h := open(t)
		byClaims, byNode := herald.Admission{Concurrency: 2}, herald.Admission{Concurrency: 2, ClaimAhead: 2}
		h.admit(map[string]herald.Admission{"g": byClaims})
		msgs := h.createN("g", "A", 6)
		expect := func(when string, want []*herald.Message) {
			t.Helper()
			if got := h.claimGated(t0, 10); !slices.Equal(ids(got), ids(want)) {
				t.Fatalf("claim %s = %v, want %v", when, ids(got), ids(want))
			}
		}
		expect("by the claims", msgs[:2])
		h.admit(map[string]herald.Admission{"g": byNode})
		expect("with ClaimAhead and 2 in flight", nil)
		h.walk(msgs[0].ID, t0, herald.StatusSentToNS, herald.StatusDeliverySuccessful)
		expect("with ClaimAhead after one ended", msgs[2:3])
		h.admit(map[string]herald.Admission{"g": byClaims})
		expect("without ClaimAhead and 2 in flight", nil)
		h.walk(msgs[1].ID, t0, herald.StatusSentToNS, herald.StatusToRetry)
		expect("without ClaimAhead after one ended", msgs[3:4])
	})

	// A lane that node n1 kept, then the claims, when n2 claimed a message
	// of it, then a node again: n1 does not take it while n2's message is
	// in flight.
	t.Run("KeeperChangesKeepOneNode", func(t *testing.T) {
		h := open(t)
		byNode, byClaims := herald.Admission{Concurrency: 2, ClaimAhead: 4}, herald.Admission{Concurrency: 2}
		h.admit(map[string]herald.Admission{"g": byNode})
		msgs := h.createN("g", "A", 6)
		if got := h.claimAs("n1", 1); !slices.Equal(ids(got), ids(msgs[:1])) {
			t.Fatalf("n1's claim = %v, want %v", ids(got), ids(msgs[:1]))
		}
		h.walk(msgs[0].ID, t0, herald.StatusSentToNS, herald.StatusDeliverySuccessful)
		h.admit(map[string]herald.Admission{"g": byClaims})
		if got := h.claimAs("n2", 1); !slices.Equal(ids(got), ids(msgs[1:2])) {
			t.Fatalf("n2's claim = %v, want %v", ids(got), ids(msgs[1:2]))
		}
		h.admit(map[string]herald.Admission{"g": byNode})
		if got := h.claimAs("n1", 10); len(got) != 0 {
			t.Fatalf("n1's claim while n2's %s is in flight = %v, want none: one node at a time keeps a lane", msgs[1].ID, ids(got))
		}
		h.walk(msgs[1].ID, t0, herald.StatusSentToNS, herald.StatusDeliverySuccessful)
		if got := h.claimAs("n1", 10); !slices.Equal(ids(got), ids(msgs[2:4])) {
			t.Errorf("n1's claim once it ended = %v, want its concurrency's %v", ids(got), ids(msgs[2:4]))
		}
	})

	// Rules for a route with messages stored in several lanes find each
	// lane's first message: its highest priority, then its oldest.
	eachKeeper(t, "AppliesToStoredLanes", func(t *testing.T, keep keeper) {
		h := open(t)
		h.admit(map[string]herald.Admission{})
		create := func(lane string, prio int) *herald.Message {
			m := newMessage("g")
			m.Lane, m.Priority = lane, prio
			return h.create(m)
		}
		create("A", 0)
		aHigh := create("A", 5)
		bOld, _ := create("B", 1), create("B", 1)
		c := create("C", 3)
		h.admit(map[string]herald.Admission{"g": keep(herald.Admission{Concurrency: 1})})
		var got []string
		for range 3 { // one at a time: the lanes in their order
			got = append(got, ids(h.claimGated(t0, 1))...)
		}
		if want := ids([]*herald.Message{aHigh, c, bOld}); !slices.Equal(got, want) {
			t.Errorf("claims = %v, want each lane's first by priority then age, the lanes by it: %v", got, want)
		}
	})

	t.Run("Ordered", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"o": {Ordered: true}})
		var dev1 []*herald.Message
		for range 3 {
			m := newMessage("o")
			m.Target = "dev-1"
			dev1 = append(dev1, h.create(m))
		}
		other := newMessage("o")
		other.Target = "dev-2"
		h.create(other)
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{dev1[0].ID, other.ID}) {
			t.Fatalf("claim = %v, want the first of each target %v", ids(got), []string{dev1[0].ID, other.ID})
		}
		h.transition(herald.Transition{ID: dev1[0].ID, From: herald.StatusSentToNS, To: herald.StatusToRetry, At: t0, DueAt: t0})
		if got := h.claimGated(t0, 10); len(got) != 0 {
			t.Fatalf("claim while the first waits to be retried = %v, want none", ids(got))
		}
		if first, err := h.s.FirstActive(h.ctx, "o", "dev-1"); err != nil || first != dev1[0].ID {
			t.Errorf("FirstActive = %q, %v; want %s", first, err, dev1[0].ID)
		}
		if _, err := h.s.Release(h.ctx, t0, 10); err != nil {
			t.Fatal(err)
		}
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{dev1[0].ID}) {
			t.Fatalf("claim after the release = %v, want the first again", ids(got))
		}
		h.transition(herald.Transition{ID: dev1[0].ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0})
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{dev1[1].ID}) {
			t.Fatalf("claim after the first ended = %v, want the second %s", ids(got), dev1[1].ID)
		}
		if first, err := h.s.FirstActive(h.ctx, "o", "dev-1"); err != nil || first != dev1[1].ID {
			t.Errorf("FirstActive = %q, %v; want %s", first, err, dev1[1].ID)
		}
	})

	// A target's next message goes as soon as the one before ends, also
	// when the two are in different lanes.
	t.Run("OrderedAcrossLanes", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"o": {Ordered: true}})
		first, next := newMessage("o"), newMessage("o")
		first.Target, first.Lane = "dev-1", "A"
		next.Target, next.Lane = "dev-1", "B"
		h.create(first)
		h.create(next)
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{first.ID}) {
			t.Fatalf("claim = %v, want only the target's first %s", ids(got), first.ID)
		}
		h.transition(herald.Transition{ID: first.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0})
		if got := h.claimGated(at(10*time.Millisecond), 10); !slices.Equal(ids(got), []string{next.ID}) {
			t.Errorf("claim 10 ms after the first ended = %v, want the next %s, of the other lane", ids(got), next.ID)
		}
	})

	// A route made ordered holds back the messages stored before, and one
	// no longer ordered lets them all go.
	t.Run("OrderedChanges", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"o": {Concurrency: 10}})
		var dev []*herald.Message
		for range 3 {
			m := newMessage("o")
			m.Target = "dev-1"
			dev = append(dev, h.create(m))
		}
		h.admit(map[string]herald.Admission{"o": {Concurrency: 10, Ordered: true}})
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), ids(dev[:1])) {
			t.Fatalf("claim once ordered = %v, want the first alone %v", ids(got), ids(dev[:1]))
		}
		h.admit(map[string]herald.Admission{"o": {Concurrency: 10}})
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), ids(dev[1:])) {
			t.Fatalf("claim once no longer ordered = %v, want the others %v", ids(got), ids(dev[1:]))
		}
	})

	eachKeeper(t, "Circuit", func(t *testing.T, keep keeper) {
		h := open(t)
		h.admit(map[string]herald.Admission{
			"c":     keep(herald.Admission{Circuit: herald.Circuit{Failures: 3, CoolDown: 10 * time.Second}}),
			"plain": {Concurrency: 5},
		})
		h.createN("c", "A", 6)
		h.createN("plain", "A", 1)
		report := func(when time.Time, failed bool) herald.CircuitChange {
			t.Helper()
			ch, err := h.s.ReportCircuit(h.ctx, herald.CircuitReport{Route: "c", Lane: "A", At: when, Failed: failed})
			if err != nil {
				t.Fatalf("ReportCircuit: %v", err)
			}
			return ch
		}
		if ch := report(t0, true); ch.Opened || ch.Failures != 1 {
			t.Fatalf("first failure: %+v", ch)
		}
		if ch := report(t0, false); ch != (herald.CircuitChange{}) {
			t.Fatalf("a success while closed: %+v, want no change", ch)
		}
		report(t0, true)
		report(t0, true)
		if ch := report(t0, true); !ch.Opened || ch.Failures != 3 || !sameTime(ch.Until, at(10*time.Second)) {
			t.Fatalf("third failure in a row: %+v, want opened until t0+10s", ch)
		}
		if got := h.claimGated(at(9*time.Second), 10); len(got) != 1 || got[0].Route != "plain" {
			t.Fatalf("claim while open = %v, want only the other route's message", ids(got))
		}
		if l := h.lane("c", "A", ""); l.PauseReason != "circuit_open" || l.Circuit != "open" || !sameTime(l.PausedUntil, at(10*time.Second)) {
			t.Errorf("Lane while open: %+v", l)
		}
		if got := h.claimGated(at(10*time.Second), 10); len(got) != 1 {
			t.Fatalf("claim after the cool-down took %d, want one probe", len(got))
		}
		if got := h.claimGated(at(10*time.Second), 10); len(got) != 0 {
			t.Fatalf("claim while the probe is out took %d, want none", len(got))
		}
		if ch := report(at(11*time.Second), true); !ch.Opened || !sameTime(ch.Until, at(31*time.Second)) {
			t.Fatalf("failed probe: %+v, want opened again for twice the cool-down, until t0+31s", ch)
		}
		if got := h.claimGated(at(30*time.Second), 10); len(got) != 0 {
			t.Fatalf("claim before the doubled cool-down ends took %d", len(got))
		}
		if got := h.claimGated(at(31*time.Second), 10); len(got) != 1 {
			t.Fatalf("claim after the doubled cool-down took %d, want one probe", len(got))
		}
		if ch := report(at(32*time.Second), false); !ch.Closed {
			t.Fatalf("probe succeeded: %+v, want closed", ch)
		}
		if got := h.claimGated(at(32*time.Second), 10); len(got) != 4 {
			t.Fatalf("claim after the circuit closed took %d, want the 4 left", len(got))
		}
		ch, err := h.s.ReportCircuit(h.ctx, herald.CircuitReport{Route: "plain", Lane: "A", At: t0, Failed: true})
		if err != nil || ch != (herald.CircuitChange{}) {
			t.Errorf("ReportCircuit on a route without a circuit = %+v, %v; want no change", ch, err)
		}
	})

	t.Run("ManyBlockedLanesKeepNoneBack", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {TenantRate: herald.Rate{N: 1, Per: time.Hour}}})
		blocked := make([]*herald.Message, 4200) // more lanes than a claim looks at
		for i := range blocked {
			blocked[i] = newMessage("g")
			blocked[i].Lane = fmt.Sprintf("gw-%04d", i)
		}
		h.createAll(blocked)
		other := newMessage("g")
		other.Tenant, other.Lane = "globex", "gw-new"
		h.create(other)
		// A lane that admits nothing is set aside (until a token comes, or
		// a message joins or leaves it): each costs the claims once, so
		// globex's message comes within a bounded number of claims.
		var got []string
		for range 20 {
			if got = append(got, ids(h.claimGated(t0, 10))...); slices.Contains(got, other.ID) {
				break
			}
		}
		if !slices.Contains(got, other.ID) || len(got) != 2 {
			t.Errorf("20 claims took %v, want acme's one token's worth and globex's %s", got, other.ID)
		}
	})

	t.Run("ReplayTakesTheRulesOfNow", func(t *testing.T) {
		h := open(t)
		replay := func(id string) {
			t.Helper()
			h.transition(herald.Transition{ID: id, From: herald.StatusDeliveryFailed, To: herald.StatusQueued, At: t0, DueAt: t0, ResetAttempts: true})
		}
		// Gated when it failed, ungated when replayed: claimed as ungated.
		h.admit(map[string]herald.Admission{"g": {Concurrency: 1}})
		was := h.createN("g", "A", 1)[0]
		h.claimGated(t0, 1)
		h.transition(herald.Transition{ID: was.ID, From: herald.StatusSentToNS, To: herald.StatusDeliveryFailed, At: t0})
		h.admit(map[string]herald.Admission{})
		replay(was.ID)
		got, err := h.s.Claim(h.ctx, herald.Claim{Now: t0, Limit: 10, DefaultAccept: 20 * time.Second})
		if err != nil || !slices.Equal(ids(got), []string{was.ID}) {
			t.Fatalf("ungated claim after the replay = %v, %v; want %s", ids(got), err, was.ID)
		}
		h.transition(herald.Transition{ID: was.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, Lease: got[0].Lease, At: t0})
		// Ungated when it failed, gated when replayed: its lane's cap holds.
		now := h.createN("g", "A", 1)[0]
		h.walk(now.ID, t0, herald.StatusQueued, herald.StatusSentToNS, herald.StatusDeliveryFailed)
		h.admit(map[string]herald.Admission{"g": {Concurrency: 1}})
		busy := h.createN("g", "A", 1)[0]
		if got := h.claimGated(t0, 10); !slices.Equal(ids(got), []string{busy.ID}) {
			t.Fatalf("claim = %v, want %s", ids(got), busy.ID)
		}
		replay(now.ID)
		if got := h.claimGated(t0, 10); len(got) != 0 {
			t.Fatalf("claim of a replayed message whose lane is full = %v, want none", ids(got))
		}
	})

	t.Run("Lanes", func(t *testing.T) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": {Concurrency: 1}, "h": {Concurrency: 1}})
		h.createN("g", "A", 1)
		h.createN("g", "B", 5)
		h.createN("h", "C", 3)
		h.claimGated(t0, 10)
		all, err := h.s.Lanes(h.ctx, herald.LaneQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range all {
			got = append(got, fmt.Sprintf("%s/%s:%d+%d", l.Route, l.Lane, l.Queued, len(l.InFlight)))
		}
		if want := []string{"g/B:4+1", "h/C:2+1", "g/A:0+1"}; !slices.Equal(got, want) {
			t.Errorf("Lanes = %v, want %v", got, want)
		}
		some, err := h.s.Lanes(h.ctx, herald.LaneQuery{Route: "g", Limit: 1})
		if err != nil || len(some) != 1 || some[0].Lane != "B" || len(some[0].InFlight) != 1 {
			t.Errorf("Lanes(g, 1) = %+v, %v; want lane B, its one message in flight", some, err)
		}
	})

	// A tenant's lanes are those that hold its messages, queued or in
	// flight, counting them alone: no tenant learns of a lane that only
	// others' messages take.
	eachKeeper(t, "LanesOfATenant", func(t *testing.T, keep keeper) {
		h := open(t)
		h.admit(map[string]herald.Admission{"g": keep(herald.Admission{Concurrency: 1}), "h": keep(herald.Admission{Concurrency: 1})})
		create := func(route, lane, tenant string, n int) {
			for range n {
				m := newMessage(route)
				m.Lane, m.Tenant = lane, tenant
				h.create(m)
			}
		}
		create("g", "A", "acme", 1)
		create("g", "A", "other", 2)
		create("g", "B", "other", 3)
		create("h", "C", "acme", 2)
		h.claimGated(t0, 10) // the first of each lane
		lanes := func(q herald.LaneQuery) []string {
			t.Helper()
			got, err := h.s.Lanes(h.ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, l := range got {
				out = append(out, fmt.Sprintf("%s/%s:%d+%d", l.Route, l.Lane, l.Queued, len(l.InFlight)))
			}
			return out
		}
		for _, c := range []struct {
			q    herald.LaneQuery
			want []string
		}{
			{herald.LaneQuery{Limit: 10}, []string{"g/A:2+1", "g/B:2+1", "h/C:1+1"}},
			{herald.LaneQuery{Tenant: "acme", Limit: 10}, []string{"h/C:1+1", "g/A:0+1"}},
			{herald.LaneQuery{Tenant: "other", Limit: 10}, []string{"g/B:2+1", "g/A:2+0"}},
			{herald.LaneQuery{Tenant: "acme", Route: "g", Limit: 10}, []string{"g/A:0+1"}},
			{herald.LaneQuery{Tenant: "other", Limit: 1}, []string{"g/B:2+1"}},
			{herald.LaneQuery{Tenant: "nobody", Limit: 10}, nil},
		} {
			if got := lanes(c.q); !slices.Equal(got, c.want) {
				t.Errorf("Lanes(%+v) = %v, want %v", c.q, got, c.want)
			}
		}
	})
}

// keeper returns a route's admission as a test gives it to the store.
type keeper func(herald.Admission) herald.Admission

// eachKeeper runs test as name on a route whose claims keep its lanes'
// concurrency, and as name+"OnClaimAhead" on one whose dispatching node keeps
// it (Admission.ClaimAhead, as the engine sets it on a direct carrier's
// route): its ClaimAhead is its concurrency, which is 10 when it has none.
func eachKeeper(t *testing.T, name string, test func(t *testing.T, keep keeper)) {
	t.Run(name, func(t *testing.T) { test(t, func(a herald.Admission) herald.Admission { return a }) })
	t.Run(name+"OnClaimAhead", func(t *testing.T) {
		test(t, func(a herald.Admission) herald.Admission {
			if a.Concurrency == 0 {
				a.Concurrency = 10
			}
			a.ClaimAhead = a.Concurrency
			return a
		})
	})
}

// eachLaneKind runs test as name on the lane of a route its dispatching
// node keeps (Admission.ClaimAhead) with a concurrency of 2, and as
// name+"Ordered" on the same route ordered (whose lanes a store may keep
// otherwise).
func eachLaneKind(t *testing.T, name string, test func(t *testing.T, a herald.Admission)) {
	a := herald.Admission{Concurrency: 2, ClaimAhead: 514}
	t.Run(name, func(t *testing.T) { test(t, a) })
	a.Ordered = true
	t.Run(name+"Ordered", func(t *testing.T) { test(t, a) })
}

// admit sets the store's admission rules.
func (h *harness) admit(rules map[string]herald.Admission) {
	h.t.Helper()
	err := h.s.SetAdmission(h.ctx, rules)
	if errors.Is(err, errors.ErrUnsupported) {
		h.t.Skipf("SetAdmission: %v", err)
	}
	if err != nil {
		h.t.Fatalf("SetAdmission: %v", err)
	}
}

// createN stores n messages of route on lane, oldest first.
func (h *harness) createN(route, lane string, n int) []*herald.Message {
	h.t.Helper()
	msgs := make([]*herald.Message, n)
	for i := range msgs {
		msgs[i] = newMessage(route)
		msgs[i].Lane = lane
	}
	if n > 50 {
		h.createAll(msgs)
	} else {
		for _, m := range msgs {
			h.create(m)
		}
	}
	return msgs
}

// claimGated claims up to limit messages at now, gated ones included.
func (h *harness) claimGated(now time.Time, limit int) []*herald.Message {
	h.t.Helper()
	got, err := h.s.Claim(h.ctx, herald.Claim{Now: now, Limit: limit, GatedLimit: limit, DefaultAccept: 20 * time.Second})
	if err != nil {
		h.t.Fatalf("Claim: %v", err)
	}
	return got
}

// claimAs claims up to limit messages at t0, gated ones included, for node,
// whose heartbeat it records first.
func (h *harness) claimAs(node string, limit int) []*herald.Message {
	h.t.Helper()
	return h.claimKept(node, limit, nil, nil)
}

// claimKept claims up to limit messages at t0, gated ones included, for
// node, whose heartbeat it records first, with the claim's KeptAhead and
// KeptSent.
func (h *harness) claimKept(node string, limit int, ahead map[string]int, sent map[herald.LaneRef]int) []*herald.Message {
	h.t.Helper()
	h.beat(node, t0, time.Hour)
	got, err := h.s.Claim(h.ctx, herald.Claim{Now: t0, Limit: limit, GatedLimit: limit, DefaultAccept: 20 * time.Second,
		Node: node, KeptAhead: ahead, KeptSent: sent})
	if err != nil {
		h.t.Fatalf("Claim: %v", err)
	}
	return got
}

// claimKeptAt claims up to limit messages at now, gated ones included, for
// node, with the claim's KeptAhead, and records no heartbeat.
func (h *harness) claimKeptAt(now time.Time, node string, limit int, ahead map[string]int) []*herald.Message {
	h.t.Helper()
	got, err := h.s.Claim(h.ctx, herald.Claim{Now: now, Limit: limit, GatedLimit: limit, DefaultAccept: 20 * time.Second,
		Node: node, KeptAhead: ahead})
	if err != nil {
		h.t.Fatalf("Claim: %v", err)
	}
	return got
}

// beat records node's heartbeat at now, lasting ttl.
func (h *harness) beat(node string, now time.Time, ttl time.Duration) {
	h.t.Helper()
	if err := h.s.Heartbeat(h.ctx, node, now, ttl); err != nil {
		h.t.Fatalf("Heartbeat: %v", err)
	}
}

// lane returns the state of route's lane, with tenant's bucket.
func (h *harness) lane(route, lane, tenant string) herald.LaneState {
	h.t.Helper()
	l, err := h.s.Lane(h.ctx, route, lane, tenant)
	if err != nil {
		h.t.Fatalf("Lane: %v", err)
	}
	return l
}
