package redis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/redistest"
)

// laneMessage returns a message of route on lane with id.
func laneMessage(id, route, lane string) *herald.Message {
	m := message(id)
	m.Route, m.Lane = route, lane
	return m
}

// create stores msgs, failing t unless each is created.
func create(t *testing.T, s *Store, msgs ...*herald.Message) {
	t.Helper()
	for _, m := range msgs {
		if _, created, err := s.Create(t.Context(), m, herald.CreateOptions{}); err != nil || !created {
			t.Fatalf("Create %s: created %v, %v", m.ID, created, err)
		}
	}
}

// claimIDs claims up to 10 messages at now, gated ones included, and
// returns their ids.
func claimIDs(t *testing.T, s *Store, now time.Time) []string {
	t.Helper()
	got, err := s.Claim(t.Context(), herald.Claim{Now: now, Limit: 10, GatedLimit: 10, DefaultAccept: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(got))
	for i, m := range got {
		ids[i] = m.ID
	}
	return ids
}

// commands returns how many commands the server ran since the last
// CONFIG RESETSTAT, those that scripts ran included, but for the script
// calls themselves and the test's own.
func commands(t *testing.T, admin *goredis.Client) int64 {
	t.Helper()
	info, err := admin.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok || name == "fcall" || name == "info" || name == "config|resetstat" {
			continue
		}
		calls, _ := strconv.ParseInt(stats[:strings.IndexByte(stats, ',')], 10, 64)
		n += calls
	}
	return n
}

// TestLaneClaimCost floods lanes that admit nothing, one full and one
// within its spacing: a claim then costs a few commands, however many
// messages wait in them.
func TestLaneClaimCost(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, "")
	ctx := t.Context()
	err := s.SetAdmission(ctx, map[string]herald.Admission{"full": {Concurrency: 1}, "spaced": {Spacing: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*herald.Message
	for i := range 1000 {
		msgs = append(msgs, laneMessage(fmt.Sprintf("a%04d", i), "full", "A"), laneMessage(fmt.Sprintf("b%04d", i), "spaced", "B"))
	}
	create(t, s, msgs...)
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"a0000", "b0000"}) {
		t.Fatalf("first claim = %v, want the first of each lane", got)
	}
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer admin.Close()
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const claims = 10
	for i := range claims {
		if got := claimIDs(t, s, t0.Add(time.Duration(i)*time.Second)); len(got) != 0 {
			t.Fatalf("claim %d = %v, want none", i, got)
		}
	}
	n := commands(t, admin)
	t.Logf("%d claims ran %d commands", claims, n)
	if n > 5*claims {
		t.Errorf("%d claims ran %d commands; want at most 5 each", claims, n)
	}
}

// TestLaneSlotLeakRepaired leaks a slot (an id in a lane's in-flight set
// that no message holds): SetAdmission with other rules counts the
// lane's messages in flight afresh, and the slot is free again.
func TestLaneSlotLeakRepaired(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	rules := map[string]herald.Admission{"g": {Concurrency: 2}}
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	create(t, s, laneMessage("m1", "g", "A"), laneMessage("m2", "g", "A"))
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m1", "m2"}) {
		t.Fatalf("claim = %v, want both", got)
	}
	if err := s.Transition(ctx, herald.Transition{ID: "m2", From: herald.StatusSentToNS, To: herald.StatusToRetry, At: t0, DueAt: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(ctx, t0, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.client.ZAdd(ctx, s.key("lin:g|A"), goredis.Z{Member: "ghost"}).Err(); err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(t, s, t0); len(got) != 0 {
		t.Fatalf("claim with the slot leaked = %v, want none", got)
	}
	if l, err := s.Lane(ctx, "g", "A", ""); err != nil || !slices.Equal(l.InFlight, []string{"ghost", "m1"}) {
		t.Fatalf("Lane = %+v, %v; want ghost and m1 in flight", l, err)
	}
	rules["g"] = herald.Admission{Concurrency: 2, Spacing: time.Millisecond}
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Lane(ctx, "g", "A", ""); err != nil || !slices.Equal(l.InFlight, []string{"m1"}) || l.Queued != 1 {
		t.Fatalf("Lane after new rules = %+v, %v; want m1 in flight, 1 queued", l, err)
	}
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m2"}) {
		t.Errorf("claim after the repair = %v, want m2", got)
	}
}

// TestLaneOldMessagesUngated stores a message as a version before lanes
// did, with no lane in field k: gating its route leaves it to the claims
// of ungated messages.
func TestLaneOldMessagesUngated(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	create(t, s, laneMessage("old", "g", "A"), laneMessage("new", "g", "A"))
	k, err := s.client.HGet(ctx, s.key("m:old"), "k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.client.HSet(ctx, s.key("m:old"), "k", strings.TrimSuffix(k, "|A|device-1|")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"g": {Concurrency: 1}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 10, DefaultAccept: time.Minute})
	if err != nil || len(got) != 1 || got[0].ID != "old" || got[0].Lane != "A" {
		t.Fatalf("ungated claim = %v, %v; want the old message, its lane read from its body", got, err)
	}
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"new"}) {
		t.Errorf("gated claim = %v, want new", got)
	}
}

