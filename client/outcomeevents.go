package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
)

// DeadEventFilter selects the dead outcome events of DeadEvents; every
// field is optional.
type DeadEventFilter struct {
	// Subscriber keeps the events of this configured subscriber only.
	Subscriber string
	// Since and Until keep the events at or after Since and before
	// Until; zero means no bound.
	Since, Until time.Time
	// Limit is the page size: 1..1000; 0 means the server's default (100).
	Limit int
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
}

// DeadEventPage is a page of dead outcome events.
type DeadEventPage struct {
	Events []herald.DeadEventView `json:"events"`
	// NextCursor is the Cursor of the next page; empty on the last.
	NextCursor string `json:"next_cursor"`
}

// DeadEvents returns one page of the tenant's dead outcome events that f
// selects, newest first, each with its attempts and last error (GET
// /v1/outcome-events?status=dead).
func (c *Client) DeadEvents(ctx context.Context, f DeadEventFilter) (DeadEventPage, error) {
	v := url.Values{"status": {"dead"}}
	setNonEmpty(v, "subscriber", f.Subscriber)
	setNonEmpty(v, "cursor", f.Cursor)
	if !f.Since.IsZero() {
		v.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		v.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	if f.Limit != 0 {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	var p DeadEventPage
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/v1/outcome-events" + query(v), out: &p, retry: true}); err != nil {
		return DeadEventPage{}, fmt.Errorf("herald: list dead outcome events: %w", err)
	}
	return p, nil
}

// EventReplay names the dead outcome events ReplayEvents sends again: IDs,
// or the filter of the other fields, not both (none: every one).
type EventReplay struct {
	IDs        []string `json:"ids,omitempty"`
	Subscriber string   `json:"subscriber,omitempty"`
	// Since and Until keep the events at or after Since and before
	// Until; zero means no bound.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// ReplayEvents sends the dead outcome events that r names again, each with
// its subscriber's attempts afresh (POST /v1/outcome-events/replay), and
// returns how many.
func (c *Client) ReplayEvents(ctx context.Context, r EventReplay) (int, error) {
	var out struct {
		Replayed int `json:"replayed"`
	}
	if _, err := c.call(ctx, call{method: http.MethodPost, path: "/v1/outcome-events/replay", in: r, out: &out, retry: true}); err != nil {
		return 0, fmt.Errorf("herald: replay outcome events: %w", err)
	}
	return out.Replayed, nil
}
