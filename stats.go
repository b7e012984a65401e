package herald

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Stats summarises a tenant's messages. The counts by status and route,
// the oldest waiting and the success rate are read from the store; the
// latencies and the Counters are kept in memory by this process since it
// started. All of them are the tenant's own, or every tenant's for the
// empty tenant.
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
// the latency window, so a restart sets them to zero; of one tenant (or
// every tenant) and every route; and of this process only (each node
// sharing a store counts its own).
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
	t := e.tallies.read(tenant)
	p50, p99 := t.latencies.percentiles()
	s.LatencyP50MS, s.LatencyP99MS = float64(p50)/float64(time.Millisecond), float64(p99)/float64(time.Millisecond)
	s.Counters = t.counters()
	return s, nil
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
	Status string `json:"status"` // healthy, warning or critical
	// Message is a sentence a person reads: "Healthy", or what is wrong
	// and where to look.
	Message  string   `json:"message"`
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
	var sentences []string
	level := func(critical bool, what, sentence string) {
		if critical {
			h.Status = "critical"
		} else if h.Status == "healthy" {
			h.Status = "warning"
		}
		h.Warnings = append(h.Warnings, what)
		sentences = append(sentences, sentence)
	}
	if why := e.storeFull(); why != "" {
		level(true, "the store refuses writes for want of room: "+why,
			"The store refuses writes for want of room ("+why+"): free disk space (SQLite) or memory (Redis); nothing new is stored until then.")
	}
	if s.Waiting >= th.QueueDepthWarning {
		critical := s.Waiting >= th.QueueDepthCritical
		level(critical, fmt.Sprintf("queue depth %d", s.Waiting), fmt.Sprintf(
			"%d messages are waiting to be sent (%s at %d): check that the routes' carriers answer and that no lane is paused or held by its limits.",
			s.Waiting, severity(critical), threshold(critical, th.QueueDepthWarning, th.QueueDepthCritical)))
	}
	if s.DeadLetters >= th.DeadLettersWarning {
		critical := s.DeadLetters >= th.DeadLettersCritical
		level(critical, fmt.Sprintf("dead letters %d", s.DeadLetters), fmt.Sprintf(
			"%d messages failed for good (%s at %d): read their last errors in the dead letters, mend the cause (a network server, a device, a payload), then replay them.",
			s.DeadLetters, severity(critical), threshold(critical, th.DeadLettersWarning, th.DeadLettersCritical)))
	}
	if ok, failed := s.ByStatus[StatusDeliverySuccessful], s.ByStatus[StatusDeliveryFailed]; ok+failed >= minHealthSample && s.SuccessRate < th.SuccessRateWarning {
		critical := s.SuccessRate < th.SuccessRateCritical
		level(critical, fmt.Sprintf("success rate %.1f%%", s.SuccessRate*100), fmt.Sprintf(
			"Only %.1f%% of the messages that ended were delivered (%s below %.0f%%): check the carriers' network connectivity.",
			s.SuccessRate*100, severity(critical), 100*threshold(critical, th.SuccessRateWarning, th.SuccessRateCritical)))
	}
	h.Message = "Healthy"
	if len(sentences) > 0 {
		h.Message = strings.Join(sentences, " ")
	}
	return h, nil
}

// severity names a threshold passed: critical or warning.
func severity(critical bool) string {
	if critical {
		return "critical"
	}
	return "warning"
}

// threshold returns the threshold passed: critical's when critical, else
// warning's.
func threshold[T any](critical bool, warning, criticalAt T) T {
	if critical {
		return criticalAt
	}
	return warning
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
