package herald

import (
	"math"
	"testing"
	"time"
)

// TestLatencyHistogramPercentiles: the percentiles read from the histogram
// are within 10 % of the exact ones, from under a millisecond to
// days (1000 × 4 min).
func TestLatencyHistogramPercentiles(t *testing.T) {
	for _, scale := range []time.Duration{time.Microsecond, time.Millisecond, time.Second, 4 * time.Minute} {
		var hist [latencyBuckets]int64
		for i := 1; i <= 1000; i++ {
			hist[latencyBucket(time.Duration(i)*scale)]++
		}
		for _, p := range []float64{0.50, 0.90, 0.99} {
			exact := float64(time.Duration(p*1000)*scale) / float64(time.Millisecond)
			got := percentileMS(&hist, p)
			if exact < 1 {
				if got >= 1 {
					t.Errorf("scale %v: p%.0f = %v ms, want under 1 ms", scale, p*100, got)
				}
				continue
			}
			if math.Abs(got-exact)/exact > 0.10 {
				t.Errorf("scale %v: p%.0f = %v ms, want %v within 10 %%", scale, p*100, got, exact)
			}
		}
	}
	var empty [latencyBuckets]int64
	if got := percentileMS(&empty, 0.5); got != 0 {
		t.Errorf("p50 of nothing = %v, want 0", got)
	}
	if got := latencyBucket(1000 * time.Hour); got != latencyBuckets-1 {
		t.Errorf("1000 h falls in bucket %d, want the last, %d", got, latencyBuckets-1)
	}
}
