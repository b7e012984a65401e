// Package metrics is a herald.Observer that exposes what the engine does in
// the Prometheus text format, on a registry of its own:
//
//   - herald_transitions_total{route,from,to}: transitions made durable
//     (from is empty for a message's creation);
//   - herald_delivery_latency_seconds{route}: creation to DELIVERY_SUCCESSFUL;
//   - herald_problems_total{kind}: things that went wrong, by kind;
//   - herald_messages{route,status}: messages kept, read from the store on
//     each scrape (see WatchCounts);
//   - herald_lane_waiting{route,lane}, herald_lane_in_flight{route,lane}:
//     QUEUED and in-flight messages of the busiest lanes of the gated
//     routes only, read from the store at most once per LanesInterval
//     (see WatchLanes), each lane by a pseudonym unless ShowLaneNames;
//   - herald_throttled_total{route,reason}: messages the engine held back,
//     by reason (backpressure: the carrier asked to wait);
//   - herald_lane_pauses_total{route,reason}: lane pauses, by reason;
//   - herald_inbound_total{route,kind,result,reason}: events carriers'
//     networks sent back, by what became of them (see
//     herald.Observer.Inbound), and those refused by reason (result
//     "refused"; see herald.Observer.Refused);
//
// plus the Go runtime and process collectors.
//
// No label carries a string a tenant chose: the rooms' routes ("room:" and
// a room's name) are all "room:", and a lane's name (a chat id, a
// gateway) is replaced by a pseudonym unless ShowLaneNames is called,
// which a server does only when a scrape needs a key of its own.
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/heraldmq/herald"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// LatencyBuckets are the upper bounds, in seconds, of the delivery latency
// histogram: 1 ms to 1 h.
var LatencyBuckets = []float64{
	0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
	60, 120, 300, 600, 1800, 3600,
}

// Metrics observes an engine and serves its metrics. Create it with New.
type Metrics struct {
	reg         *prometheus.Registry
	transitions *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	problems    *prometheus.CounterVec
	throttled   *prometheus.CounterVec
	lanePauses  *prometheus.CounterVec
	inbound     *prometheus.CounterVec
	counts      *countsCollector
	lanes       *lanesCollector
	orphaned    *prometheus.GaugeVec
	opPaused    prometheus.Gauge
}

var (
	_ herald.Observer     = (*Metrics)(nil)
	_ herald.HoldObserver = (*Metrics)(nil)
)

// New returns Metrics registered on a fresh registry together with the Go
// and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_transitions_total",
			Help: "Message transitions made durable, by route and statuses (from is empty for a creation).",
		}, []string{"route", "from", "to"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_delivery_latency_seconds",
			Help:    "Time from a message's creation to DELIVERY_SUCCESSFUL, by route.",
			Buckets: LatencyBuckets,
		}, []string{"route"}),
		problems: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_problems_total",
			Help: "Things that went wrong, by kind (store_error, stale_completion, event_retry, event_dead, carrier_error, ...).",
		}, []string{"kind"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_throttled_total",
			Help: "Messages the engine held back, by route and reason (backpressure: the carrier asked to wait).",
		}, []string{"route", "reason"}),
		lanePauses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_lane_pauses_total",
			Help: "Pauses of a gated route's lane, by route and reason (backpressure).",
		}, []string{"route", "reason"}),
		inbound: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_inbound_total",
			Help: "Events carriers' networks sent back, by route, event type or kind, and result (stored, ignored, applied, stale, unmatched, unpaired, uplink, refused); a refused event by reason (unauthorized, unknown_route, invalid, too_large), its route empty when it is not configured.",
		}, []string{"route", "kind", "result", "reason"}),
	}
	m.orphaned = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "herald_orphaned_messages",
		Help: "Pending messages of a route missing from the configuration, held (not sent, not failed) until it is back, as last counted.",
	}, []string{"route"})
	m.opPaused = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "herald_operator_paused_lanes",
		Help: "Lanes and routes an operator paused (POST /v1/lanes/pause), in force.",
	})
	m.counts = newCountsCollector(m.problems)
	m.lanes = newLanesCollector(m.problems)
	m.reg.MustRegister(m.herald()...)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// herald returns the collectors of herald's own series.
func (m *Metrics) herald() []prometheus.Collector {
	return []prometheus.Collector{m.transitions, m.latency, m.problems, m.throttled, m.lanePauses, m.inbound, m.counts, m.lanes, m.orphaned, m.opPaused}
}

// Registry returns the registry the metrics live on, to add collectors of
// one's own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format. A scrape whose
// message counts cannot be read still serves every other metric.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// WatchCounts makes each scrape call f for the gauge herald_messages; pass
// the store's Counts. Counts of all tenants are summed per route and status.
func (m *Metrics) WatchCounts(f func(context.Context) ([]herald.Count, error)) {
	m.counts.set(f)
}

// WatchLanes makes scrapes call f, at most once per LanesInterval, for the
// gauges herald_lane_waiting and herald_lane_in_flight of the top busiest
// lanes (TopLanes when top is 0 or less); pass the store's Lanes. Only the
// top lanes get series: the rest of a route is its herald_messages less
// their sum.
func (m *Metrics) WatchLanes(f func(ctx context.Context, q herald.LaneQuery) ([]herald.LaneState, error), top int) {
	m.lanes.set(f, top)
}

// ShowLaneNames makes the lane gauges carry each lane's name rather than
// its pseudonym. Lane names are the tenants' (a chat id is a person's):
// show them only to a scraper that must present a key.
func (m *Metrics) ShowLaneNames() { m.lanes.names.shown.Store(true) }

// Transitioned counts a transition of a message of route.
func (m *Metrics) Transitioned(route string, from, to herald.Status) {
	m.transitions.WithLabelValues(routeLabel(route), string(from), string(to)).Inc()
}

// Delivered records a delivery's latency.
func (m *Metrics) Delivered(route string, latency time.Duration) {
	m.latency.WithLabelValues(routeLabel(route)).Observe(latency.Seconds())
}

// Throttled counts a message of route held back for reason, and a pause
// of its lane when it paused.
func (m *Metrics) Throttled(route, reason string, lanePaused bool) {
	m.throttled.WithLabelValues(routeLabel(route), reason).Inc()
	if lanePaused {
		m.lanePauses.WithLabelValues(routeLabel(route), reason).Inc()
	}
}

// Inbound counts an event a route's network sent back.
func (m *Metrics) Inbound(route, kind, result string) {
	m.inbound.WithLabelValues(routeLabel(route), kind, result, "").Inc()
}

// Refused counts an event posted to route that was refused, by reason:
// result "refused", no kind (the type the sender named is not believed).
func (m *Metrics) Refused(route, reason string) {
	m.inbound.WithLabelValues(routeLabel(route), "", "refused", reason).Inc()
}

// Held sets herald_orphaned_messages (a route no longer orphaned loses
// its series) and herald_operator_paused_lanes.
func (m *Metrics) Held(orphaned map[string]int, operatorPaused int) {
	m.orphaned.Reset()
	for route, n := range orphaned {
		m.orphaned.WithLabelValues(routeLabel(route)).Add(float64(n))
	}
	m.opPaused.Set(float64(operatorPaused))
}

// Problem counts something that went wrong.
func (m *Metrics) Problem(kind string) {
	m.problems.WithLabelValues(kind).Inc()
}
