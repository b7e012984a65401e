package sqlite

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// TestTransitionGroup queues transitions so that the writer finds them all
// waiting and applies them as groups: two of the same message, a conflict,
// a lease mismatch and an unknown id among successes. The outcome must be
// that of running them one after another, in order.
func TestTransitionGroup(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	for _, id := range []string{"m1", "m2", "m3", "m4"} {
		if _, _, err := s.Create(ctx, testMessage(id), herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := s.Claim(ctx, herald.Claim{Now: time.Now().Add(time.Second), Limit: 1, DefaultAccept: time.Minute})
	if err != nil || len(claimed) != 1 || claimed[0].ID != "m1" {
		t.Fatalf("Claim = %v, %v; want m1", claimed, err)
	}
	lease := claimed[0].Lease
	at := time.Now().Add(2 * time.Second)
	later := at.Add(time.Hour)
	const (
		queued    = herald.StatusQueued
		sent      = herald.StatusSentToNS
		delivered = herald.StatusDeliveredToNS
		success   = herald.StatusDeliverySuccessful
		cancelled = herald.StatusCancelled
	)
	steps := []struct {
		t    herald.Transition
		want error
	}{
		{herald.Transition{ID: "m1", From: sent, To: delivered, Lease: lease, At: at, Reason: "accepted", ExternalID: "x1"}, nil},
		{herald.Transition{ID: "m2", From: sent, To: success, At: at}, herald.ErrConflict},
		{herald.Transition{ID: "m1", From: delivered, To: success, Lease: lease, At: at, Notify: []string{"a", "b"}}, nil},
		{herald.Transition{ID: "m3", From: queued, To: queued, At: at, DueAt: later}, nil},
		{herald.Transition{ID: "m1", From: queued, To: cancelled, At: at}, herald.ErrConflict},
		{herald.Transition{ID: "nope", From: queued, To: cancelled, At: at}, herald.ErrNotFound},
		{herald.Transition{ID: "m4", From: queued, To: cancelled, At: at, Reason: "stop", Notify: []string{"a"}}, nil},
		{herald.Transition{ID: "m3", From: queued, To: cancelled, Lease: 12345, At: at}, herald.ErrConflict},
		{herald.Transition{ID: "m2", From: queued, To: sent, At: at, Deadline: later, Notify: []string{"a"}}, nil},
	}

	// Hold the writer in a request while the transitions queue up behind it.
	started, release := make(chan struct{}), make(chan struct{})
	blocked := make(chan error, 1)
	go func() {
		blocked <- s.write(ctx, func(*wtx) error { close(started); <-release; return nil })
	}()
	<-started
	reqs := make([]*request, len(steps))
	for i, st := range steps {
		reqs[i] = transitionRequest(ctx, st.t)
		s.w.reqs <- reqs[i]
	}
	close(release)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		<-r.done
		if !errors.Is(r.err, steps[i].want) || (r.err == nil) != (steps[i].want == nil) {
			t.Errorf("transition %d (%s %s->%s): err %v, want %v", i, r.tr.ID, r.tr.From, r.tr.To, r.err, steps[i].want)
		}
	}

	check := func(id string, status herald.Status, timeline []herald.Status) *herald.Message {
		t.Helper()
		m, err := s.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get %s: %v", id, err)
		}
		var got []herald.Status
		for _, e := range m.Timeline {
			got = append(got, e.To)
		}
		if m.Status != status || !slices.Equal(got, timeline) {
			t.Errorf("%s: status %s, timeline %v; want %s, %v", id, m.Status, got, status, timeline)
		}
		return m
	}
	m1 := check("m1", success, []herald.Status{queued, sent, delivered, success})
	if m1.ExternalID != "x1" || m1.Lease != 0 || m1.Timeline[3].Attempt != 1 || m1.Timeline[2].Reason != "accepted" {
		t.Errorf("m1 = %+v", m1)
	}
	m2 := check("m2", sent, []herald.Status{queued, sent})
	if m2.Deadline.UnixMilli() != later.UnixMilli() {
		t.Errorf("m2 deadline %v, want %v", m2.Deadline, later)
	}
	m3 := check("m3", queued, []herald.Status{queued})
	if m3.DueAt.UnixMilli() != later.UnixMilli() {
		t.Errorf("m3 due %v, want %v", m3.DueAt, later)
	}
	check("m4", cancelled, []herald.Status{queued, cancelled})

	events, err := s.ClaimEvents(ctx, at.Add(time.Second), 100, at.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range events {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	if want := []string{"m1.4.a", "m1.4.b", "m2.2.a", "m4.2.a"}; !slices.Equal(ids, want) {
		t.Errorf("events %v, want %v", ids, want)
	}
}
