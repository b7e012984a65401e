package herald

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldmq/herald/clock"
)

// tally is what this process counted of one tenant's messages, or of
// every tenant's: the Counters of Stats, the latencies of its recent
// deliveries and its Activity by minute. About 100 kB each.
type tally struct {
	enqueued, succeeded, retried, deadLettered, deduplicated, coalesced atomic.Int64
	latencies                                                           latencyWindow
	activity                                                            activityLog
}

func (t *tally) counters() Counters {
	return Counters{
		Enqueued: t.enqueued.Load(), Succeeded: t.succeeded.Load(), Retried: t.retried.Load(),
		DeadLettered: t.deadLettered.Load(), Deduplicated: t.deduplicated.Load(), Coalesced: t.coalesced.Load(),
	}
}

// transitioned counts a creation (from "" to QUEUED), a send started, a
// success, a retry and a dead letter.
func (t *tally) transitioned(from, to Status) {
	switch {
	case from == "" && to == StatusQueued:
		t.enqueued.Add(1)
	case to == StatusDeliverySuccessful:
		t.succeeded.Add(1)
	case to == StatusToRetry:
		t.retried.Add(1)
	case to == StatusDeliveryFailed:
		t.deadLettered.Add(1)
	}
	t.activity.transitioned(to)
}

// delivered records a delivery's latency.
func (t *tally) delivered(latency time.Duration) {
	t.latencies.add(latency)
	t.activity.delivered(latency)
}

// tallies keeps a tally of each tenant the engine has seen, and one of
// them all, so that each tenant reads its own figures and an operator
// everyone's.
type tallies struct {
	clock clock.Clock
	all   tally

	mu       sync.RWMutex
	byTenant map[string]*tally
	// none is what a tenant with no tally of its own reads: nothing.
	none tally
}

func newTallies(clk clock.Clock) *tallies {
	ts := &tallies{clock: clk, byTenant: map[string]*tally{}}
	ts.all.activity.clock = clk
	return ts
}

// read returns tenant's tally, all of them for the empty tenant; a tally
// that is read only.
func (ts *tallies) read(tenant string) *tally {
	if tenant == "" {
		return &ts.all
	}
	ts.mu.RLock()
	t := ts.byTenant[tenant]
	ts.mu.RUnlock()
	if t == nil {
		return &ts.none
	}
	return t
}

// of returns tenant's tally, made when it has none.
func (ts *tallies) of(tenant string) *tally {
	ts.mu.RLock()
	t := ts.byTenant[tenant]
	ts.mu.RUnlock()
	if t != nil {
		return t
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t = ts.byTenant[tenant]; t == nil {
		t = &tally{}
		t.activity.clock = ts.clock
		ts.byTenant[tenant] = t
	}
	return t
}

// transitioned counts a durable transition of a message of tenant.
func (ts *tallies) transitioned(tenant string, from, to Status) {
	ts.all.transitioned(from, to)
	ts.of(tenant).transitioned(from, to)
}

// delivered records the delivery latency of a message of tenant.
func (ts *tallies) delivered(tenant string, latency time.Duration) {
	ts.all.delivered(latency)
	ts.of(tenant).delivered(latency)
}

// deduplicatedSend counts a send of tenant answered with an earlier twin.
func (ts *tallies) deduplicatedSend(tenant string) {
	ts.all.deduplicated.Add(1)
	ts.of(tenant).deduplicated.Add(1)
}

// coalescedMessages counts n waiting messages of tenant that a newer one
// with their coalesce key cancelled.
func (ts *tallies) coalescedMessages(tenant string, n int) {
	ts.all.coalesced.Add(int64(n))
	ts.of(tenant).coalesced.Add(int64(n))
}

// transitioned tells the observer and the tallies of a durable transition
// of m.
func (e *Engine) transitioned(m *Message, from, to Status) {
	e.obs.Transitioned(m.Route, from, to)
	e.tallies.transitioned(m.Tenant, from, to)
}
