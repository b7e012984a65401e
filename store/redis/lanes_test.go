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
// the delivered message, and its target's dedup state once untouched
// since the cut, and a former version's entry in its key's window.
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
	if err := s.client.ZAdd(ctx, s.key("dd:acme|r1|hash-1"), goredis.Z{Score: 1, Member: "d1"}).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Prune(ctx, t0.Add(time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	for _, k := range []string{"dd:acme|r1|hash-1", "last:acme|r1|" + m.Target, "lasts"} {
		if n, err := s.client.Exists(ctx, s.key(k)).Result(); err != nil || n != 0 {
			t.Errorf("%s outlived the prune: exists %d, %v", k, n, err)
		}
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

// claimAll makes 20 claims of up to 10 messages at now (a lane whose
// messages looked at all wait for their targets' turn may have others
// that go at the next claim), and returns the ids in claim order.
func claimAll(t *testing.T, s *Store, now time.Time) []string {
	t.Helper()
	var all []string
	for range 20 {
		all = append(all, claimIDs(t, s, now)...)
	}
	return all
}

// TestOrderedMixedPriorities fills an ordered lane with more targets than
// a claim looks at, each with a message of low priority and then one of
// high priority: the high ones, first in the lane, wait for their
// targets' low ones, which go meanwhile, all of them; the high ones go as
// the low ones end.
func TestOrderedMixedPriorities(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"o": {Ordered: true}}); err != nil {
		t.Fatal(err)
	}
	const devices = 70
	var low, high []string
	for i := range devices {
		lo := targeted(fmt.Sprintf("m%03d", 2*i), "o", "A", fmt.Sprintf("dev-%d", i))
		hi := targeted(fmt.Sprintf("m%03d", 2*i+1), "o", "A", fmt.Sprintf("dev-%d", i))
		hi.Priority = 5
		create(t, s, lo, hi)
		low, high = append(low, lo.ID), append(high, hi.ID)
	}
	if got := claimAll(t, s, t0); !slices.Equal(got, low) {
		t.Fatalf("claims took %v, want the %d first messages of the targets, in order: %v", got, devices, low)
	}
	for i, id := range low {
		transition(t, s, herald.Transition{ID: id, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0})
		if i == 2 {
			if got := claimAll(t, s, t0); !slices.Equal(got, high[:3]) {
				t.Fatalf("claims after 3 ended took %v, want %v", got, high[:3])
			}
		}
	}
	if got := claimAll(t, s, t0); !slices.Equal(got, high[3:]) {
		t.Errorf("claims after the first ones ended took %v, want %v", got, high[3:])
	}
}

// TestOrderedPriorityAmongAdmissible keeps the lane's order by priority
// among the messages that may go: a message of high priority waiting for
// its target's turn does not push its target's older message of low
// priority ahead of another target's message of middle priority.
func TestOrderedPriorityAmongAdmissible(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	if err := s.SetAdmission(t.Context(), map[string]herald.Admission{"o": {Ordered: true, Concurrency: 1}}); err != nil {
		t.Fatal(err)
	}
	m1, m2, m3 := targeted("m1", "o", "A", "T"), targeted("m2", "o", "A", "T"), targeted("m3", "o", "A", "U")
	m2.Priority, m3.Priority = 5, 3
	create(t, s, m1, m2, m3)
	for _, want := range []string{"m3", "m1", "m2"} {
		got := claimIDs(t, s, t0)
		if !slices.Equal(got, []string{want}) {
			t.Fatalf("claim = %v, want %s", got, want)
		}
		transition(t, s, herald.Transition{ID: want, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0})
	}
}

// TestOrderedLazilyHeld has a lane whose first messages wait for their
// target's turn without the store knowing yet (as after a replay makes an
// older message of the target active again, or a version before kept
// them): the claims find them waiting and let the lane's other message
// go, and a claim looks at no more than a lane's first 64 messages, so
// that it keeps no other lane back long.
func TestOrderedLazilyHeld(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, "")
	ctx := t.Context()
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"o": {Ordered: true}}); err != nil {
		t.Fatal(err)
	}
	msgs := []*herald.Message{targeted("m000", "o", "A", "T")}
	for i := 1; i <= 300; i++ {
		msgs = append(msgs, targeted(fmt.Sprintf("m%03d", i), "o", "A", "T"))
	}
	create(t, s, msgs...)
	create(t, s, targeted("m999", "o", "A", "U"), targeted("n1", "o", "B", "V"))
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m000", "m999", "n1"}) {
		t.Fatalf("claim = %v, want m000, m999 and n1", got)
	}
	// Forget that T's queued messages wait for m000.
	for _, m := range msgs[1:] {
		if err := s.client.ZAdd(ctx, s.key("lq:o|A"), goredis.Z{Member: m.ID}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	create(t, s, targeted("m998", "o", "A", "W"), targeted("n2", "o", "B", "X"))
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer admin.Close()
	var got []string
	for i := range 8 {
		if err := admin.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		ids := claimIDs(t, s, t0)
		if i == 0 && !slices.Contains(ids, "n2") {
			t.Errorf("first claim = %v, want n2 among them", ids)
		}
		n := commands(t, admin)
		t.Logf("claim %d: %v, %d commands", i, ids, n)
		if n > 4*64+50 {
			t.Errorf("claim %d ran %d commands; want at most 4 for each of 64 messages, and 50", i, n)
		}
		got = append(got, ids...)
	}
	if !slices.Equal(got, []string{"n2", "m998"}) {
		t.Fatalf("claims took %v, want n2 and then m998", got)
	}
	if l, err := s.Lane(ctx, "o", "A", ""); err != nil || l.Queued != 300 {
		t.Fatalf("Lane = %+v, %v; want T's 300 queued", l, err)
	}
	transition(t, s, herald.Transition{ID: "m000", From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0})
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m001"}) {
		t.Errorf("claim after m000 ended = %v, want m001", got)
	}
}

