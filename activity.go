package herald

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldmq/herald/clock"
)

// ActivityMinutes is how many minutes Engine.Activity reports: the last hour.
const ActivityMinutes = 60

// ActivityMinute is what this engine did in one minute of its clock.
type ActivityMinute struct {
	// Start is the minute's first instant, in UTC.
	Start time.Time `json:"start"`
	// Sent counts the sends started: the moves to SENT_TO_NS.
	Sent int64 `json:"sent"`
	// Succeeded counts the moves to DELIVERY_SUCCESSFUL.
	Succeeded int64 `json:"succeeded"`
	// Failed counts the moves to DELIVERY_FAILED: the dead letters.
	Failed int64 `json:"failed"`
	// Retried counts the moves to TO_RETRY.
	Retried int64 `json:"retried"`
	// LatencyP50MS, LatencyP90MS and LatencyP99MS are percentiles of the
	// delivery latency (creation to DELIVERY_SUCCESSFUL) of the messages
	// that succeeded in the minute, in milliseconds; 0 when none did. They
	// are read from a histogram whose buckets are 19 % wide, so each is
	// within 10 % of the exact value.
	LatencyP50MS float64 `json:"latency_p50_ms"`
	LatencyP90MS float64 `json:"latency_p90_ms"`
	LatencyP99MS float64 `json:"latency_p99_ms"`
}

// Activity returns what this engine did with tenant's messages (every
// tenant's for the empty tenant) in each of the last ActivityMinutes
// minutes, oldest first; the last is the minute under way. Like the
// Counters of Stats, it is kept in memory by this process since it
// started.
func (e *Engine) Activity(tenant string) []ActivityMinute {
	return e.tallies.read(tenant).activity.report(e.clock.Now())
}

// latencyBuckets is the size of a minute's latency histogram: bucket 0
// holds latencies under a millisecond, bucket i ≥ 1 those in
// [2^((i-1)/4), 2^(i/4)) ms, and the last everything above, 2^28 ms
// (three days) and more.
const (
	bucketsPerDoubling = 4
	latencyBuckets     = 1 + 28*bucketsPerDoubling + 1
)

// activitySlot counts one minute.
type activitySlot struct {
	// minute is the Unix minute (seconds / 60) the slot counts.
	minute                           atomic.Int64
	sent, succeeded, failed, retried atomic.Int64
	latency                          [latencyBuckets]atomic.Int64
}

// activityLog is a ring of per-minute counts, one slot per minute of the
// last hour. Recording is lock-free except for the first record of a
// minute, which clears the slot it reuses.
type activityLog struct {
	clock clock.Clock
	mu    sync.Mutex // held while a slot is cleared for its new minute
	slots [ActivityMinutes]activitySlot
}

// slot returns the slot of the minute of now, cleared when it still held
// an older minute.
func (a *activityLog) slot(now time.Time) *activitySlot {
	m := unixMinute(now)
	s := &a.slots[slotIndex(m)]
	if s.minute.Load() == m {
		return s
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.minute.Load() != m {
		s.sent.Store(0)
		s.succeeded.Store(0)
		s.failed.Store(0)
		s.retried.Store(0)
		for i := range s.latency {
			s.latency[i].Store(0)
		}
		s.minute.Store(m) // after the clearing: a reader of m sees it cleared
	}
	return s
}

func (a *activityLog) now() time.Time {
	if a.clock == nil {
		return time.Now()
	}
	return a.clock.Now()
}

// transitioned counts a move to SENT_TO_NS, DELIVERY_SUCCESSFUL,
// DELIVERY_FAILED or TO_RETRY.
func (a *activityLog) transitioned(to Status) {
	var n *atomic.Int64
	switch to {
	case StatusSentToNS:
		n = &a.slot(a.now()).sent
	case StatusDeliverySuccessful:
		n = &a.slot(a.now()).succeeded
	case StatusDeliveryFailed:
		n = &a.slot(a.now()).failed
	case StatusToRetry:
		n = &a.slot(a.now()).retried
	default:
		return
	}
	n.Add(1)
}

// delivered adds a delivery latency to the minute's histogram.
func (a *activityLog) delivered(d time.Duration) {
	a.slot(a.now()).latency[latencyBucket(d)].Add(1)
}

// report returns the minutes of the hour up to now, oldest first.
func (a *activityLog) report(now time.Time) []ActivityMinute {
	cur := unixMinute(now)
	out := make([]ActivityMinute, ActivityMinutes)
	for i := range out {
		m := cur - int64(ActivityMinutes-1-i)
		out[i].Start = time.Unix(m*60, 0).UTC()
		s := &a.slots[slotIndex(m)]
		if s.minute.Load() != m {
			continue // nothing happened in that minute
		}
		out[i].Sent, out[i].Succeeded = s.sent.Load(), s.succeeded.Load()
		out[i].Failed, out[i].Retried = s.failed.Load(), s.retried.Load()
		var hist [latencyBuckets]int64
		for j := range hist {
			hist[j] = s.latency[j].Load()
		}
		out[i].LatencyP50MS = percentileMS(&hist, 0.50)
		out[i].LatencyP90MS = percentileMS(&hist, 0.90)
		out[i].LatencyP99MS = percentileMS(&hist, 0.99)
	}
	return out
}

func unixMinute(t time.Time) int64 {
	s := t.Unix()
	if s < 0 {
		return (s - 59) / 60
	}
	return s / 60
}

func slotIndex(minute int64) int64 {
	i := minute % ActivityMinutes
	if i < 0 {
		i += ActivityMinutes
	}
	return i
}

// latencyBucket returns the histogram bucket of d.
func latencyBucket(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 1 {
		return 0
	}
	i := 1 + int(math.Floor(math.Log2(ms)*bucketsPerDoubling))
	return min(i, latencyBuckets-1)
}

// bucketMS is the value that stands for bucket i: the geometric middle of
// its bounds (half a millisecond for bucket 0).
func bucketMS(i int) float64 {
	if i == 0 {
		return 0.5
	}
	return math.Exp2((float64(i) - 0.5) / bucketsPerDoubling)
}

// percentileMS returns the p-th percentile (0..1) of hist, 0 when empty.
func percentileMS(hist *[latencyBuckets]int64, p float64) float64 {
	var total int64
	for _, n := range hist {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(p*float64(total))), 1)
	var seen int64
	for i, n := range hist {
		seen += n
		if seen >= rank {
			return math.Round(bucketMS(i)*1000) / 1000
		}
	}
	return bucketMS(latencyBuckets - 1)
}
