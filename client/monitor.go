package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/heraldmq/herald"
)

// Stats returns the tenant's counts by status and route, the oldest
// waiting message's age, the success rate, the delivery latencies and the
// counters, every tenant's for an admin key (GET /v1/stats).
func (c *Client) Stats(ctx context.Context) (herald.Stats, error) {
	var s herald.Stats
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/v1/stats", out: &s, retry: true}); err != nil {
		return herald.Stats{}, fmt.Errorf("herald: stats: %w", err)
	}
	return s, nil
}

// Health returns the tenant's queue against the server's thresholds:
// healthy, warning or critical, with the warnings and the stats (GET
// /v1/health).
func (c *Client) Health(ctx context.Context) (herald.Health, error) {
	var h herald.Health
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/v1/health", out: &h, retry: true}); err != nil {
		return herald.Health{}, fmt.Errorf("herald: health: %w", err)
	}
	return h, nil
}

// LaneFilter selects the lanes of Lanes; every field is optional.
type LaneFilter struct {
	// Route keeps the lanes of this route only; an unknown route is a 400
	// unknown_route.
	Route string
	// Limit bounds the lanes returned: 1..herald.MaxLaneLimit; 0 means
	// herald.DefaultLaneLimit.
	Limit int
}

// Lanes returns the busiest lanes of the routes with flow control, by
// queued plus in flight (GET /v1/lanes): those that hold the key's
// tenant's messages, counting only those, or every lane for an admin key.
func (c *Client) Lanes(ctx context.Context, f LaneFilter) ([]herald.LaneView, error) {
	v := url.Values{}
	setNonEmpty(v, "route", f.Route)
	if f.Limit != 0 {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	var out struct {
		Lanes []herald.LaneView `json:"lanes"`
	}
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/v1/lanes" + query(v), out: &out, retry: true}); err != nil {
		return nil, fmt.Errorf("herald: lanes: %w", err)
	}
	return out.Lanes, nil
}

// Activity returns what the server's process did with the key's tenant's
// messages (every tenant's for an admin key) in each minute of the last
// hour, oldest first (GET /v1/activity).
func (c *Client) Activity(ctx context.Context) ([]herald.ActivityMinute, error) {
	var out struct {
		Minutes []herald.ActivityMinute `json:"minutes"`
	}
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/v1/activity", out: &out, retry: true}); err != nil {
		return nil, fmt.Errorf("herald: activity: %w", err)
	}
	return out.Minutes, nil
}

// Ready reports whether the server is ready: nil when its store answers,
// else the error, a 503 store_unavailable when the store does not (GET
// /readyz). It is not retried: it says how things are now.
func (c *Client) Ready(ctx context.Context) error {
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/readyz"}); err != nil {
		return fmt.Errorf("herald: ready: %w", err)
	}
	return nil
}
