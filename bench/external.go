package bench

import (
	"context"
	"time"

	"github.com/heraldmq/herald"
)

// What a workload run outside this package (W8, whose carrier and network
// are wired by cmd/herald) needs to report as Run does.

// CPUTime returns the CPU time, user and system, the process has used so
// far; 0 where it is not measured.
func CPUTime() time.Duration { return cpuTime() }

// Complete fills in res's timing figures for its N messages, timed over
// elapsed wall time and cpu process time, rounded as Run rounds them:
// seconds, msgs_per_s, cpu_us_per_msg and rss_mb (the peak so far).
func (res *Result) Complete(elapsed, cpu time.Duration) {
	res.Seconds = round(elapsed.Seconds(), 3)
	res.MsgsPerS = Rate(res.N, elapsed)
	res.CPUPerMsg = round(float64(cpu.Microseconds())/float64(max(res.N, 1)), 1)
	res.RSSMB = round(peakRSSMB(), 1)
}

// Rate returns n per second over d, rounded as the reports are.
func Rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return round(float64(n)/d.Seconds(), 0)
}

// NotDelivered counts how many of n messages the store does not hold as
// DELIVERY_SUCCESSFUL.
func NotDelivered(ctx context.Context, s herald.Store, n int) (int, error) {
	return countNotDelivered(ctx, s, n)
}
