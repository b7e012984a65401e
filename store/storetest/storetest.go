// Package storetest is the conformance suite of herald.Store. Every store
// must pass Exercise; Benchmark measures one.
//
// The suite tests only what the herald.Store interface documents: it knows
// nothing of how a store keeps its data.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// Exercise runs the conformance suite. newStore must return a new, empty
// store each time it is called; the suite closes it.
func Exercise(t *testing.T, newStore func(t *testing.T) herald.Store) {
	open := func(t *testing.T) *harness {
		s := newStore(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return &harness{t: t, s: s, ctx: t.Context()}
	}
	for _, topic := range []struct {
		name string
		run  func(*testing.T, opener)
	}{
		{"Create", testCreate},
		{"Idempotency", testIdempotency},
		{"Coalesce", testCoalesce},
		{"Claim", testClaim},
		{"Transition", testTransition},
		{"Timeline", testTimeline},
		{"Release", testRelease},
		{"Overdue", testOverdue},
		{"ClaimPoll", testClaimPoll},
		{"Lookup", testLookup},
		{"List", testList},
		{"Delete", testDelete},
		{"Outbox", testOutbox},
		{"Inbound", testInbound},
		{"Lanes", testLanes},
		{"TraceParent", testTraceParent},
		{"Result", testResult},
		{"Dedup", testDedup},
		{"DeadEvents", testDeadEvents},
		{"Rooms", testRooms},
		{"Sessions", testSessions},
		{"Holds", testHolds},
	} {
		t.Run(topic.name, func(t *testing.T) { topic.run(t, open) })
	}
	t.Run("PingClose", func(t *testing.T) {
		s := newStore(t)
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("Ping: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

// opener returns a fresh store for a subtest.
type opener func(t *testing.T) *harness

// harness is a store under test with helpers that fail the test on error.
type harness struct {
	t   *testing.T
	s   herald.Store
	ctx context.Context
}

// t0 is the suite's epoch: every time is relative to it.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// at returns t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// idSeq numbers the suite's message ids.
var idSeq atomic.Int64

// nextID returns an id greater than every id returned before, as the
// engine's time-ordered ids are.
func nextID() string { return fmt.Sprintf("msg-%020d", idSeq.Add(1)) }

// leaseSeq numbers the leases of the suite's pulls.
var leaseSeq atomic.Int64

// pullLease returns a fresh lease for a pull: past 2^62, as large as the
// engine's random ones, and more than a float64 holds exactly.
func pullLease() int64 { return 1<<62 + leaseSeq.Add(1) }

// newMessage returns a message of tenant "acme" through route, created and
// due at t0, ready for Create.
func newMessage(route string) *herald.Message {
	return &herald.Message{
		ID: nextID(), Tenant: "acme", Route: route, Target: "device-1", Lane: "lane-1",
		Text: "hello", MaxAttempts: 5, Status: herald.StatusQueued,
		CreatedAt: t0, UpdatedAt: t0, DueAt: t0,
	}
}

// create stores m and fails unless Create created it.
func (h *harness) create(m *herald.Message) *herald.Message {
	h.t.Helper()
	return h.createWith(m, herald.CreateOptions{})
}

// createWith stores m with opt and fails unless Create created it.
func (h *harness) createWith(m *herald.Message, opt herald.CreateOptions) *herald.Message {
	h.t.Helper()
	stored, created, err := h.s.Create(h.ctx, m, opt)
	if err != nil {
		h.t.Fatalf("Create %s: %v", m.ID, err)
	}
	if !created || stored == nil || stored.ID != m.ID {
		h.t.Fatalf("Create %s: created=%v stored=%v, want the new message", m.ID, created, stored)
	}
	return stored
}

// createAll stores msgs from several goroutines at once.
func (h *harness) createAll(msgs []*herald.Message) {
	h.t.Helper()
	if err := createAll(h.ctx, h.s, msgs); err != nil {
		h.t.Fatalf("Create: %v", err)
	}
}

// createAll stores msgs into s from 16 goroutines.
func createAll(ctx context.Context, s herald.Store, msgs []*herald.Message) error {
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		errs = make([]error, len(msgs))
	)
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(msgs); i = int(next.Add(1)) - 1 {
				_, _, errs[i] = s.Create(ctx, msgs[i], herald.CreateOptions{})
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// get returns the stored message id.
func (h *harness) get(id string) *herald.Message {
	h.t.Helper()
	m, err := h.s.Get(h.ctx, id)
	if err != nil {
		h.t.Fatalf("Get %s: %v", id, err)
	}
	return m
}

// transition applies tr and fails on error.
func (h *harness) transition(tr herald.Transition) {
	h.t.Helper()
	if err := h.s.Transition(h.ctx, tr); err != nil {
		h.t.Fatalf("Transition %s %s->%s: %v", tr.ID, tr.From, tr.To, err)
	}
}

// walk moves message id through statuses, one transition each, at time at.
// The message must be in the first status.
func (h *harness) walk(id string, when time.Time, statuses ...herald.Status) {
	h.t.Helper()
	for i := 1; i < len(statuses); i++ {
		h.transition(herald.Transition{ID: id, From: statuses[i-1], To: statuses[i], At: when})
	}
}

// claim claims with the suite's accept timeouts and fails on error.
func (h *harness) claim(now time.Time, limit int) []*herald.Message {
	h.t.Helper()
	got, err := h.s.Claim(h.ctx, herald.Claim{Now: now, Limit: limit, DefaultAccept: 20 * time.Second})
	if err != nil {
		h.t.Fatalf("Claim: %v", err)
	}
	return got
}

// events claims up to 100 outbox events due at now, leased for a minute.
func (h *harness) events(now time.Time) []herald.Event {
	h.t.Helper()
	evs, err := h.s.ClaimEvents(h.ctx, now, 100, now.Add(time.Minute))
	if err != nil {
		h.t.Fatalf("ClaimEvents: %v", err)
	}
	return evs
}

// ids returns the ids of msgs, in order.
func ids(msgs []*herald.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// sameTime reports whether a and b are the same instant to the millisecond,
// the precision a store must keep.
func sameTime(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	d := a.Sub(b)
	return d > -time.Millisecond && d < time.Millisecond
}

// diffMessage lists the fields, Timeline aside, in which got differs from want.
func diffMessage(got, want *herald.Message) []string {
	var diffs []string
	check := func(field string, equal bool, g, w any) {
		if !equal {
			diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", field, g, w))
		}
	}
	check("ID", got.ID == want.ID, got.ID, want.ID)
	check("Tenant", got.Tenant == want.Tenant, got.Tenant, want.Tenant)
	check("Route", got.Route == want.Route, got.Route, want.Route)
	check("Target", got.Target == want.Target, got.Target, want.Target)
	check("Lane", got.Lane == want.Lane, got.Lane, want.Lane)
	check("Payload", string(got.Payload) == string(want.Payload), got.Payload, want.Payload)
	check("Text", got.Text == want.Text, got.Text, want.Text)
	check("Params", maps.Equal(got.Params, want.Params), got.Params, want.Params)
	check("Priority", got.Priority == want.Priority, got.Priority, want.Priority)
	check("CorrelationID", got.CorrelationID == want.CorrelationID, got.CorrelationID, want.CorrelationID)
	check("IdempotencyKey", got.IdempotencyKey == want.IdempotencyKey, got.IdempotencyKey, want.IdempotencyKey)
	check("CoalesceKey", got.CoalesceKey == want.CoalesceKey, got.CoalesceKey, want.CoalesceKey)
	check("Status", got.Status == want.Status, got.Status, want.Status)
	check("Attempt", got.Attempt == want.Attempt, got.Attempt, want.Attempt)
	check("MaxAttempts", got.MaxAttempts == want.MaxAttempts, got.MaxAttempts, want.MaxAttempts)
	check("CreatedAt", sameTime(got.CreatedAt, want.CreatedAt), got.CreatedAt, want.CreatedAt)
	check("UpdatedAt", sameTime(got.UpdatedAt, want.UpdatedAt), got.UpdatedAt, want.UpdatedAt)
	check("DueAt", sameTime(got.DueAt, want.DueAt), got.DueAt, want.DueAt)
	check("Deadline", sameTime(got.Deadline, want.Deadline), got.Deadline, want.Deadline)
	check("ExpiresAt", sameTime(got.ExpiresAt, want.ExpiresAt), got.ExpiresAt, want.ExpiresAt)
	check("ExternalID", got.ExternalID == want.ExternalID, got.ExternalID, want.ExternalID)
	check("LastError", got.LastError == want.LastError, got.LastError, want.LastError)
	check("Lease", got.Lease == want.Lease, got.Lease, want.Lease)
	check("TraceParent", got.TraceParent == want.TraceParent, got.TraceParent, want.TraceParent)
	check("Result", maps.Equal(got.Result, want.Result), got.Result, want.Result)
	return diffs
}

// checkEntry fails t unless got is want (At to the millisecond).
func checkEntry(t *testing.T, what string, got, want herald.TimelineEntry) {
	t.Helper()
	if !sameTime(got.At, want.At) || got.From != want.From || got.To != want.To ||
		got.Attempt != want.Attempt || got.Reason != want.Reason || got.Call != want.Call {
		t.Errorf("%s: timeline entry %+v, want %+v", what, got, want)
	}
}

// lastEntry returns the last timeline entry of m, failing when there is none.
func lastEntry(t *testing.T, m *herald.Message) herald.TimelineEntry {
	t.Helper()
	if len(m.Timeline) == 0 {
		t.Fatalf("message %s has no timeline", m.ID)
	}
	return m.Timeline[len(m.Timeline)-1]
}

// sameSet reports whether got and want hold the same strings, in any order,
// each once.
func sameSet(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}
