package sqlite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// keptHarness is a Store with one kept route, "k" (kept.go).
type keptHarness struct {
	t   *testing.T
	ctx context.Context
	s   *Store
	t0  time.Time
	seq int
}

func newKeptHarness(t *testing.T, s *Store, a herald.Admission) *keptHarness {
	t.Helper()
	h := &keptHarness{t: t, ctx: context.Background(), s: s, t0: time.UnixMilli(1_700_000_000_000)}
	if err := s.SetAdmission(h.ctx, map[string]herald.Admission{"k": a}); err != nil {
		t.Fatal(err)
	}
	return h
}

// create stores a message of lane on the kept route and returns its id.
func (h *keptHarness) create(lane string) string {
	h.t.Helper()
	return h.createAt(lane, 0, 0)
}

// flood stores n messages of lane of priority prio, due now, and returns
// their ids.
func (h *keptHarness) flood(lane string, prio, n int) []string {
	h.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.createAt(lane, prio, 0)
	}
	return ids
}

// claims makes n claims of up to 10 messages and returns what they took,
// in order.
func (h *keptHarness) claims(n int) []string {
	h.t.Helper()
	var got []string
	for range n {
		got = append(got, h.claim(10)...)
	}
	return got
}

// wantClaimedDue fails unless 5 claims take id, now due, whose lane B has
// room.
func (h *keptHarness) wantClaimedDue(id string) {
	h.t.Helper()
	if got := h.claims(5); !slices.Contains(got, id) {
		h.t.Fatalf("5 claims once %s is due took %v, want it: lane B has room; memory %s", id, got, keptMemory(h.s))
	}
}

// createAt stores a message of lane of priority prio, due after due, and
// returns its id.
func (h *keptHarness) createAt(lane string, prio int, due time.Duration) string {
	h.t.Helper()
	h.seq++
	m := &herald.Message{ID: fmt.Sprintf("m%06d", h.seq), Tenant: "acme", Route: "k", Lane: lane, Text: "x",
		MaxAttempts: 3, CreatedAt: h.t0, UpdatedAt: h.t0, DueAt: h.t0.Add(due), Priority: prio}
	if _, _, err := h.s.Create(h.ctx, m, herald.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	return m.ID
}

func (h *keptHarness) claim(limit int) []string {
	h.t.Helper()
	got, err := h.s.Claim(h.ctx, herald.Claim{Now: h.t0, Limit: limit, GatedLimit: limit, DefaultAccept: time.Minute, Node: "n1"})
	if err != nil {
		h.t.Fatal(err)
	}
	ids := make([]string, len(got))
	for i, m := range got {
		ids[i] = m.ID
	}
	return ids
}

func (h *keptHarness) deliver(id string) {
	h.t.Helper()
	err := h.s.Transition(h.ctx, herald.Transition{ID: id, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: h.t0})
	if err != nil {
		h.t.Fatal(err)
	}
}

// TestKeptClaimOrder: a kept route's claim takes messages in claim order
// across lanes, one lane's after another's as they were made, not a lane
// at a time; a lane at its bound is passed over.
func TestKeptClaimOrder(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 2, ClaimAhead: 2})
	var a, b, c []string
	for range 3 {
		a, b, c = append(a, h.create("A")), append(b, h.create("B")), append(c, h.create("C"))
	}
	if got, want := h.claim(4), []string{a[0], b[0], c[0], a[1]}; !slices.Equal(got, want) {
		t.Fatalf("claim of 4 = %v, want %v: in order across the lanes", got, want)
	}
	if got, want := h.claim(10), []string{b[1], c[1]}; !slices.Equal(got, want) {
		t.Fatalf("next claim = %v, want %v: A is at its bound", got, want)
	}
	h.deliver(a[0])
	if got, want := h.claim(10), []string{a[2]}; !slices.Equal(got, want) {
		t.Fatalf("claim after one of A's ended = %v, want %v", got, want)
	}
}

