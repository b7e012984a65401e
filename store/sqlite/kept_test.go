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
	h.seq++
	m := &herald.Message{ID: fmt.Sprintf("m%06d", h.seq), Tenant: "acme", Route: "k", Lane: lane, Text: "x",
		MaxAttempts: 3, CreatedAt: h.t0, UpdatedAt: h.t0, DueAt: h.t0}
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

// TestKeptRecount: a store opened again counts its kept lanes' messages in
// flight and QUEUED from the messages, and its reads of the lanes tell
// them.
func TestKeptRecount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a := herald.Admission{Concurrency: 2, ClaimAhead: 2}
	h := newKeptHarness(t, s, a)
	msgs := []string{h.create("A"), h.create("A"), h.create("A"), h.create("A")}
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
	if got := keptMemory(s); got != "k/A:{inflight:2 queued:2 owner: low:{prio:0 id:}} " {
		t.Errorf("memory after a reopen: %s", got)
	}
	lane, err := s.Lane(h.ctx, "k", "A", "acme")
	if err != nil || lane.Queued != 2 || !slices.Equal(lane.InFlight, msgs[:2]) {
		t.Errorf("Lane = queued %d, in flight %v, %v; want 2 and %v", lane.Queued, lane.InFlight, err, msgs[:2])
	}
	if got := h.claim(10); len(got) != 0 {
		t.Fatalf("claim with the lane's 2 in flight = %v, want none", got)
	}
	// The flights were claimed by the process before: the lane goes to
	// whichever node claims once they have all ended.
	h.deliver(msgs[0])
	if got := h.claim(10); len(got) != 0 {
		t.Fatalf("claim with one of the process before in flight = %v, want none", got)
	}
	lanes, err := s.Lanes(h.ctx, "k", 10)
	if err != nil || len(lanes) != 1 || lanes[0].Queued != 2 || !slices.Equal(lanes[0].InFlight, msgs[1:2]) {
		t.Errorf("Lanes = %+v, %v; want lane A, 2 queued, %v in flight", lanes, err, msgs[1:2])
	}
	h.deliver(msgs[1])
	if got := h.claim(10); !slices.Equal(got, msgs[2:]) {
		t.Fatalf("claim once they ended = %v, want %v", got, msgs[2:])
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
