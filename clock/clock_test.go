package clock

import (
	"testing"
	"time"
)

func TestFakeMovesOnlyWhenTold(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	if !f.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", f.Now(), start)
	}
	f.Advance(48 * time.Hour)
	if got := f.Now().Sub(start); got != 48*time.Hour {
		t.Fatalf("after Advance(48h): %v later, want 48h", got)
	}
	f.Set(start)
	if !f.Now().Equal(start) {
		t.Fatalf("after Set: %v", f.Now())
	}
	if d := time.Since(System().Now()); d < 0 || d > time.Second {
		t.Fatalf("System clock is %v off", d)
	}
}
