package unixms

import (
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	if From(time.Time{}) != 0 || !Time(0).IsZero() {
		t.Fatal("the zero time is not 0, or 0 not the zero time")
	}
	at := time.Date(2026, 11, 22, 1, 2, 3, 4_000_000, time.FixedZone("x", 3600))
	if got := Time(From(at)); !got.Equal(at) || got.Location() != time.UTC {
		t.Fatalf("Time(From(%v)) = %v, want the same instant in UTC", at, got)
	}
}
