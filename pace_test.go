package herald

import "testing"

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