// targeted returns a message of route on lane with id, for target.
func targeted(id, route, lane, target string) *herald.Message {
	m := laneMessage(id, route, lane)
	m.Target = target
	return m
}

// transition applies tr, failing t on an error.
func transition(t *testing.T, s *Store, tr herald.Transition) {
	t.Helper()
	if err := s.Transition(t.Context(), tr); err != nil {
		t.Fatalf("Transition %s to %s: %v", tr.ID, tr.To, err)
	}
}

// TestOrderedAcrossLanes holds a message behind an older one of its
// target in another lane, lets the lane's next message of another target
// go meanwhile, and admits it once the older one ends, though nothing
// else touched its lane.
func TestOrderedAcrossLanes(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	if err := s.SetAdmission(t.Context(), map[string]herald.Admission{"o": {Ordered: true}}); err != nil {
		t.Fatal(err)
	}
	create(t, s, targeted("m1", "o", "A", "T"), targeted("m2", "o", "B", "T"), targeted("m3", "o", "B", "U"))
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m1", "m3"}) {
		t.Fatalf("claim = %v, want m1 and m3 (m2 waits behind m1)", got)
	}
	if got := claimIDs(t, s, t0); len(got) != 0 {
		t.Fatalf("claim while m1 is in flight = %v, want none", got)
	}
	transition(t, s, herald.Transition{ID: "m1", From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0})
	if first, err := s.FirstActive(t.Context(), "o", "T"); err != nil || first != "m2" {
		t.Errorf("FirstActive = %q, %v; want m2", first, err)
	}
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m2"}) {
		t.Errorf("claim after m1 ended = %v, want m2", got)
	}
}

// TestOrderedHeldLaneCost floods a lane with messages of one target: while
// the first is in flight the lane is held, and a claim costs a few
// commands, however many wait in it.
func TestOrderedHeldLaneCost(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, "")
	ctx := t.Context()
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"o": {Ordered: true}}); err != nil {
		t.Fatal(err)
	}
	var msgs []*herald.Message
	for i := range 500 {
		msgs = append(msgs, targeted(fmt.Sprintf("m%04d", i), "o", "A", "T"))
	}
	create(t, s, msgs...)
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m0000"}) {
		t.Fatalf("first claim = %v, want m0000 alone", got)
	}
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer admin.Close()
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const claims = 10
	for range claims {
		if got := claimIDs(t, s, t0); len(got) != 0 {
			t.Fatalf("claim = %v, want none", got)
		}
	}
	if n := commands(t, admin); n > 5*claims {
		t.Errorf("%d claims ran %d commands; want at most 5 each", claims, n)
	}
	transition(t, s, herald.Transition{ID: "m0000", From: herald.StatusSentToNS, To: herald.StatusCancelled, At: t0})
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m0001"}) {
		t.Errorf("claim after the first ended = %v, want m0001", got)
	}
}