// TestKeptSeekPastFlood: a lane whose next message lies further behind a
// flooded lane than a seek reads is reached over the next claims, each
// reading on from where the one before stopped.
func TestKeptSeekPastFlood(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 1, ClaimAhead: 1})
	b1 := h.create("B")
	flood := make([]*herald.Message, keptWindow+100)
	for i := range flood {
		h.seq++
		flood[i] = &herald.Message{ID: fmt.Sprintf("m%06d", h.seq), Tenant: "acme", Route: "k", Lane: "A", Text: "x",
			MaxAttempts: 3, CreatedAt: h.t0, UpdatedAt: h.t0, DueAt: h.t0}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(flood))
	for w := range 8 { // the writer groups concurrent creates
		wg.Go(func() {
			for i := w; i < len(flood); i += 8 {
				_, _, errs[i] = s.Create(h.ctx, flood[i], herald.CreateOptions{})
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	b2 := h.create("B")
	if got, want := h.claim(10), []string{b1, flood[0].ID}; !slices.Equal(got, want) {
		t.Fatalf("first claim = %v, want %v", got, want)
	}
	h.deliver(b1) // B has room again; its next message is past the flood
	var got []string
	claims := 0
	for ; claims < 3 && !slices.Contains(got, b2); claims++ {
		got = append(got, h.claim(10)...)
	}
	if !slices.Equal(got, []string{b2}) {
		t.Fatalf("%d claims took %v, want B's %s alone", claims, got, b2)
	}
	if claims != 2 {
		t.Errorf("B's message came with claim %d, want the second: the first reads %d entries of the flood", claims, keptWindow)
	}
}

// TestKeptRollBack: a transaction that rolls back undoes what its claims
// and transitions changed in the writer's memory.
func TestKeptRollBack(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 2, ClaimAhead: 2})
	a := []string{h.create("A"), h.create("A"), h.create("A")}
	before := keptMemory(s)
	boom := errors.New("boom")
	err := s.write(h.ctx, func(tx *wtx) error {
		if _, _, err := tx.claim(herald.Claim{Now: h.t0, Limit: 10, GatedLimit: 10, DefaultAccept: time.Minute, Node: "n1"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("write = %v, want %v", err, boom)
	}
	if after := keptMemory(s); after != before {
		t.Fatalf("memory after the rollback: %s, want as before: %s", after, before)
	}
	if got := h.claim(10); !slices.Equal(got, a[:2]) {
		t.Fatalf("claim after the rollback = %v, want %v", got, a[:2])
	}
}

// keptMemory returns the writer's memory of the kept lanes, as text. It
// reads it in the writer's goroutine.
func keptMemory(s *Store) string {
	var out string
	_ = s.write(context.Background(), func(tx *wtx) error {
		lanes := slices.SortedFunc(maps.Keys(tx.kept.lanes), func(a, b herald.LaneRef) int {
			return cmp.Or(strings.Compare(a.Route, b.Route), strings.Compare(a.Lane, b.Lane))
		})
		for _, l := range lanes {
			out += fmt.Sprintf("%s/%s:%+v ", l.Route, l.Lane, tx.kept.lanes[l])
		}
		return nil
	})
	return out
}

// TestKeptRecount: a store opened again counts its kept lanes' QUEUED
// messages from the messages; the flights of the process before it hold
// no slot (their calls ended with it): the lane's messages go at once, and
// the end of those flights frees none of the new ones' slots.
func TestKeptRecount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a := herald.Admission{Concurrency: 2, ClaimAhead: 2}
	h := newKeptHarness(t, s, a)
	msgs := []string{h.create("A"), h.create("A"), h.create("A"), h.create("A"), h.create("A")}
	if got := h.claim(10); !slices.Equal(got, msgs[:2]) {
		t.Fatalf("claim = %v, want %v", got, msgs[:2])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h = newKeptHarness(t, s, a)
	h.seq = len(msgs)
	if got := keptMemory(s); got != "k/A:{inflight:0 queued:3 owner: low:{prio:0 id:} quiet:0} " {
		t.Errorf("memory after a reopen: %s", got)
	}
	lane, err := s.Lane(h.ctx, "k", "A", "acme")
	if err != nil || lane.Queued != 3 || len(lane.InFlight) != 0 {
		t.Errorf("Lane = queued %d, in flight %v, %v; want 3 and none: the process before's flights hold no slot", lane.Queued, lane.InFlight, err)
	}
	if got := h.claim(10); !slices.Equal(got, msgs[2:4]) {
		t.Fatalf("claim after the reopen = %v, want %v", got, msgs[2:4])
	}
	h.deliver(msgs[0]) // a flight of the process before ends: no slot frees
	if got := h.claim(10); len(got) != 0 {
		t.Fatalf("claim after a flight of the process before ended = %v, want none: two of this one's in flight", got)
	}
	lanes, err := s.Lanes(h.ctx, herald.LaneQuery{Route: "k", Limit: 10})
	if err != nil || len(lanes) != 1 || lanes[0].Queued != 1 || !slices.Equal(lanes[0].InFlight, msgs[2:4]) {
		t.Errorf("Lanes = %+v, %v; want lane A, 1 queued, %v in flight", lanes, err, msgs[2:4])
	}
	h.deliver(msgs[2])
	if got := h.claim(10); !slices.Equal(got, msgs[4:]) {
		t.Fatalf("claim once one of this one's ended = %v, want %v", got, msgs[4:])
	}
}

// TestOneWriterAtATime: a database open in one Store cannot be opened by
// another until the first closes.
func TestOneWriterAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Open(path); err == nil || !strings.Contains(err.Error(), "in use by another herald process") {
		if again != nil {
			again.Close()
		}
		t.Fatalf("second Open = %v, want an error saying the database is in use", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s.Close()
}

// keptCounts returns, per kept lane, "inflight/queued" as the writer's
// memory holds them and as the messages say.
func keptCounts(t *testing.T, s *Store) (mem, db map[string]string) {
	t.Helper()
	mem, db = map[string]string{}, map[string]string{}
	err := s.write(context.Background(), func(tx *wtx) error {
		for l, v := range tx.kept.lanes {
			mem[l.Lane] = fmt.Sprintf("%d/%d", v.inflight, v.queued)
		}
		rows, err := tx.conn.QueryContext(context.Background(), `SELECT lane,
				SUM(status IN ('SENT_TO_NS', 'DELIVERED_TO_NS', 'SENT_TO_DEVICE')), SUM(status = 'QUEUED')
			FROM messages WHERE gated = 3 GROUP BY lane`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var lane string
			var f, q int
			if err := rows.Scan(&lane, &f, &q); err != nil {
				return err
			}
			if f+q > 0 {
				db[lane] = fmt.Sprintf("%d/%d", f, q)
			}
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return mem, db
}

// TestKeptSeekTakesNoMessageTwice: a lane whose message the walk took
// before a flooded lane held it up is sought past that message: the seek
// takes the lane's next one, not the same one again (which the claim would
// change once and the memory count twice).
func TestKeptSeekTakesNoMessageTwice(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 2, ClaimAhead: 2})
	b1 := h.create("B")
	var a []string
	for range keptSkips + 10 {
		a = append(a, h.create("A"))
	}
	b2 := h.create("B")
	if got, want := h.claim(10), []string{b1, a[0], a[1], b2}; !slices.Equal(got, want) {
		t.Errorf("claim = %v, want %v: B has room for b2", got, want)
	}
	h.deliver(b1)
	if mem, db := keptCounts(t, s); fmt.Sprint(mem) != fmt.Sprint(db) {
		t.Errorf("after b1 ended, memory (in flight/queued) %v, messages %v", mem, db)
	}
}

// TestKeptLowKeepsNotDueMessages: a lane's low must not pass a QUEUED
// message that was not due yet: once it is due, a flooded lane ahead of it
// in claim order must not keep it back (the seek finds it).
func TestKeptLowKeepsNotDueMessages(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 2, ClaimAhead: 2})
	a := h.flood("A", 0, keptSkips+10)
	// B: one message due in a minute, then one due now.
	late := h.createAt("B", 0, time.Minute)
	b1 := h.create("B")
	if got, want := h.claim(10), []string{a[0], a[1], b1}; !slices.Equal(got, want) {
		t.Fatalf("claim = %v, want %v", got, want)
	}
	h.deliver(b1)
	h.t0 = h.t0.Add(time.Minute) // late is due; A is still at its bound
	got := h.claims(5)
	if !slices.Equal(got, []string{late}) {
		t.Fatalf("5 claims once %s is due took %v, want it: lane A at its bound keeps it back", late, got)
	}
}

// TestKeptKeepsSpacing: a ClaimAhead route with a spacing (the Store
// interface allows it; the engine does not make one) still spaces its
// lanes' dispatches.
func TestKeptKeepsSpacing(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 5, ClaimAhead: 5, Spacing: time.Minute})
	a := []string{h.create("A"), h.create("A"), h.create("A")}
	if got := h.claim(10); !slices.Equal(got, a[:1]) {
		t.Fatalf("claim = %v, want %v: one a minute", got, a[:1])
	}
}

// TestKeptSeekKeepsPriorityOrder: a seek whose window ends inside its
// priority must not go on to lower priorities: the lane's message of that
// priority past the window would be passed over, and then sit before the
// lane's low, which no later seek reads.
func TestKeptSeekKeepsPriorityOrder(t *testing.T) {
	s := open(t)
	defer s.Close()
	a := herald.Admission{Concurrency: 1, ClaimAhead: 1}
	h := newKeptHarness(t, s, a)
	mk := func(lane string, prio int) *herald.Message {
		h.seq++
		return &herald.Message{ID: fmt.Sprintf("m%06d", h.seq), Tenant: "acme", Route: "k", Lane: lane, Text: "x",
			MaxAttempts: 3, CreatedAt: h.t0, UpdatedAt: h.t0, DueAt: h.t0, Priority: prio}
	}
	flood := make([]*herald.Message, keptWindow+100)
	for i := range flood {
		flood[i] = mk("A", 1)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(flood); i += 8 {
				if _, _, err := s.Create(h.ctx, flood[i], herald.CreateOptions{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	high, low := mk("B", 1), mk("B", 0)
	for _, m := range []*herald.Message{high, low} {
		if _, _, err := s.Create(h.ctx, m, herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// SetAdmission counts the lanes again: B's low is the start of priority 1.
	if err := s.SetAdmission(h.ctx, map[string]herald.Admission{"k": a}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 4 {
		got = append(got, h.claim(10)...)
	}
	want := []string{flood[0].ID, high.ID}
	if !slices.Equal(got, want) {
		t.Errorf("4 claims took %v, want %v: B's priority 1 message before its priority 0 one", got, want)
		for _, id := range got {
			if id == low.ID {
				h.deliver(id)
			}
		}
		var more []string
		for range 10 {
			more = append(more, h.claim(10)...)
		}
		t.Errorf("10 claims after %s ended took %v; memory %s", low.ID, more, keptMemory(s))
	}
}

// TestKeptLaneNotStuckByPhantomFlights: after rounds of walks held up by
// a flooded lane and seeks, every message is claimed as a node with one
// lane busy claims (its concurrency only): the memory counts no flight that no
// message has.
func TestKeptLaneNotStuckByPhantomFlights(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 1, ClaimAhead: 3})
	for round := range 2 {
		h.createAt("B", 5+round, 0)
		h.flood("A", 4-round, keptSkips+6)
		h.createAt("B", 0, 0)
		for _, id := range h.claim(10) {
			h.deliver(id)
		}
	}
	t.Logf("memory: %s", keptMemory(s))
	// Drain everything, as a node with one lane busy claims (its concurrency only).
	for range 200 {
		got, err := s.Claim(h.ctx, herald.Claim{Now: h.t0, Limit: 10, GatedLimit: 10, DefaultAccept: time.Minute, Node: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, m := range got {
			h.deliver(m.ID)
		}
	}
	if mem, db := keptCounts(t, s); len(db) > 0 {
		t.Fatalf("QUEUED messages never claimed: memory (in flight/queued) %v, messages %v", mem, db)
	}
}

// TestKeptLowAfterNetZeroStatement: one statement of transitions that
// queues a message of a lane again and takes another out of QUEUED leaves
// the lane's count as it was, but the low must still come before the
// message queued again.
func TestKeptLowAfterNetZeroStatement(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 2, ClaimAhead: 2})
	x, y, z := h.create("B"), h.create("B"), h.create("B")
	if got := h.claim(2); !slices.Equal(got, []string{x, y}) {
		t.Fatalf("claim = %v", got)
	}
	if err := s.Transition(h.ctx, herald.Transition{ID: x, From: herald.StatusSentToNS, To: herald.StatusToRetry, At: h.t0, DueAt: h.t0}); err != nil {
		t.Fatal(err)
	}
	err := s.write(h.ctx, func(tx *wtx) error {
		out, err := tx.transitions([]*herald.Transition{
			{ID: x, From: herald.StatusToRetry, To: herald.StatusQueued, At: h.t0, DueAt: h.t0},
			{ID: z, From: herald.StatusQueued, To: herald.StatusCancelled, At: h.t0},
		})
		if err == nil {
			err = errors.Join(out...)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var low keptKey
	_ = s.write(h.ctx, func(tx *wtx) error { low = tx.kept.lanes[herald.LaneRef{Route: "k", Lane: "B"}].low; return nil })
	if (keptKey{0, x}).before(low) {
		t.Fatalf("B's low = %+v, past %s, which is QUEUED", low, x)
	}
}

// TestKeptCountsFollowEveryChange: the writer's memory of a kept lane
// matches its messages after every kind of change of status: claims,
// retries and their release, failures and their replay, cancels, and
// SetAdmission's moves of the route out of the kept ones and back.
func TestKeptCountsFollowEveryChange(t *testing.T) {
	s := open(t)
	defer s.Close()
	a := herald.Admission{Concurrency: 3, ClaimAhead: 3}
	h := newKeptHarness(t, s, a)
	check := func(step string) {
		t.Helper()
		if mem, db := keptCounts(t, s); fmt.Sprint(mem) != fmt.Sprint(db) {
			t.Fatalf("after %s: memory (in flight/queued) %v, messages %v", step, mem, db)
		}
	}
	tr := func(id string, from, to herald.Status, opts ...func(*herald.Transition)) {
		t.Helper()
		x := herald.Transition{ID: id, From: from, To: to, At: h.t0}
		for _, o := range opts {
			o(&x)
		}
		if err := s.Transition(h.ctx, x); err != nil {
			t.Fatalf("%s %s → %s: %v", id, from, to, err)
		}
	}
	m := []string{h.create("A"), h.create("A"), h.create("A"), h.create("A"), h.create("B")}
	check("creates")
	claimed := h.claim(3)
	check("a claim")
	tr(claimed[0], herald.StatusSentToNS, herald.StatusToRetry, func(x *herald.Transition) { x.DueAt = h.t0 })
	check("a retry")
	if _, err := s.Release(h.ctx, h.t0, 10); err != nil {
		t.Fatal(err)
	}
	check("its release")
	tr(claimed[1], herald.StatusSentToNS, herald.StatusDeliveredToNS)
	tr(claimed[1], herald.StatusDeliveredToNS, herald.StatusDeliveryFailed)
	check("a failure")
	tr(claimed[1], herald.StatusDeliveryFailed, herald.StatusQueued, func(x *herald.Transition) { x.DueAt, x.ResetAttempts = h.t0, true })
	check("its replay")
	tr(m[4], herald.StatusQueued, herald.StatusCancelled)
	check("a cancel")
	if err := s.SetAdmission(h.ctx, map[string]herald.Admission{"k": {Concurrency: 3}}); err != nil {
		t.Fatal(err)
	}
	if got := keptMemory(s); got != "" {
		t.Fatalf("memory with the route no longer kept: %s, want none", got)
	}
	if err := s.SetAdmission(h.ctx, map[string]herald.Admission{"k": a}); err != nil {
		t.Fatal(err)
	}
	check("the route kept again")
	// The flight from before the recounts has no owner now (as after a
	// restart): the lane goes to whichever node claims once it ends.
	h.deliver(claimed[2])
	for range 5 {
		for _, id := range h.claim(10) {
			h.deliver(id)
		}
	}
	check("draining")
	if mem, _ := keptCounts(t, s); len(mem) != 0 {
		t.Errorf("memory after everything ended: %v, want none", mem)
	}
}

// TestKeptRollBackOfTransitionsAndAdmission: a transaction that rolls
// back after grouped transitions, or after a SetAdmission, leaves the
// writer's memory and rules as they were.
func TestKeptRollBackOfTransitionsAndAdmission(t *testing.T) {
	s := open(t)
	defer s.Close()
	a := herald.Admission{Concurrency: 2, ClaimAhead: 2}
	h := newKeptHarness(t, s, a)
	ids := []string{h.create("A"), h.create("A"), h.create("B")}
	claimed := h.claim(10)
	if len(claimed) != 3 {
		t.Fatalf("claim = %v, want all 3", claimed)
	}
	before := keptMemory(s)
	boom := errors.New("boom")
	err := s.write(h.ctx, func(tx *wtx) error {
		out, err := tx.transitions([]*herald.Transition{
			{ID: ids[0], From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: h.t0},
			{ID: ids[2], From: herald.StatusSentToNS, To: herald.StatusToRetry, At: h.t0, DueAt: h.t0},
		})
		if err == nil {
			err = errors.Join(out...)
		}
		if err == nil {
			err = boom
		}
		return err
	})
	if !errors.Is(err, boom) {
		t.Fatalf("write = %v, want %v", err, boom)
	}
	if after := keptMemory(s); after != before {
		t.Fatalf("memory after grouped transitions rolled back: %s, want %s", after, before)
	}
	err = s.write(h.ctx, func(tx *wtx) error {
		if err := tx.setAdmission(map[string]herald.Admission{"k": {Concurrency: 2}}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("write = %v, want %v", err, boom)
	}
	if after := keptMemory(s); after != before {
		t.Fatalf("memory after a SetAdmission rolled back: %s, want %s", after, before)
	}
	var kept string
	_ = s.write(h.ctx, func(tx *wtx) error { kept = tx.keptJSON; return nil })
	if kept != `["k"]` {
		t.Errorf("kept routes after a SetAdmission rolled back: %s, want [\"k\"]", kept)
	}
	h.deliver(ids[0])
	if got := h.claim(10); len(got) != 0 {
		t.Errorf("claim = %v, want none: the lanes' messages are all in flight or ended", got)
	}
	if mem, db := keptCounts(t, s); fmt.Sprint(mem) != fmt.Sprint(db) {
		t.Errorf("memory (in flight/queued) %v, messages %v", mem, db)
	}
}

// TestKeptSeekPastTheWalkKeepsNotDue: the walk takes b1 of lane B and
// passes over B's message n, before b1 but not due yet; the seek of B then
// starts past b1 and finds nothing of B, which must not move B's low past
// n: once n is due and a flooded lane holds the walk up before it, a seek
// reads n, and lane B, with room, gets it.
func TestKeptSeekPastTheWalkKeepsNotDue(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 2, ClaimAhead: 2})
	n := h.createAt("B", 0, time.Minute) // due in a minute
	b1 := h.createAt("B", 0, 0)
	a := h.flood("A", 0, keptSkips+6)
	c := h.createAt("C", -1, 0) // a lower priority: the seek of B reads on into it
	if got, want := h.claim(10), []string{b1, a[0], a[1], c}; !slices.Equal(got, want) {
		t.Fatalf("first claim = %v, want %v", got, want)
	}
	// More of A, of a higher priority, before n in claim order; A stays at
	// its bound.
	h.flood("A", 1, keptSkips+6)
	h.t0 = h.t0.Add(time.Minute) // n is due; B has room for one more
	h.wantClaimedDue(n)
}

// TestKeptSeekIntoLowerPriorityKeepsNotDue: a seek that reads lane B's
// message n, not due yet, in one priority and finds none of B in the next
// must not move B's low past that next priority, past n: once n is due, a
// flooded lane ahead must not keep it back.
func TestKeptSeekIntoLowerPriorityKeepsNotDue(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 2, ClaimAhead: 2})
	a := h.flood("A", 5, keptSkips+6)
	n := h.createAt("B", 2, time.Minute) // due in a minute
	c := h.createAt("C", 1, 0)
	b := h.createAt("B", 0, 0)
	if got, want := h.claim(10), []string{a[0], a[1], c, b}; !slices.Equal(got, want) {
		t.Fatalf("first claim = %v, want %v", got, want)
	}
	h.t0 = h.t0.Add(time.Minute) // n is due; B has room for one more, A none
	h.wantClaimedDue(n)
}

// TestKeptSeekPassesOverQuietLanes: the keptSeeks lanes whose low comes
// first hold only messages not due (a replay spread over time, say); once
// a seek found that, they are quiet and the next claims seek lane C, whose
// message is due, rather than leave it behind the flooded lane A until
// theirs are due, an hour here.
func TestKeptSeekPassesOverQuietLanes(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 2, ClaimAhead: 2})
	for i := range keptSeeks {
		h.createAt(fmt.Sprintf("B%02d", i), 0, time.Hour)
	}
	a := h.flood("A", 0, keptSkips+6)
	c := h.createAt("C", 0, 0)
	got := h.claims(5)
	if want := []string{a[0], a[1], c}; !slices.Equal(got, want) {
		t.Fatalf("5 claims took %v, want %v: A at its bound keeps C's message back", got, want)
	}
}

// TestKeptSeekTakesInClaimOrderAcrossLanes: lane X's low stays at its
// message of priority 5 that a claim took, so the next claim's seek reads X
// first and finds X's priority 0 message; a claim of one must still take
// lane Y's priority 3 message, due and with room, first.
func TestKeptSeekTakesInClaimOrderAcrossLanes(t *testing.T) {
	s := open(t)
	defer s.Close()
	h := newKeptHarness(t, s, herald.Admission{Concurrency: 2, ClaimAhead: 2})
	a := h.flood("A", 9, keptSkips+6)
	x1, x2 := h.createAt("X", 5, 0), h.createAt("X", 0, 0)
	y := h.createAt("Y", 3, 0)
	if got, want := h.claim(3), []string{a[0], a[1], x1}; !slices.Equal(got, want) {
		t.Fatalf("first claim = %v, want %v", got, want)
	}
	if got, want := h.claim(1), []string{y}; !slices.Equal(got, want) {
		t.Fatalf("claim of one = %v, want %v (priority 3, lane Y has room), not %s (priority 0)", got, want, x2)
	}
}