// TestPauseNeverShortened pauses a lane twice, by a circuit that opens and
// by backpressure, in both orders: the longer pause holds, with its
// reason, and closing the circuit ends only its own pause.
func TestPauseNeverShortened(t *testing.T) {
	rules := map[string]herald.Admission{"c": {Circuit: herald.Circuit{Failures: 1, CoolDown: time.Minute}}}
	setup := func(t *testing.T) *Store {
		s := open(t, redistest.Start(t), "")
		if err := s.SetAdmission(t.Context(), rules); err != nil {
			t.Fatal(err)
		}
		create(t, s, laneMessage("m1", "c", "A"), laneMessage("m2", "c", "A"))
		if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m1", "m2"}) {
			t.Fatalf("claim = %v, want both", got)
		}
		return s
	}
	report := func(t *testing.T, s *Store, at time.Time, failed bool) herald.CircuitChange {
		t.Helper()
		ch, err := s.ReportCircuit(t.Context(), herald.CircuitReport{Route: "c", Lane: "A", At: at, Failed: failed})
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	backpressure := func(t *testing.T, s *Store, id string, until time.Time) {
		t.Helper()
		transition(t, s, herald.Transition{ID: id, From: herald.StatusSentToNS, To: herald.StatusToRetry, At: t0, DueAt: t0,
			UndoAttempt: true, PauseUntil: until, PauseReason: "backpressure"})
		if _, err := s.Release(t.Context(), t0, 10); err != nil {
			t.Fatal(err)
		}
	}
	paused := func(t *testing.T, s *Store, until time.Time, why string) {
		t.Helper()
		l, err := s.Lane(t.Context(), "c", "A", "")
		if err != nil || !l.PausedUntil.Equal(until) || l.PauseReason != why {
			t.Errorf("Lane paused until %v for %q, %v; want %v for %q", l.PausedUntil, l.PauseReason, err, until, why)
		}
	}

	t.Run("CircuitThenBackpressure", func(t *testing.T) {
		s := setup(t)
		if ch := report(t, s, t0, true); !ch.Opened {
			t.Fatalf("failure = %+v, want opened", ch)
		}
		backpressure(t, s, "m1", t0.Add(time.Second))
		paused(t, s, t0.Add(time.Minute), "circuit_open")
		if got := claimIDs(t, s, t0.Add(2*time.Second)); len(got) != 0 {
			t.Errorf("claim after the backpressure's second, within the cool-down = %v, want none", got)
		}
	})

	t.Run("BackpressureThenCircuit", func(t *testing.T) {
		s := setup(t)
		backpressure(t, s, "m1", t0.Add(time.Hour))
		if ch := report(t, s, t0, true); !ch.Opened {
			t.Fatalf("failure = %+v, want opened", ch)
		}
		paused(t, s, t0.Add(time.Hour), "backpressure")
		if got := claimIDs(t, s, t0.Add(2*time.Minute)); len(got) != 0 {
			t.Errorf("claim after the cool-down, within the backpressure = %v, want none", got)
		}
		if ch := report(t, s, t0.Add(2*time.Minute), false); !ch.Closed {
			t.Fatalf("success = %+v, want closed", ch)
		}
		paused(t, s, t0.Add(time.Hour), "backpressure")
		if got := claimIDs(t, s, t0.Add(3*time.Minute)); len(got) != 0 {
			t.Errorf("claim once the circuit closed, within the backpressure = %v, want none", got)
		}
		if got := claimIDs(t, s, t0.Add(time.Hour)); !slices.Equal(got, []string{"m1"}) {
			t.Errorf("claim after the backpressure = %v, want m1", got)
		}
	})

	t.Run("LongerBackpressureThenShorter", func(t *testing.T) {
		s := setup(t)
		backpressure(t, s, "m1", t0.Add(time.Minute))
		transition(t, s, herald.Transition{ID: "m2", From: herald.StatusSentToNS, To: herald.StatusToRetry, At: t0, DueAt: t0,
			PauseUntil: t0.Add(time.Second), PauseReason: "slow down"})
		paused(t, s, t0.Add(time.Minute), "backpressure")
		transition(t, s, herald.Transition{ID: "m2", From: herald.StatusToRetry, To: herald.StatusToRetry, At: t0, DueAt: t0,
			PauseUntil: t0.Add(time.Minute), PauseReason: "slow down"})
		paused(t, s, t0.Add(time.Minute), "slow down")
	})
}

