package herald

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldmq/herald/clock"
)

// Stats summarises a tenant's messages. The counts by status and route,
// the oldest waiting and the success rate are the tenant's, read from the
// store; the latencies and the Counters are the whole engine's (every
// tenant), kept in memory by this process since it started.
type Stats struct {
	ByStatus map[Status]int            `json:"by_status"`
	ByRoute  map[string]map[Status]int `json:"by_route"`
	// OldestQueuedSeconds is the age of the oldest message waiting (QUEUED or TO_RETRY).
	OldestQueuedSeconds float64 `json:"oldest_queued_seconds"`
	// SuccessRate is DELIVERY_SUCCESSFUL over all terminal messages kept, 0..1; 1 when none.
	SuccessRate  float64 `json:"success_rate"`
	LatencyP50MS float64 `json:"latency_p50_ms"`
	LatencyP99MS float64 `json:"latency_p99_ms"`
	DeadLetters  int     `json:"dead_letters"`
	Waiting      int     `json:"waiting"`
	Counters
}

// Counters count what the engine did since it started: in memory, like
// the latency window, so a restart sets them to zero; of every tenant and
// route; and of this process only (each node sharing a store counts its
// own).
type Counters struct {
	// Enqueued counts the messages Send created (not a replay, not an
	// idempotent repeat, not a duplicate).
	Enqueued int64 `json:"enqueued"`
	// Succeeded counts the moves to DELIVERY_SUCCESSFUL.
	Succeeded int64 `json:"succeeded"`
	// Retried counts the moves to TO_RETRY: a transient failure or a stage
	// deadline with attempts left, and backpressure.
	Retried int64 `json:"retried"`
	// DeadLettered counts the moves to DELIVERY_FAILED: a permanent error,
	// the attempts used up, expired, route removed.
	DeadLettered int64 `json:"dead_lettered"`
	// Deduplicated counts the sends answered with an earlier delivered
	// twin (dedup_ttl) instead of a new message.
	Deduplicated int64 `json:"deduplicated"`
	// Coalesced counts the waiting messages that a newer one with the
	// same coalesce key cancelled.
	Coalesced int64 `json:"coalesced"`
}

// Stats counts tenant's messages; an empty tenant counts everyone's.
func (e *Engine) Stats(ctx context.Context, tenant string) (Stats, error) {
	counts, err := e.store.Counts(ctx)
	if err != nil {
		return Stats{}, err
	}
	now := e.clock.Now()
	s := Stats{ByStatus: map[Status]int{}, ByRoute: map[string]map[Status]int{}, SuccessRate: 1}
	for _, st := range Statuses {
		s.ByStatus[st] = 0
	}
	var oldest time.Time
	for _, c := range counts {
		if tenant != "" && c.Tenant != tenant {
			continue
		}
		s.ByStatus[c.Status] += c.N
		if s.ByRoute[c.Route] == nil {
			s.ByRoute[c.Route] = map[Status]int{}
		}
		s.ByRoute[c.Route][c.Status] += c.N
		if c.Status.Waiting() && (oldest.IsZero() || c.OldestCreated.Before(oldest)) {
			oldest = c.OldestCreated
		}
	}
	if !oldest.IsZero() {
		s.OldestQueuedSeconds = now.Sub(oldest).Seconds()
	}
	ok, failed := s.ByStatus[StatusDeliverySuccessful], s.ByStatus[StatusDeliveryFailed]
	if ok+failed > 0 {
		s.SuccessRate = float64(ok) / float64(ok+failed)
	}
	s.DeadLetters = failed
	s.Waiting = s.ByStatus[StatusQueued] + s.ByStatus[StatusToRetry]
	p50, p99 := e.latencies.percentiles()
	s.LatencyP50MS, s.LatencyP99MS = float64(p50)/float64(time.Millisecond), float64(p99)/float64(time.Millisecond)
	if c, ok := e.obs.(*countingObserver); ok {
		s.Counters = c.counters()
	}
	return s, nil
}

// countingObserver keeps the engine's Counters and its Activity (see
// activity.go) from what the engine tells its Observer, and passes
// everything on to the configured one.
type countingObserver struct {
	Observer
	enqueued, succeeded, retried, deadLettered, deduplicated, coalesced atomic.Int64
	activity                                                            activityLog
}

func newCountingObserver(o Observer, clk clock.Clock) *countingObserver {
	c := &countingObserver{Observer: o}
	c.activity.clock = clk
	return c
}

