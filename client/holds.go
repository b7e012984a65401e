package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldmq/herald"
)

// Pause is an operator's pause of a lane, or of a whole route when Lane
// is empty (PauseLane).
type Pause struct {
	Route string `json:"route"`
	Lane  string `json:"lane,omitempty"`
	// Until ends the pause; zero: until resumed.
	Until  time.Time `json:"until,omitzero"`
	Reason string    `json:"reason,omitempty"`
}

// PauseLane pauses a lane of a configured route, or the whole route, for
// every tenant (POST /v1/lanes/pause): its messages stay QUEUED, on every
// node, across restarts, until p.Until or ResumeLane. It returns the pause
// as the server keeps it.
func (c *Client) PauseLane(ctx context.Context, p Pause) (herald.PauseView, error) {
	var out struct {
		Pause herald.PauseView `json:"pause"`
	}
	if _, err := c.call(ctx, call{method: http.MethodPost, path: "/v1/lanes/pause", in: p, out: &out, retry: true}); err != nil {
		return herald.PauseView{}, fmt.Errorf("herald: pause lane: %w", err)
	}
	return out.Pause, nil
}

// ResumeLane ends the operator's pause of route's lane, or of the whole
// route when lane is empty (POST /v1/lanes/resume), and reports whether
// there was one.
func (c *Client) ResumeLane(ctx context.Context, route, lane string) (bool, error) {
	in := struct {
		Route string `json:"route"`
		Lane  string `json:"lane,omitempty"`
	}{route, lane}
	var out struct {
		Resumed bool `json:"resumed"`
	}
	if _, err := c.call(ctx, call{method: http.MethodPost, path: "/v1/lanes/resume", in: in, out: &out, retry: true}); err != nil {
		return false, fmt.Errorf("herald: resume lane: %w", err)
	}
	return out.Resumed, nil
}

// LanePauses returns the operator's pauses in force, of route only when
// it is not empty (the pauses of GET /v1/lanes).
func (c *Client) LanePauses(ctx context.Context, route string) ([]herald.PauseView, error) {
	v := url.Values{}
	setNonEmpty(v, "route", route)
	var out struct {
		Pauses []herald.PauseView `json:"pauses"`
	}
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/v1/lanes" + query(v), out: &out, retry: true}); err != nil {
		return nil, fmt.Errorf("herald: lane pauses: %w", err)
	}
	return out.Pauses, nil
}

// Routes returns the configured routes with the key's tenant's messages
// counted by status (every tenant's for an admin key), and the orphaned
// routes: missing from the configuration, with pending messages that the
// server holds until the route is back (GET /v1/routes).
func (c *Client) Routes(ctx context.Context) (herald.RoutesView, error) {
	var v herald.RoutesView
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/v1/routes", out: &v, retry: true}); err != nil {
		return herald.RoutesView{}, fmt.Errorf("herald: routes: %w", err)
	}
	return v, nil
}

// FailOrphans moves the key's tenant's pending messages of route, which is
// missing from the configuration, to DELIVERY_FAILED (POST
// /v1/dead-letters/fail-orphans), and returns how many. A route in the
// configuration is a 409 CodeRouteConfigured.
func (c *Client) FailOrphans(ctx context.Context, route string) (int, error) {
	in := struct {
		Route string `json:"route"`
	}{route}
	var out struct {
		Failed int `json:"failed"`
	}
	if _, err := c.call(ctx, call{method: http.MethodPost, path: "/v1/dead-letters/fail-orphans", in: in, out: &out, retry: true}); err != nil {
		return 0, fmt.Errorf("herald: fail orphans: %w", err)
	}
	return out.Failed, nil
}
