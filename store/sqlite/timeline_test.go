package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// TestTimelineCodec round-trips entries whose reasons hold the format's
// separators, quotes and bytes that are not UTF-8.
func TestTimelineCodec(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123).UTC()
	want := []herald.TimelineEntry{
		{At: at, To: herald.StatusQueued, Reason: "created"},
		{At: at, From: herald.StatusQueued, To: herald.StatusSentToNS, Attempt: 1},
		{At: at, From: herald.StatusSentToNS, To: herald.StatusToRetry, Attempt: 12, Reason: "a|b\nc \"d\" \\ \xff é"},
	}
	var s string
	for _, e := range want {
		s += encodeEntry(e)
	}
	got, err := parseTimeline(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("parsed %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"1|2|3\n", "x|1|A|B|\"\"\n", "1|1|A|B|unquoted\n"} {
		if _, err := parseTimeline(bad); err == nil {
			t.Errorf("parseTimeline(%q) succeeded, want an error", bad)
		}
	}
}

// TestSameStatusTransition checks that a transition that keeps the status
// updates the fields but neither the timeline nor UpdatedAt.
func TestSameStatusTransition(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	m := testMessage("m1")
	if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	later := m.CreatedAt.Add(time.Minute)
	err := s.Transition(ctx, herald.Transition{ID: m.ID, From: herald.StatusQueued, To: herald.StatusQueued, At: later, DueAt: later})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Timeline) != 1 || got.UpdatedAt.UnixMilli() != m.CreatedAt.UnixMilli() || got.DueAt.UnixMilli() != later.UnixMilli() {
		t.Errorf("after QUEUED->QUEUED: %d entries, updated %v, due %v; want 1, %v, %v",
			len(got.Timeline), got.UpdatedAt, got.DueAt, m.CreatedAt, later)
	}
}