// Transitioned counts a creation (from "" to QUEUED), a success, a retry
// and a dead letter.
func (c *countingObserver) Transitioned(route string, from, to Status) {
	switch {
	case from == "" && to == StatusQueued:
		c.enqueued.Add(1)
	case to == StatusDeliverySuccessful:
		c.succeeded.Add(1)
	case to == StatusToRetry:
		c.retried.Add(1)
	case to == StatusDeliveryFailed:
		c.deadLettered.Add(1)
	}
	c.activity.transitioned(to)
	c.Observer.Transitioned(route, from, to)
}

// Problem counts a deduplicated send and a coalesced message (Send
// reports them as problems of kind problemDeduplicated and
// problemCoalesced).
func (c *countingObserver) Problem(kind string) {
	switch kind {
	case problemDeduplicated:
		c.deduplicated.Add(1)
	case problemCoalesced:
		c.coalesced.Add(1)
	}
	c.Observer.Problem(kind)
}

func (c *countingObserver) counters() Counters {
	return Counters{
		Enqueued: c.enqueued.Load(), Succeeded: c.succeeded.Load(), Retried: c.retried.Load(),
		DeadLettered: c.deadLettered.Load(), Deduplicated: c.deduplicated.Load(), Coalesced: c.coalesced.Load(),
	}
}

// HealthThresholds are the warning and critical levels of Health.
type HealthThresholds struct {
	QueueDepthWarning, QueueDepthCritical   int
	DeadLettersWarning, DeadLettersCritical int
	SuccessRateWarning, SuccessRateCritical float64
}

// DefaultHealthThresholds are the Class-C queue's levels.
var DefaultHealthThresholds = HealthThresholds{
	QueueDepthWarning: 100, QueueDepthCritical: 500,
	DeadLettersWarning: 10, DeadLettersCritical: 50,
	SuccessRateWarning: 0.90, SuccessRateCritical: 0.80,
}

// minHealthSample is the number of ended messages below which the success
// rate is too noisy to judge health by.
const minHealthSample = 20

// Health is the queue's state against the thresholds.
type Health struct {
	Status   string   `json:"status"` // healthy, warning or critical
	Warnings []string `json:"warnings"`
	Stats
}

// Health compares tenant's stats with the configured thresholds.
func (e *Engine) Health(ctx context.Context, tenant string) (Health, error) {
	s, err := e.Stats(ctx, tenant)
	if err != nil {
		return Health{}, err
	}
	th := e.cfg.Health
	h := Health{Status: "healthy", Warnings: []string{}, Stats: s}
	level := func(critical bool, what string) {
		if critical {
			h.Status = "critical"
		} else if h.Status == "healthy" {
			h.Status = "warning"
		}
		h.Warnings = append(h.Warnings, what)
	}
	if why := e.storeFull(); why != "" {
		level(true, "the store refuses writes for want of room: "+why)
	}
	if s.Waiting >= th.QueueDepthWarning {
		level(s.Waiting >= th.QueueDepthCritical, fmt.Sprintf("queue depth %d", s.Waiting))
	}
	if s.DeadLetters >= th.DeadLettersWarning {
		level(s.DeadLetters >= th.DeadLettersCritical, fmt.Sprintf("dead letters %d", s.DeadLetters))
	}
	if ok, failed := s.ByStatus[StatusDeliverySuccessful], s.ByStatus[StatusDeliveryFailed]; ok+failed >= minHealthSample && s.SuccessRate < th.SuccessRateWarning {
		level(s.SuccessRate < th.SuccessRateCritical, fmt.Sprintf("success rate %.1f%%", s.SuccessRate*100))
	}
	return h, nil
}

// latencyWindow keeps the most recent delivery latencies for percentiles.
type latencyWindow struct {
	mu   sync.Mutex
	ring [4096]time.Duration
	n    int
}

func (w *latencyWindow) add(d time.Duration) {
	w.mu.Lock()
	w.ring[w.n%len(w.ring)] = d
	w.n++
	w.mu.Unlock()
}

func (w *latencyWindow) percentiles() (p50, p99 time.Duration) {
	w.mu.Lock()
	k := min(w.n, len(w.ring))
	s := slices.Clone(w.ring[:k])
	w.mu.Unlock()
	if k == 0 {
		return 0, 0
	}
	slices.Sort(s)
	return s[k*50/100], s[min(k*99/100, k-1)]
}
