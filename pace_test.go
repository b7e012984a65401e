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

// TestShortClaimOfKeptLanesKeepsPace: a claim that brings fewer messages
// than it asked for, some of a lane the node keeps (ClaimAhead), may have
// met the lane's bound (Claim.KeptAhead) rather than the end of the due
// messages: the pace stays. One with no kept lane's message starts it over.
func TestShortClaimOfKeptLanesKeepsPace(t *testing.T) {
	for _, tc := range []struct {
		route string
		want  int
	}{{"kept", 100}, {"free", 0}} {
		p, _ := ProfilePolicy(ProfileChannel)
		kept := p
		kept.Admission = Admission{Concurrency: 2}
		stub := &claimStub{msgs: []*Message{{ID: "m1", Route: tc.route, Lane: "L", Status: StatusSentToNS}}}
		e, err := New(Config{Store: stub, Routes: []Route{
			{Name: "kept", Carrier: directStub{}, Policy: kept},
			{Name: "free", Carrier: directStub{}, Policy: p},
		}})
		if err != nil {
			t.Fatal(err)
		}
		e.pace.ahead = 100
		if c := e.claimAhead(context.Background(), 50, 50, keptBound{}); c.err != nil || c.n != 1 {
			t.Fatalf("claim: %+v", c)
		}
		if e.pace.ahead != tc.want {
			t.Errorf("a short claim of a %s lane's message: pace %d, want %d", tc.route, e.pace.ahead, tc.want)
		}
	}
}
