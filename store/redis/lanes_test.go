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
	if err := s.client.HSet(ctx, s.key("m:old"), "k", strings.TrimSuffix(k, "|A")).Err(); err != nil {
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
