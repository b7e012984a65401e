package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// testHolds covers the operator's pauses (PauseLane, ResumeLane,
// LanePauses) and Claim.Hold.
func testHolds(t *testing.T, open opener) {
	t.Run("PausesKept", func(t *testing.T) {
		h := open(t)
		if got, err := h.s.LanePauses(h.ctx); err != nil || len(got) != 0 {
			t.Fatalf("LanePauses of a new store = %v, %v; want none", got, err)
		}
		route := herald.LanePause{Route: "lora", Reason: "maintenance", Tenant: "acme", At: t0}
		lane := herald.LanePause{Route: "lora", Lane: "gw|1", Until: at(time.Hour), Tenant: "acme", At: t0}
		other := herald.LanePause{Route: "hooks", Lane: "a", At: t0}
		for _, p := range []herald.LanePause{lane, route, other} {
			if err := h.s.PauseLane(h.ctx, p); err != nil {
				t.Fatalf("PauseLane %+v: %v", p, err)
			}
		}
		lane.Until, lane.Reason = at(2*time.Hour), "longer"
		if err := h.s.PauseLane(h.ctx, lane); err != nil { // replaces the lane's pause
			t.Fatalf("PauseLane again: %v", err)
		}
		got, err := h.s.LanePauses(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []herald.LanePause{other, route, lane}
		if len(got) != len(want) {
			t.Fatalf("LanePauses = %+v, want %+v", got, want)
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Route != w.Route || g.Lane != w.Lane || g.Reason != w.Reason || g.Tenant != w.Tenant ||
				!sameTime(g.Until, w.Until) || !sameTime(g.At, w.At) {
				t.Errorf("LanePauses[%d] = %+v, want %+v", i, g, w)
			}
		}
		if ok, err := h.s.ResumeLane(h.ctx, "lora", ""); err != nil || !ok {
			t.Errorf("ResumeLane lora = %v, %v; want true", ok, err)
		}
		if ok, err := h.s.ResumeLane(h.ctx, "lora", ""); err != nil || ok {
			t.Errorf("ResumeLane lora again = %v, %v; want false (none left)", ok, err)
		}
		if got, _ := h.s.LanePauses(h.ctx); len(got) != 2 || got[1].Lane != "gw|1" {
			t.Errorf("LanePauses after resuming the route = %+v, want the two lanes' pauses", got)
		}
	})

	t.Run("ClaimPassesOverHeld", func(t *testing.T) {
		h := open(t)
		ax, ay, b := h.createN("a", "x", 2), h.createN("a", "y", 2), h.createN("b", "x", 1)
		claim := func(hold ...herald.LaneRef) []string {
			t.Helper()
			got, err := h.s.Claim(h.ctx, herald.Claim{Now: t0, Limit: 10, DefaultAccept: 20 * time.Second, Hold: hold})
			if err != nil {
				t.Fatalf("Claim: %v", err)
			}
			return ids(got)
		}
		if got := claim(herald.LaneRef{Route: "a"}); !slices.Equal(got, ids(b)) {
			t.Errorf("Claim holding route a = %v, want b's only %v", got, ids(b))
		}
		if got := claim(herald.LaneRef{Route: "a", Lane: "x"}); !slices.Equal(got, ids(ay)) {
			t.Errorf("Claim holding lane a/x = %v, want a/y's %v", got, ids(ay))
		}
		for _, m := range ax {
			if st := h.get(m.ID).Status; st != herald.StatusQueued {
				t.Errorf("held message %s is %s, want QUEUED", m.ID, st)
			}
		}
		if got := claim(herald.LaneRef{Route: "a", Lane: "x"}); len(got) != 0 {
			t.Errorf("Claim still holding a/x = %v, want nothing", got)
		}
		if got := claim(); !slices.Equal(got, ids(ax)) {
			t.Errorf("Claim holding nothing = %v, want a/x's %v", got, ids(ax))
		}
	})

	for name, a := range map[string]herald.Admission{"GatedLaneHeld": {Concurrency: 5}, "KeptLaneHeld": {Concurrency: 5, ClaimAhead: 8}} {
		t.Run(name, func(t *testing.T) { testHeldLane(t, open, a) })
	}
}

// testHeldLane: a claim holding a lane of a route with admission a takes
// the route's other lane only; the next, holding nothing, the held one.
func testHeldLane(t *testing.T, open opener, a herald.Admission) {
	h := open(t)
	h.admit(map[string]herald.Admission{"g": a})
	x, y := h.createN("g", "x", 2), h.createN("g", "y", 2)
	hold := []herald.LaneRef{{Route: "g", Lane: "x"}}
	h.beat("n1", t0, time.Hour)
	got, err := h.s.Claim(h.ctx, herald.Claim{Now: t0, Limit: 10, GatedLimit: 10, DefaultAccept: 20 * time.Second, Hold: hold,
		Node: "n1", KeptAhead: map[string]int{"g": 8}})
	if err != nil {
		t.Fatal(err)
	}
	if !sameSet(ids(got), ids(y)) {
		t.Errorf("Claim holding lane g/x = %v, want g/y's %v", ids(got), ids(y))
	}
	if got := h.claimKept("n1", 10, map[string]int{"g": 8}, nil); !sameSet(ids(got), ids(x)) {
		t.Errorf("Claim holding nothing = %v, want g/x's %v", ids(got), ids(x))
	}
}
