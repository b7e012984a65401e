package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/heraldmq/herald"
	"github.com/prometheus/client_golang/prometheus"
)

// TopLanes is how many lanes the lane gauges cover unless WatchLanes is
// told otherwise: the busiest, so that a fleet of 100,000 lanes gives 20
// series, not 100,000.
const TopLanes = 20

// LanesInterval is the least time between two reads of the lanes: a
// scrape sooner after the last read is answered from it, so that many
// scrapers or a short scrape interval do not multiply the store's work.
const LanesInterval = 10 * time.Second

// lanesProblem is the problem kind counted when a scrape cannot read the lanes.
const lanesProblem = "lanes_error"

// lanesCollector exposes the gauges herald_lane_waiting{route,lane} and
// herald_lane_in_flight{route,lane} of the busiest lanes, read through a
// function at most once per interval; the lane label is a lane's
// name or its pseudonym (laneNames).
type lanesCollector struct {
	waiting, inFlight *prometheus.Desc
	problems          *prometheus.CounterVec
	interval          time.Duration
	now               func() time.Time

	// mu is held through a read, so that concurrent scrapes share it.
	mu     sync.Mutex
	f      func(ctx context.Context, q herald.LaneQuery) ([]herald.LaneState, error)
	names  *laneNames
	top    int
	last   []herald.LaneState
	lastAt time.Time // zero: read at the next scrape
}

func newLanesCollector(problems *prometheus.CounterVec) *lanesCollector {
	return &lanesCollector{
		waiting: prometheus.NewDesc("herald_lane_waiting",
			"QUEUED messages of a lane of a gated route, for the busiest lanes only (see herald_messages for every route's total); lane is a pseudonym unless names are shown.",
			[]string{"route", "lane"}, nil),
		inFlight: prometheus.NewDesc("herald_lane_in_flight",
			"Messages in flight (SENT_TO_NS, DELIVERED_TO_NS, SENT_TO_DEVICE) of a lane of a gated route, for the busiest lanes only; lane is a pseudonym unless names are shown.",
			[]string{"route", "lane"}, nil),
		problems: problems,
		interval: LanesInterval,
		now:      time.Now,
		names:    newLaneNames(),
	}
}

func (c *lanesCollector) set(f func(context.Context, herald.LaneQuery) ([]herald.LaneState, error), top int) {
	if top <= 0 {
		top = TopLanes
	}
	c.mu.Lock()
	c.f, c.top, c.last, c.lastAt = f, top, nil, time.Time{}
	c.mu.Unlock()
}

// Describe sends the gauges' descriptions.
func (c *lanesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.waiting
	ch <- c.inFlight
}

// Collect sends both gauges of each of the top lanes, read anew when the
// last read is older than the interval.
func (c *lanesCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return
	}
	if now := c.now(); c.lastAt.IsZero() || now.Sub(c.lastAt) >= c.interval {
		ctx, cancel := context.WithTimeout(context.Background(), CountsTimeout)
		lanes, err := c.f(ctx, herald.LaneQuery{Limit: c.top})
		cancel()
		if err != nil {
			c.last, c.lastAt = nil, time.Time{}
			c.problems.WithLabelValues(lanesProblem).Inc()
			ch <- prometheus.NewInvalidMetric(c.waiting, err)
			return
		}
		c.last, c.lastAt = lanes[:min(len(lanes), c.top)], now
	}
	for _, l := range c.last {
		route, lane := routeLabel(l.Route), c.names.label(l.Route, l.Lane)
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(l.Queued), route, lane)
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(len(l.InFlight)), route, lane)
	}
}