// TestOrderedAppliesToStoredMessages orders a route whose messages are
// stored already, one of them in flight, and then unorders it.
func TestOrderedAppliesToStoredMessages(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	create(t, s, targeted("m1", "o", "A", "T"), targeted("m2", "o", "A", "T"), targeted("m3", "o", "A", "U"))
	got, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 1, DefaultAccept: time.Minute})
	if err != nil || len(got) != 1 || got[0].ID != "m1" {
		t.Fatalf("ungated claim = %v, %v; want m1", got, err)
	}
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"o": {Ordered: true}}); err != nil {
		t.Fatal(err)
	}
	if first, err := s.FirstActive(ctx, "o", "T"); err != nil || first != "m1" {
		t.Errorf("FirstActive = %q, %v; want m1, in flight", first, err)
	}
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m3"}) {
		t.Errorf("claim = %v, want m3 (m2 waits behind m1)", got)
	}
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"o": {Concurrency: 5}}); err != nil {
		t.Fatal(err)
	}
	if first, err := s.FirstActive(ctx, "o", "T"); err != nil || first != "" {
		t.Errorf("FirstActive once unordered = %q, %v; want none", first, err)
	}
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m2"}) {
		t.Errorf("claim once unordered = %v, want m2", got)
	}
}

// TestDedupKeyKeptAndPruned reads a message's dedup key back, and prunes
// the delivered message with its entry in its key's window.
func TestDedupKeyKeptAndPruned(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	m := message("d1")
	m.DedupKey = "hash-1"
	create(t, s, m)
	transition(t, s, herald.Transition{ID: "d1", From: herald.StatusQueued, To: herald.StatusSentToNS, At: t0})
	transition(t, s, herald.Transition{ID: "d1", From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0.Add(time.Second)})
	twin := message("d2")
	twin.DedupKey = "hash-1"
	prev, created, err := s.Create(ctx, twin, herald.CreateOptions{DedupSince: t0})
	if err != nil || created || prev.ID != "d1" || prev.DedupKey != "hash-1" || len(prev.Timeline) != 3 {
		t.Fatalf("Create of a twin = %+v, created %v, %v; want d1 with its dedup key and timeline", prev, created, err)
	}
	if got, err := s.Get(ctx, "d1"); err != nil || got.DedupKey != "hash-1" {
		t.Errorf("Get = %+v, %v; want dedup key hash-1", got, err)
	}
	if n, err := s.Prune(ctx, t0.Add(time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	if n, err := s.client.Exists(ctx, s.key("dd:acme|r1|hash-1")).Result(); err != nil || n != 0 {
		t.Errorf("the dedup key's window outlived its message: exists %d, %v", n, err)
	}
	if _, created, err := s.Create(ctx, twin, herald.CreateOptions{DedupSince: t0}); err != nil || !created {
		t.Errorf("Create of a twin once pruned: created %v, %v; want a new message", created, err)
	}
}

// TestCircuitCloseKeepsOtherPause closes a circuit while the lane is
// paused by backpressure: that pause stays.
func TestCircuitCloseKeepsOtherPause(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"c": {Circuit: herald.Circuit{Failures: 1, CoolDown: time.Second}}}); err != nil {
		t.Fatal(err)
	}
	create(t, s, laneMessage("m1", "c", "A"), laneMessage("m2", "c", "A"))
	report := func(at time.Time, failed bool) herald.CircuitChange {
		t.Helper()
		ch, err := s.ReportCircuit(ctx, herald.CircuitReport{Route: "c", Lane: "A", At: at, Failed: failed})
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	if ch := report(t0, true); !ch.Opened || !ch.Until.Equal(t0.Add(time.Second)) {
		t.Fatalf("failure = %+v, want opened for a second", ch)
	}
	if got := claimIDs(t, s, t0.Add(time.Second)); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("claim after the cool-down = %v, want the probe m1", got)
	}
	transition(t, s, herald.Transition{ID: "m1", From: herald.StatusSentToNS, To: herald.StatusToRetry, At: t0.Add(time.Second),
		DueAt: t0.Add(time.Hour), PauseUntil: t0.Add(time.Minute), PauseReason: "backpressure"})
	if ch := report(t0.Add(time.Second), false); !ch.Closed {
		t.Fatalf("success = %+v, want closed", ch)
	}
	l, err := s.Lane(ctx, "c", "A", "")
	if err != nil || l.Circuit != "" || l.Failures != 0 || l.PauseReason != "backpressure" || !l.PausedUntil.Equal(t0.Add(time.Minute)) {
		t.Errorf("Lane = %+v, %v; want the circuit closed and the backpressure pause kept", l, err)
	}
	if got := claimIDs(t, s, t0.Add(2*time.Second)); len(got) != 0 {
		t.Errorf("claim during the backpressure pause = %v, want none", got)
	}
}
