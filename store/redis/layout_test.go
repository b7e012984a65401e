package redis

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/redistest"
)

func TestOpenURL(t *testing.T) {
	for _, u := range []string{
		"redis://127.0.0.1:1/0?prefix={x}",
		"redis://127.0.0.1:1/0?cluster=maybe",
		"redis://127.0.0.1:1/0?no_such_option=1",
		"http://127.0.0.1:1/0",
		"redis://user:secret@127.0.0.1:1/x",
	} {
		s, err := Open(u)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", u)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): error %q shows the password", u, err)
		}
	}
	for _, u := range []string{"redis://127.0.0.1:1/0", "rediss://user:pw@127.0.0.1:1/2?prefix=p&dial_timeout=1s", "redis://127.0.0.1:1?cluster=true"} {
		s, err := Open(u)
		if err != nil {
			t.Errorf("Open(%q): %v", u, err)
			continue
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// TestTimelineCapped keeps the creation entry and the latest entries of a
// long timeline.
func TestTimelineCapped(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	if _, _, err := s.Create(ctx, message("m1"), herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := []herald.Status{herald.StatusQueued, herald.StatusSentToNS, herald.StatusToRetry}
	const steps = 150
	for i := range steps {
		from, to := path[i%3], path[(i+1)%3]
		err := s.Transition(ctx, herald.Transition{ID: "m1", From: from, To: to, At: t0.Add(time.Duration(i+1) * time.Second), Reason: "step"})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	m, err := s.Get(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Timeline) != 100 {
		t.Fatalf("timeline of %d entries, want 100", len(m.Timeline))
	}
	if first := m.Timeline[0]; first.To != herald.StatusQueued || first.From != "" || first.Reason != "created" {
		t.Errorf("first entry %+v, want the creation", first)
	}
	if last := m.Timeline[99]; !last.At.Equal(t0.Add(steps*time.Second)) || last.To != path[steps%3] {
		t.Errorf("last entry %+v, want the last step's", last)
	}
	if second := m.Timeline[1]; !second.At.Equal(t0.Add((steps - 98) * time.Second)) {
		t.Errorf("second entry %+v, want the 99th last step's", second)
	}
}

// TestClaimSkipsNotDue claims with a clock behind the one that queued a
// message: it stays until its DueAt.
func TestClaimSkipsNotDue(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	ahead := message("m1")
	ahead.CreatedAt, ahead.UpdatedAt, ahead.DueAt = t0.Add(2*time.Minute), t0.Add(2*time.Minute), t0.Add(time.Minute)
	due := message("m2")
	due.Priority = -1
	for _, m := range []*herald.Message{ahead, due} {
		if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(now time.Time) []string {
		t.Helper()
		got, err := s.Claim(ctx, herald.Claim{Now: now, Limit: 10, DefaultAccept: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range got {
			ids = append(ids, m.ID)
		}
		return ids
	}
	if got := claim(t0); len(got) != 1 || got[0] != "m2" {
		t.Errorf("Claim at t0 = %v, want only m2", got)
	}
	if got := claim(t0.Add(59 * time.Second)); len(got) != 0 {
		t.Errorf("Claim before m1's DueAt = %v, want nothing", got)
	}
	if got := claim(t0.Add(time.Minute)); len(got) != 1 || got[0] != "m1" {
		t.Errorf("Claim at m1's DueAt = %v, want m1", got)
	}
}

// TestSeparatorsInNames uses tenants and routes that hold the layout's
// separator and escape character.
func TestSeparatorsInNames(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	a, b := message("m1"), message("m2")
	a.Tenant, a.Route, a.IdempotencyKey = "a|b", "c%7C", "k"
	b.Tenant, b.Route, b.IdempotencyKey = "a", "b|c%7C", "k"
	for _, m := range []*herald.Message{a, b} {
		if _, created, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil || !created {
			t.Fatalf("Create %s: created %v, %v; want a new message", m.ID, created, err)
		}
	}
	counts, err := s.Counts(ctx)
	if err != nil || len(counts) != 2 {
		t.Fatalf("Counts = %+v, %v; want 2 groups", counts, err)
	}
	for _, c := range counts {
		if !(c.Tenant == a.Tenant && c.Route == a.Route) && !(c.Tenant == b.Tenant && c.Route == b.Route) {
			t.Errorf("Counts has %q/%q, want only %q/%q and %q/%q", c.Tenant, c.Route, a.Tenant, a.Route, b.Tenant, b.Route)
		}
	}
	for _, m := range []*herald.Message{a, b} {
		got, _, err := s.List(ctx, herald.Query{Tenant: m.Tenant, Route: m.Route, Status: herald.StatusQueued})
		if err != nil || len(got) != 1 || got[0].ID != m.ID || got[0].Tenant != m.Tenant || got[0].Route != m.Route {
			t.Errorf("List of %q/%q = %v, %v; want %s", m.Tenant, m.Route, got, err, m.ID)
		}
	}
}

func TestDuplicateID(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	if _, _, err := s.Create(ctx, message("m1"), herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	again := message("m1")
	again.Text = "other"
	if _, _, err := s.Create(ctx, again, herald.CreateOptions{}); err == nil || errors.Is(err, herald.ErrStoreUnavailable) {
		t.Errorf("Create of a taken id: err %v, want an error", err)
	}
	if m, err := s.Get(ctx, "m1"); err != nil || m.Text != "hello" {
		t.Errorf("Get = %v, %v; want the first message, unchanged", m, err)
	}
}

// TestBrokenMessage breaks a message's hash: its transitions fail with an
// error of their own, and the others' go on.
func TestBrokenMessage(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	seed(t, s)
	if err := s.client.HSet(ctx, s.key("m:m1"), "k", "garbage").Err(); err != nil {
		t.Fatal(err)
	}
	err := s.Transition(ctx, herald.Transition{ID: "m1", From: herald.StatusQueued, To: herald.StatusCancelled, At: t0})
	if err == nil || errors.Is(err, herald.ErrStoreUnavailable) || errors.Is(err, herald.ErrConflict) {
		t.Errorf("Transition of a broken message: err %v, want an error of its own", err)
	}
	err = s.Transition(ctx, herald.Transition{ID: "m2", From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0})
	if err != nil {
		t.Errorf("Transition of a sound message: %v", err)
	}
}

// TestInboxKeys stores inbox events of routes and correlations that hold
// the layout's separator: each correlation finds its own, and once the
// events are done no key of the inbox is left.
func TestInboxKeys(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, "")
	ctx := t.Context()
	evs := []herald.Inbound{
		{ID: "e1", Route: "a|b", Kind: herald.InboundAck, Correlation: "c", At: t0, DueAt: t0},
		{ID: "e2", Route: "a", Kind: herald.InboundUplink, Correlation: "b|c", At: t0, DueAt: t0},
		{ID: "e3", Route: "a%7Cb", Kind: herald.InboundUplink, Correlation: "c", At: t0, DueAt: t0},
		{ID: "e4", Route: "a", Kind: herald.InboundTransmitted, At: t0, DueAt: t0},
	}
	for _, ev := range evs {
		if err := s.AddInbound(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range evs[:3] {
		got, err := s.InboundByCorrelation(ctx, ev.Route, ev.Correlation)
		if err != nil || len(got) != 1 || got[0].ID != ev.ID || got[0].Route != ev.Route || got[0].Correlation != ev.Correlation {
			t.Errorf("InboundByCorrelation(%q, %q) = %+v, %v; want %s only", ev.Route, ev.Correlation, got, err, ev.ID)
		}
	}
	if err := s.SettleInbound(ctx, herald.InboundSettle{Done: []string{"e1", "e2", "e3", "e4"}}); err != nil {
		t.Fatal(err)
	}
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer admin.Close()
	for _, pattern := range []string{"in:*", "indue", "incorr:*"} {
		if left, err := admin.Keys(ctx, s.keys[0]+pattern).Result(); err != nil || len(left) != 0 {
			t.Errorf("keys %s of the inbox left once every event is done: %v, %v; want none", pattern, left, err)
		}
	}
}

// TestIdleLaneStateGoes: a lane's state (lst:) goes once the lane holds no
// message and nothing of it holds any longer: at once when nothing does,
// at the end of its spacing when that still does (a TTL), a day later
// when its circuit counts failures; a message on the lane keeps it again. A
// tenant's bucket goes a period after its last draw.
func TestIdleLaneStateGoes(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	rules := map[string]herald.Admission{
		"free":    {Concurrency: 5},
		"spaced":  {Spacing: time.Hour, TenantRate: herald.Rate{N: 10, Per: time.Minute}},
		"circuit": {Concurrency: 5, Circuit: herald.Circuit{Failures: 3, CoolDown: time.Minute}},
	}
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{"free", "spaced", "circuit"} {
		m := &herald.Message{ID: "m-" + route, Tenant: "acme", Route: route, Lane: "L", Text: "x", MaxAttempts: 3,
			CreatedAt: t0, UpdatedAt: t0, DueAt: t0}
		if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 10, GatedLimit: 10, DefaultAccept: time.Second, Node: "n1"})
	if err != nil || len(msgs) != 3 {
		t.Fatalf("claim = %d, %v; want 3", len(msgs), err)
	}
	if _, err := s.ReportCircuit(ctx, herald.CircuitReport{Route: "circuit", Lane: "L", At: t0, Failed: true}); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := s.Transition(ctx, herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	ttl := func(key string) time.Duration {
		t.Helper()
		d, err := s.client.PTTL(ctx, s.key(key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := ttl("lst:free|L"); d != -2 {
		t.Errorf("the state of an idle lane with nothing to keep: PTTL %v, want gone (-2)", d)
	}
	if d := ttl("lst:spaced|L"); d <= 0 {
		t.Errorf("the state of an idle lane within its spacing: PTTL %v, want a TTL", d)
	}
	if d := ttl("tb:spaced|acme"); d <= 0 || d > time.Minute {
		t.Errorf("a tenant's bucket drawn from: PTTL %v, want at most its period", d)
	}
	if d := ttl("lst:circuit|L"); d < 23*time.Hour || d > 24*time.Hour+time.Minute {
		t.Errorf("the state of an idle lane whose circuit counts a failure: PTTL %v, want about a day", d)
	}
	m := &herald.Message{ID: "m-spaced-2", Tenant: "acme", Route: "spaced", Lane: "L", Text: "x", MaxAttempts: 3,
		CreatedAt: t0, UpdatedAt: t0, DueAt: t0}
	if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := ttl("lst:spaced|L"); d != -1 {
		t.Errorf("the state of a lane that holds a message again: PTTL %v, want kept (-1)", d)
	}
	if got, err := s.Claim(ctx, herald.Claim{Now: t0.Add(time.Minute), Limit: 10, GatedLimit: 10, DefaultAccept: time.Second}); err != nil || len(got) != 0 {
		t.Errorf("claim within the spacing = %d, %v; want none: the lane kept its spacing", len(got), err)
	}
}

// TestLaneClockIsTheServers: with lane_clock=server (the default), a
// lane's spacing holds in the Redis server's time, whatever time the
// claiming node believes it is; with lane_clock=caller, a node whose clock
// runs two hours ahead takes the next message at once.
func TestLaneClockIsTheServers(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	for _, tc := range []struct {
		clock     string
		wantAhead int // messages the node ahead takes
	}{{"", 0}, {"caller", 1}} {
		s, err := Open(fmt.Sprintf("%s?prefix=clk%s%d&lane_clock=%s", srv.URL(), tc.clock, prefixes.Add(1), tc.clock))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.SetAdmission(ctx, map[string]herald.Admission{"g": {Spacing: time.Minute}}); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for i := range 2 {
			at := now.Add(-time.Hour)
			m := &herald.Message{ID: fmt.Sprintf("m%d", i), Tenant: "acme", Route: "g", Lane: "L", Text: "x", MaxAttempts: 3,
				CreatedAt: at, UpdatedAt: at, DueAt: at}
			if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		claim := func(at time.Time) int {
			got, err := s.Claim(ctx, herald.Claim{Now: at, Limit: 10, GatedLimit: 10, DefaultAccept: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			return len(got)
		}
		if n := claim(now); n != 1 {
			t.Fatalf("lane_clock=%q: first claim took %d, want 1", tc.clock, n)
		}
		if n := claim(now.Add(2 * time.Hour)); n != tc.wantAhead {
			t.Errorf("lane_clock=%q: a node two hours ahead took %d within the spacing, want %d", tc.clock, n, tc.wantAhead)
		}
	}
}

// TestCancelledLaneStateGoes: a lane whose one message is cancelled, in
// lsched until then, forgets its state too (its place written, then gone).
func TestCancelledLaneStateGoes(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"g": {Concurrency: 5}}); err != nil {
		t.Fatal(err)
	}
	m := &herald.Message{ID: "m1", Tenant: "acme", Route: "g", Lane: "L", Text: "x", MaxAttempts: 3, CreatedAt: t0, UpdatedAt: t0, DueAt: t0}
	if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Transition(ctx, herald.Transition{ID: "m1", From: herald.StatusQueued, To: herald.StatusCancelled, At: t0}); err != nil {
		t.Fatal(err)
	}
	if d, err := s.client.PTTL(ctx, s.key("lst:g|L")).Result(); err != nil || d != -2 {
		t.Errorf("the state of a lane whose one message was cancelled: PTTL %v, %v; want gone (-2)", d, err)
	}
}

// TestPassedLanesLeaveRoom: 300 lanes that this node keeps as far ahead as
// the claim allows (KeptAhead) stay first in lsched and are passed over;
// they do not use up the claim's budget of lanes that admit nothing, so a
// newer lane behind them is claimed.
func TestPassedLanesLeaveRoom(t *testing.T) {
	const lanes = 300
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"g": {Concurrency: 1, ClaimAhead: 10}}); err != nil {
		t.Fatal(err)
	}
	var msgs []*herald.Message
	for i := range lanes {
		for range 5 {
			msgs = append(msgs, &herald.Message{ID: fmt.Sprintf("m%06d", len(msgs)), Tenant: "acme", Route: "g",
				Lane: fmt.Sprintf("L%04d", i), Text: "x", MaxAttempts: 3, CreatedAt: t0, UpdatedAt: t0, DueAt: t0})
		}
	}
	for _, m := range msgs {
		if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(limit int) int {
		t.Helper()
		got, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: limit, GatedLimit: limit, DefaultAccept: time.Minute, Node: "n1", KeptAhead: map[string]int{"g": 1}})
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	if got := claim(2 * lanes); got != 2*lanes {
		t.Fatalf("the first claim took %d, want 2 of each of the %d lanes", got, lanes)
	}
	m := &herald.Message{ID: "new", Tenant: "acme", Route: "g", Lane: "NEW", Text: "x", MaxAttempts: 3, CreatedAt: t0, UpdatedAt: t0, DueAt: t0}
	if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := claim(10); got != 1 {
		t.Errorf("a claim behind %d lanes kept as far ahead as allowed took %d, want lane NEW's one", lanes, got)
	}
}

// TestRepairedLaneStateGoes: a spaced lane with a leaked slot (an id in
// lin that no message holds) keeps its state when its one message ends;
// SetAdmission's recount then repairs the slot, and the lane, which holds
// no message now, must lose its state once its spacing is over (a TTL),
// not keep it for ever. The recount knows the lanes' time only when it is
// the server's (lane_clock=server, the default).
func TestRepairedLaneStateGoes(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	s, err := Open(fmt.Sprintf("%s?prefix=rep%d", srv.URL(), prefixes.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rules := map[string]herald.Admission{"g": {Spacing: time.Minute}}
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	create(t, s, laneMessage("m1", "g", "A"))
	if err := s.client.ZAdd(ctx, s.key("lin:g|A"), goredis.Z{Member: "ghost"}).Err(); err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("claim = %v, want m1", got)
	}
	transition(t, s, herald.Transition{ID: "m1", From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0})
	if d := s.client.PTTL(ctx, s.key("lst:g|A")).Val(); d != -1 {
		t.Fatalf("the state of the lane with its leaked slot: PTTL %v, want kept (-1)", d)
	}
	if err := s.SetAdmission(ctx, rules); err != nil { // the same rules: the recount
		t.Fatal(err)
	}
	if l, err := s.Lane(ctx, "g", "A", ""); err != nil || len(l.InFlight) != 0 || l.Queued != 0 {
		t.Fatalf("Lane after the repair = %+v, %v; want nothing in it", l, err)
	}
	if d := s.client.PTTL(ctx, s.key("lst:g|A")).Val(); d <= 0 || d > time.Minute {
		t.Errorf("the state of the lane that holds no message after the repair: PTTL %v, want at most its spacing", d)
	}
}
