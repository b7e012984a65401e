package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
)

// DeadLetterFilter selects the dead letters (DELIVERY_FAILED messages) of
// DeadLetters; every field is optional.
type DeadLetterFilter struct {
	// Route keeps the dead letters of this route only.
	Route string
	// Reason keeps the dead letters whose last error contains it.
	Reason string
	// Limit is the page size: 1..1000; 0 means the server's default (100).
	Limit int
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
	// Timelines asks for each message's timeline, which a list leaves
	// out otherwise (the server reads each message again).
	Timelines bool
}

func (f DeadLetterFilter) query() string {
	v := url.Values{}
	setNonEmpty(v, "route", f.Route)
	setNonEmpty(v, "reason", f.Reason)
	setNonEmpty(v, "cursor", f.Cursor)
	if f.Timelines {
		v.Set("timeline", "true")
	}
	if f.Limit != 0 {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	return query(v)
}

// DeadLetters returns one page of the dead letters that f selects, newest
// first, each with its last error (GET /v1/dead-letters).
func (c *Client) DeadLetters(ctx context.Context, f DeadLetterFilter) (Page, error) {
	var p Page
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/v1/dead-letters" + f.query(), out: &p, retry: true}); err != nil {
		return Page{}, fmt.Errorf("herald: list dead letters: %w", err)
	}
	return p, nil
}

// DeadLettersAll returns an iterator over every dead letter that f
// selects, newest first, from f.Cursor on, as ListAll does for messages.
func (c *Client) DeadLettersAll(ctx context.Context, f DeadLetterFilter) iter.Seq2[herald.MessageView, error] {
	return pages(f.Cursor, func(cursor string) (Page, error) {
		f.Cursor = cursor
		return c.DeadLetters(ctx, f)
	})
}

// ReplayFilter selects the dead letters ReplayDeadLetters replays and sets
// the pace; every field is optional (none: every dead letter, at once).
type ReplayFilter struct {
	// Route keeps the dead letters of this route only.
	Route string `json:"route,omitempty"`
	// Target keeps the dead letters of this target only, matched exactly
	// (with the route room:<name>, a subscription's deliveries).
	Target string `json:"target,omitempty"`
	// Reason keeps the dead letters whose last error contains it.
	Reason string `json:"reason,omitempty"`
	// Since and Until keep the dead letters that failed (were last
	// updated) at or after Since and before Until; zero means no bound.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// RatePerS spreads the replayed messages' dispatch: at most this many
	// per second, oldest first. 0 means no spacing.
	RatePerS float64 `json:"rate_per_s,omitempty"`
}

// ReplayDeadLetters moves the dead letters that f selects back to QUEUED
// (POST /v1/dead-letters/replay) and returns how many it moved.
func (c *Client) ReplayDeadLetters(ctx context.Context, f ReplayFilter) (int, error) {
	var out struct {
		Replayed int `json:"replayed"`
	}
	if _, err := c.call(ctx, call{method: http.MethodPost, path: "/v1/dead-letters/replay", in: f, out: &out, retry: true}); err != nil {
		return 0, fmt.Errorf("herald: replay dead letters: %w", err)
	}
	return out.Replayed, nil
}

// PurgeFilter selects the dead letters PurgeDeadLetters deletes; every
// field is optional (none: every dead letter).
type PurgeFilter struct {
	// Route keeps the dead letters of this route only.
	Route string
	// Before keeps the dead letters last updated before it; zero means any time.
	Before time.Time
}

// PurgeDeadLetters deletes the dead letters that f selects (DELETE
// /v1/dead-letters) and returns how many it deleted.
func (c *Client) PurgeDeadLetters(ctx context.Context, f PurgeFilter) (int, error) {
	v := url.Values{}
	setNonEmpty(v, "route", f.Route)
	if !f.Before.IsZero() {
		v.Set("before", f.Before.UTC().Format(time.RFC3339Nano))
	}
	var out struct {
		Purged int `json:"purged"`
	}
	if _, err := c.call(ctx, call{method: http.MethodDelete, path: "/v1/dead-letters" + query(v), out: &out, retry: true}); err != nil {
		return 0, fmt.Errorf("herald: purge dead letters: %w", err)
	}
	return out.Purged, nil
}
