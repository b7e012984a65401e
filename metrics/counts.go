package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/heraldmq/herald"
	"github.com/prometheus/client_golang/prometheus"
)

// CountsTimeout bounds the store call of one scrape.
const CountsTimeout = 5 * time.Second

// countsProblem is the problem kind counted when a scrape cannot read the counts.
const countsProblem = "counts_error"

// countsCollector exposes the gauge herald_messages{route,status}, read
// through a function on each scrape.
type countsCollector struct {
	desc     *prometheus.Desc
	problems *prometheus.CounterVec

	mu sync.Mutex
	f  func(context.Context) ([]herald.Count, error)
}

func newCountsCollector(problems *prometheus.CounterVec) *countsCollector {
	return &countsCollector{
		desc: prometheus.NewDesc("herald_messages",
			"Messages kept, by route and status (queue depth for QUEUED and TO_RETRY).",
			[]string{"route", "status"}, nil),
		problems: problems,
	}
}

func (c *countsCollector) set(f func(context.Context) ([]herald.Count, error)) {
	c.mu.Lock()
	c.f = f
	c.mu.Unlock()
}

// Describe sends the gauge's description.
func (c *countsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect reads the counts and sends one gauge per route and status; every
// status of a route that has messages is sent, so that depths fall to zero
// instead of vanishing.
func (c *countsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	f := c.f
	c.mu.Unlock()
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), CountsTimeout)
	defer cancel()
	counts, err := f(ctx)
	if err != nil {
		c.problems.WithLabelValues(countsProblem).Inc()
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	byRoute := map[string]map[herald.Status]int{}
	for _, n := range counts {
		route := routeLabel(n.Route)
		if byRoute[route] == nil {
			byRoute[route] = map[herald.Status]int{}
		}
		byRoute[route][n.Status] += n.N
	}
	for route, byStatus := range byRoute {
		for _, st := range herald.Statuses {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(byStatus[st]), route, string(st))
		}
	}
}