// TestLaneRecountWithSameRules leaks a slot (an id in a lane's in-flight
// set that no message holds) and loses one (a message in flight missing
// from it): SetAdmission with the rules unchanged counts the lane's
// messages in flight afresh all the same.
func TestLaneRecountWithSameRules(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	rules := map[string]herald.Admission{"g": {Concurrency: 2}, "h": {Concurrency: 1}}
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	create(t, s, laneMessage("m1", "g", "A"), laneMessage("m2", "g", "A"), laneMessage("m3", "g", "A"),
		laneMessage("n1", "h", "B"), laneMessage("n2", "h", "B"), message("u1"))
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m1", "m2", "n1", "u1"}) {
		t.Fatalf("claim = %v, want m1, m2, n1 and u1", got)
	}
	transition(t, s, herald.Transition{ID: "m2", From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0})
	if err := s.client.ZAdd(ctx, s.key("lin:g|A"), goredis.Z{Member: "ghost"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.client.ZRem(ctx, s.key("lin:h|B"), "n1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Lane(ctx, "g", "A", ""); err != nil || !slices.Equal(l.InFlight, []string{"m1"}) {
		t.Errorf("Lane g/A = %+v, %v; want m1 alone in flight", l, err)
	}
	if l, err := s.Lane(ctx, "h", "B", ""); err != nil || !slices.Equal(l.InFlight, []string{"n1"}) {
		t.Errorf("Lane h/B = %+v, %v; want n1 in flight", l, err)
	}
	if got := claimIDs(t, s, t0); !slices.Equal(got, []string{"m3"}) {
		t.Errorf("claim after the recount = %v, want m3 (and not n2: n1 holds h/B's one slot)", got)
	}
}

// TestOrderedUngatedByPriority ungates an ordered route whose lane holds
// a message waiting for its target's turn: the ungated claims take them
// all by priority again.
func TestOrderedUngatedByPriority(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"o": {Ordered: true}}); err != nil {
		t.Fatal(err)
	}
	m1, m2, m3 := targeted("m1", "o", "A", "T"), targeted("m2", "o", "A", "T"), targeted("m3", "o", "A", "U")
	m2.Priority, m3.Priority = 5, 3
	create(t, s, m1, m2, m3)
	if err := s.SetAdmission(ctx, map[string]herald.Admission{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 10, DefaultAccept: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"m2", "m3", "m1"}) {
		t.Errorf("ungated claim = %v, want m2, m3, m1", ids)
	}
}
