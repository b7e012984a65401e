package herald

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald/clock"
)

// transitionLog is a Store that records the transitions it is given; no
// other method of it is used.
type transitionLog struct {
	Store
	mu   sync.Mutex
	seen []Transition
}

func (s *transitionLog) Transition(_ context.Context, t Transition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, t)
	return nil
}

// transitions returns the transitions recorded, by message id.
func (s *transitionLog) transitions() []Transition {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := append([]Transition(nil), s.seen...)
	slices.SortFunc(ts, func(a, b Transition) int { return strings.Compare(a.ID, b.ID) })
	return ts
}

// countingCarrier is a direct carrier that counts its calls.
type countingCarrier struct {
	mu    sync.Mutex
	calls int
}

func (c *countingCarrier) Path() Path              { return PathDirect }
func (c *countingCarrier) Validate(*Message) error { return nil }
func (c *countingCarrier) Send(context.Context, *Message) (SendResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return SendResult{}, nil
}

// bufferRig is an engine, not started, on a fake clock, whose prefetched
// buffer a test fills itself: as it would be once calls as fast as the
// store's claims let pace claim ahead, and then slowed down.
type bufferRig struct {
	e       *Engine
	store   *transitionLog
	carrier *countingCarrier
	clock   *clock.Fake
}

// t0 is the bufferRig's start.
var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// newBufferRig returns a bufferRig with one send slot and the direct route
// "r" (accept timeout 20 s), capped at concurrency calls per lane when
// concurrency > 0 (so the engine keeps its lanes: ClaimAhead).
func newBufferRig(t *testing.T, concurrency int) *bufferRig {
	t.Helper()
	p, _ := ProfilePolicy(ProfileChannel)
	p.Admission = Admission{Concurrency: concurrency}
	rig := &bufferRig{store: &transitionLog{}, carrier: &countingCarrier{}, clock: clock.NewFake(t0)}
	e, err := New(Config{Store: rig.store, Clock: rig.clock, Concurrency: 1,
		Routes: []Route{{Name: "r", Carrier: rig.carrier, Policy: p}}})
	if err != nil {
		t.Fatal(err)
	}
	rig.e = e
	return rig
}

// prefetch puts claimed messages of lane in the buffer, each claimed at t0
// (deadline t0 + 20 s) with its pending token, as a claim does.
func (rig *bufferRig) prefetch(lane string, n int) []*Message {
	var msgs []*Message
	for i := range n {
		m := &Message{ID: lane + string(rune('a'+i)), Route: "r", Lane: lane, Status: StatusSentToNS, Attempt: 1,
			Lease: int64(i + 1), Deadline: t0.Add(20 * time.Second), MaxAttempts: 3, CreatedAt: t0}
		rig.e.pending <- struct{}{}
		msgs = append(msgs, m)
	}
	rig.e.dispatchMu.Lock()
	rig.e.prefetch(msgs)
	rig.e.dispatchMu.Unlock()
	return msgs
}

// start runs startPrefetched at the clock's time, and waits for the sends
// and hand-backs it started.
func (rig *bufferRig) start() {
	rig.e.dispatchMu.Lock()
	rig.e.startPrefetched()
	rig.e.dispatchMu.Unlock()
	rig.e.sends.Wait()
}

// TestStaleClaimIsNotSent: a claimed message that waited for a send slot
// until less than half its accept timeout is left is not sent (the reaper
// retries it after its deadline, so no send overlaps the retry's), and its
// pending token comes back.
func TestStaleClaimIsNotSent(t *testing.T) {
	rig := newBufferRig(t, 0)
	rig.prefetch("L", 1)
	rig.clock.Advance(15 * time.Second) // 5 s of its 20 s left
	rig.start()
	if rig.carrier.calls != 0 || len(rig.e.pending) != 0 || len(rig.e.prefetched) != 0 {
		t.Fatalf("%d calls, %d pending tokens, %d buffered; want the stale claim dropped unsent", rig.carrier.calls, len(rig.e.pending), len(rig.e.prefetched))
	}
	if ts := rig.store.transitions(); len(ts) != 0 {
		t.Fatalf("transitions %+v, want none: the reaper retries it at its deadline", ts)
	}
}

// TestKeptLaneHandsBackAMessageThatWaitedTooLong: a message of a lane the
// node keeps, claimed ahead while its calls were fast, that waited for a
// call of its lane (the lane's one call held) until less than half its
// accept timeout is left, is handed back: TO_RETRY, due at once, reason
// "lane busy", its attempt undone, unsent.
func TestKeptLaneHandsBackAMessageThatWaitedTooLong(t *testing.T) {
	rig := newBufferRig(t, 1)
	rig.e.laneCalls[LaneRef{"r", "L"}] = 1 // the lane's one call is under way
	msgs := rig.prefetch("L", 2)
	rig.start()
	if rig.carrier.calls != 0 || len(rig.e.prefetched) != 2 {
		t.Fatalf("%d calls, %d buffered; want both waiting for the lane's call", rig.carrier.calls, len(rig.e.prefetched))
	}
	rig.clock.Advance(11 * time.Second) // 9 s of 20 s left
	rig.start()
	ts := rig.store.transitions()
	if len(ts) != 2 || rig.carrier.calls != 0 {
		t.Fatalf("after 11 s: transitions %+v, %d calls; want both handed back, unsent", ts, rig.carrier.calls)
	}
	for i, tr := range ts {
		want := Transition{ID: msgs[i].ID, From: StatusSentToNS, To: StatusToRetry, Lease: msgs[i].Lease, At: t0.Add(11 * time.Second),
			DueAt: t0.Add(11 * time.Second), Reason: "lane busy", LastError: "waited too long for a call of its lane", UndoAttempt: true}
		tr.Notify = nil
		if !reflect.DeepEqual(tr, want) {
			t.Errorf("hand-back %d = %+v, want %+v", i, tr, want)
		}
	}
}

// TestStopHandsBackWhatWasNotSent: messages claimed but not sent when the
// engine stops go back TO_RETRY, due at once, with no attempt spent
// ("handed back"), rather than waiting SENT_TO_NS for their deadline.
func TestStopHandsBackWhatWasNotSent(t *testing.T) {
	rig := newBufferRig(t, 1)
	msgs := rig.prefetch("L", 3)
	rig.e.handBackPrefetched()
	rig.e.sends.Wait()
	ts := rig.store.transitions()
	if len(ts) != 3 || len(rig.e.pending) != 0 {
		t.Fatalf("transitions %+v, %d pending tokens; want 3 hand-backs, every token back", ts, len(rig.e.pending))
	}
	for i, tr := range ts {
		if tr.ID != msgs[i].ID || tr.To != StatusToRetry || tr.Reason != "handed back" || !tr.UndoAttempt || !tr.DueAt.Equal(t0) {
			t.Errorf("hand-back %d = %+v, want %s TO_RETRY due at once, \"handed back\", attempt undone", i, tr, msgs[i].ID)
		}
	}
}
