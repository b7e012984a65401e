package herald

import (
	"context"
	"testing"
)

func TestPaceGrowsWhenStarvedAndShrinksBack(t *testing.T) {
	var p pace
	if got := p.next(10, 512); got != 10 {
		t.Fatalf("first margin = %d, want the least, 10", got)
	}
	want := []int{20, 40, 80, 160, 320, 512, 512}
	for i, w := range want {
		p.noteStarved()
		if got := p.next(10, 512); got != w {
			t.Fatalf("after starving %d times: margin %d, want %d", i+1, got, w)
		}
	}
	prev := p.ahead
	for range 100 {
		got := p.next(10, 512)
		if got > prev {
			t.Fatalf("margin grew from %d to %d without starving", prev, got)
		}
		prev = got
	}
	if prev != 10 {
		t.Fatalf("margin after 100 claims without starving = %d, want back to the least, 10", prev)
	}
}

func TestPaceStartsOverWhenTheQueueRunsOut(t *testing.T) {
	var p pace
	for range 5 {
		p.noteStarved()
		p.next(10, 512)
	}
	if p.ahead != 160 {
		t.Fatalf("margin after starving 5 times = %d, want 160", p.ahead)
	}
	// Idle slots while nothing is due must not grow the margin either: a
	// burst after an idle spell would otherwise be claimed far ahead of
	// slow slots.
	p.ranOut()
	p.noteStarved()
	if got := p.next(10, 512); got != 10 {
		t.Fatalf("margin after running out = %d, want the least, 10", got)
	}
}

// claimStub is a Store whose claims return msgs; nothing else of it is
// used.
type claimStub struct {
	Store
	msgs []*Message
}

func (s *claimStub) Claim(context.Context, Claim) ([]*Message, error) { return s.msgs, nil }

// directStub is a direct carrier that is never called.
type directStub struct{}

func (directStub) Path() Path                                         { return PathDirect }
func (directStub) Validate(*Message) error                            { return nil }
func (directStub) Send(context.Context, *Message) (SendResult, error) { return SendResult{}, nil }

// TestShortClaimAtAKeptBoundKeepsPace: a claim that brings fewer messages
// than it asked for, but leaves a lane the node keeps (ClaimAhead) holding
// a quarter of the claim's kept share (8) or more, and as many as the
// node's send slots (1), may have been cut short by that bound rather than
// by the end of the due messages: the pace stays. A short claim of a kept
// lane well below its bound (a trickle), or of no kept lane, starts it
// over.
func TestShortClaimAtAKeptBoundKeepsPace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		route string
		n     int // messages the claim brings, of lane L
		want  int
	}{
		{"kept lane at its share", "kept", 2, 100},
		{"kept lane below its share", "kept", 1, 0},
		{"ungated", "free", 2, 0},
	} {
		p, _ := ProfilePolicy(ProfileChannel)
		kept := p
		kept.Admission = Admission{Concurrency: 1}
		stub := &claimStub{}
		for i := range tc.n {
			stub.msgs = append(stub.msgs, &Message{ID: string(rune('a' + i)), Route: tc.route, Lane: "L", Status: StatusSentToNS})
		}
		e, err := New(Config{Store: stub, Concurrency: 1, Routes: []Route{
			{Name: "kept", Carrier: directStub{}, Policy: kept},
			{Name: "free", Carrier: directStub{}, Policy: p},
		}})
		if err != nil {
			t.Fatal(err)
		}
		e.pace.ahead = 100
		if c := e.claimAhead(context.Background(), 50, 50, keptBound{ahead: 8}); c.err != nil || c.n != tc.n {
			t.Fatalf("%s: claim: %+v", tc.name, c)
		}
		if e.pace.ahead != tc.want {
			t.Errorf("%s: pace after a short claim %d, want %d", tc.name, e.pace.ahead, tc.want)
		}
	}
}
