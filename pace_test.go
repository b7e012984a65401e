package herald

import (
	"testing"
	"time"
)

// TestPaceClaimsAheadOnlyForFastCalls: beyond the free slots, the
// dispatcher claims what the calls ending while claimsAhead (4) claims are
// written make room for: none while a claim's time is unknown (a fake
// clock that does not move) or when calls are slower than claims; that
// many claims' worth of calls per slot when they are faster; never more
// than asked.
func TestPaceClaimsAheadOnlyForFastCalls(t *testing.T) {
	var p pace
	if got := p.ahead(10, 512); got != 0 {
		t.Fatalf("ahead before any claim = %d, want 0", got)
	}
	p.claimed(0)
	p.called("r", false, 0)
	if got := p.ahead(10, 512); got != 0 {
		t.Fatalf("ahead when claims take no time = %d, want 0", got)
	}
	p = pace{}
	p.claimed(2 * time.Millisecond)
	p.called("r", false, 1500*time.Millisecond)
	if got := p.ahead(64, 512); got != 0 {
		t.Fatalf("ahead with calls of 1.5 s and claims of 2 ms = %d, want 0: a claimed message would wait a call for its slot", got)
	}
	p = pace{}
	p.claimed(2 * time.Millisecond)
	p.called("r", false, time.Millisecond)
	if got := p.ahead(10, 512); got != 80 {
		t.Fatalf("ahead with calls of 1 ms and claims of 2 ms = %d, want 10 slots × 4 claims × 2 calls = 80", got)
	}
	p.called("r", false, 0) // averaged towards 0: faster
	if got := p.ahead(10, 512); got <= 80 {
		t.Fatalf("ahead after a faster call = %d, want more than 80", got)
	}
	for range 100 {
		p.called("r", false, time.Microsecond)
	}
	if got := p.ahead(10, 512); got != 512 {
		t.Fatalf("ahead with calls of 1 µs = %d, want the most, 512", got)
	}
	for range 100 {
		p.called("r", false, time.Second)
	}
	if got := p.ahead(10, 512); got != 0 {
		t.Fatalf("ahead once calls slowed to 1 s = %d, want back to 0", got)
	}
}

// TestPaceKeptAheadByRoute: a kept route's lanes are claimed beyond their
// concurrency by what their own calls free while 4 claims are written,
// never beyond their ClaimAhead; a route whose calls are slow, or that
// the node never called, gets none.
func TestPaceKeptAheadByRoute(t *testing.T) {
	var p pace
	p.claimed(2 * time.Millisecond)
	p.called("fast", true, 100*time.Microsecond)
	p.called("slow", true, 1500*time.Millisecond)
	p.called("free", false, 100*time.Microsecond)
	rules := map[string]Admission{
		"fast":   {Concurrency: 2, ClaimAhead: 514},
		"slow":   {Concurrency: 2, ClaimAhead: 514},
		"capped": {Concurrency: 10, ClaimAhead: 30},
	}
	got := p.keptAhead(rules)
	if len(got) != 1 || got["fast"] != 160 {
		t.Fatalf("kept ahead = %v, want only fast: 2 calls × 4 claims × 20 = 160", got)
	}
	p.called("capped", true, time.Microsecond)
	if got := p.keptAhead(rules); got["capped"] != 30 {
		t.Fatalf("kept ahead of capped = %d, want its ClaimAhead, 30", got["capped"])
	}
}
