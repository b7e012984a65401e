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
