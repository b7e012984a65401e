package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
)

// SendRequest is the body of POST /v1/messages. Route and one of Payload or
// Text are required; every other field is optional. The server checks
// everything (limits, the route's carrier) and answers bad input 400
// naming the field.
type SendRequest struct {
	// Route names a configured route.
	Route string `json:"route"`
	// Target is the recipient as the carrier knows it (a DevEUI, a meter
	// number, a chat id); optional on a webhook route.
	Target string `json:"target,omitempty"`
	// Payload is the bytes to deliver (sent base64-encoded).
	Payload []byte `json:"payload,omitempty"`
	// Text is the text to deliver (chat carriers, webhooks).
	Text string `json:"text,omitempty"`
	// Params are carrier-specific options, e.g. {"f_port": "1"}.
	Params map[string]string `json:"params,omitempty"`
	// Priority: higher is sent sooner; -1000..1000, default 0.
	Priority int `json:"priority,omitempty"`
	// Lane is the flow-control key; the carrier derives one when empty.
	Lane string `json:"lane,omitempty"`
	// CorrelationID is the caller's own id, listed and searchable.
	CorrelationID string `json:"correlation_id,omitempty"`
	// IdempotencyKey makes a repeat with the same key and route return the
	// first message (SendResult.Created false) and queue nothing. A Send
	// with one is retried on 503 store_unavailable; one without is not.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// CoalesceKey makes this message replace an older one of the same key
	// and route still QUEUED or TO_RETRY (which ends CANCELLED "coalesced").
	CoalesceKey string `json:"coalesce_key,omitempty"`
	// ExpiresAt is when the message fails "expired" wherever it is; zero
	// means the route's policy max age.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// SendAt keeps the message QUEUED, not sent before it (at most 366
	// days ahead); zero, or a time past, means at once.
	SendAt time.Time `json:"send_at,omitzero"`
}

// SendResult is the answer of Send.
type SendResult struct {
	// Message is the message's view: the new one, or the earlier one for an
	// idempotent repeat or a duplicate.
	Message herald.MessageView
	// Created is true when the server queued a new message (202), false
	// when it returned an earlier one (200): an idempotent repeat, or a
	// duplicate of a message delivered within the route's dedup_ttl. A
	// send retried after a 503 whose first try was stored after all (its
	// answer lost) comes back as a repeat: false.
	Created bool
	// Deduplicated is true when the earlier message was returned as a
	// duplicate of this one's content (dedup_ttl), not for its idempotency key.
	Deduplicated bool
}

// Send sends one message (POST /v1/messages).
func (c *Client) Send(ctx context.Context, req SendRequest) (SendResult, error) {
	var v herald.MessageView
	status, err := c.call(ctx, call{
		method: http.MethodPost, path: "/v1/messages", in: req, out: &v,
		retry: req.IdempotencyKey != "",
	})
	if err != nil {
		return SendResult{}, fmt.Errorf("herald: send to route %q: %w", req.Route, err)
	}
	return SendResult{Message: v, Created: status == http.StatusAccepted, Deduplicated: v.Deduplicated}, nil
}

// Get returns the message id with its timeline (GET /v1/messages/{id}); a
// message that does not exist, or is another tenant's, is a 404 (IsNotFound).
func (c *Client) Get(ctx context.Context, id string) (herald.MessageView, error) {
	var v herald.MessageView
	if _, err := c.call(ctx, call{method: http.MethodGet, path: messagePath(id, ""), out: &v, retry: true}); err != nil {
		return herald.MessageView{}, fmt.Errorf("herald: get message %s: %w", id, err)
	}
	return v, nil
}

// ListFilter selects the messages of List; every field is optional.
type ListFilter struct {
	// Status keeps the messages in this status only.
	Status herald.Status
	// Route keeps the messages of this route only.
	Route string
	// CorrelationID keeps the messages with this correlation id only.
	CorrelationID string
	// Target keeps the messages to this target (exactly) only.
	Target string
	// IDPrefix keeps the messages whose id starts with it only: a
	// shortened id, resolved by listing with Limit 2.
	IDPrefix string
	// Limit is the page size: 1..1000; 0 means the server's default (100).
	Limit int
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
	// Timelines asks for each message's timeline, which a list leaves
	// out otherwise (the server reads each message again).
	Timelines bool
}

func (f ListFilter) query() string {
	v := url.Values{}
	setNonEmpty(v, "status", string(f.Status))
	setNonEmpty(v, "route", f.Route)
	setNonEmpty(v, "correlation_id", f.CorrelationID)
	setNonEmpty(v, "target", f.Target)
	setNonEmpty(v, "id_prefix", f.IDPrefix)
	setNonEmpty(v, "cursor", f.Cursor)
	if f.Timelines {
		v.Set("timeline", "true")
	}
	if f.Limit != 0 {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	return query(v)
}

// Page is one page of a list: the messages, newest first, and the cursor of
// the next page ("" when there is none).
type Page struct {
	// Messages are the page's messages, newest first.
	Messages []herald.MessageView `json:"messages"`
	// NextCursor is the Cursor of the next page; "" after the last.
	NextCursor string `json:"next_cursor"`
}

// List returns one page of the messages that f selects, newest first (GET
// /v1/messages). Pass the page's NextCursor as f.Cursor for the next one,
// or use ListAll.
func (c *Client) List(ctx context.Context, f ListFilter) (Page, error) {
	var p Page
	if _, err := c.call(ctx, call{method: http.MethodGet, path: "/v1/messages" + f.query(), out: &p, retry: true}); err != nil {
		return Page{}, fmt.Errorf("herald: list messages: %w", err)
	}
	return p, nil
}

// ListAll returns an iterator over every message that f selects, newest
// first, from f.Cursor on: it reads a page of f.Limit messages whenever it
// needs one. An error is yielded once, with a zero view, and ends the
// iteration. Stopping the loop early reads no further page.
func (c *Client) ListAll(ctx context.Context, f ListFilter) iter.Seq2[herald.MessageView, error] {
	return pages(f.Cursor, func(cursor string) (Page, error) {
		f.Cursor = cursor
		return c.List(ctx, f)
	})
}

// pages iterates over the messages of the pages that fetch returns, from
// the page at cursor on, following each page's NextCursor until it is empty.
func pages(cursor string, fetch func(cursor string) (Page, error)) iter.Seq2[herald.MessageView, error] {
	return func(yield func(herald.MessageView, error) bool) {
		seen := map[string]bool{}
		for {
			p, err := fetch(cursor)
			if err != nil {
				yield(herald.MessageView{}, err)
				return
			}
			for _, m := range p.Messages {
				if !yield(m, nil) {
					return
				}
			}
			if p.NextCursor == "" {
				return
			}
			if seen[p.NextCursor] {
				yield(herald.MessageView{}, fmt.Errorf("herald: the server gave cursor %s twice; stopping", p.NextCursor))
				return
			}
			seen[p.NextCursor] = true
			cursor = p.NextCursor
		}
	}
}

// Cancel moves a QUEUED or TO_RETRY message to CANCELLED and returns it
// (POST /v1/messages/{id}/cancel); any other status is a 409
// not_cancellable (IsConflict). It is retried on 503 store_unavailable:
// should a lost answer hide a cancel that was done, the retry answers 409.
func (c *Client) Cancel(ctx context.Context, id string) (herald.MessageView, error) {
	var v herald.MessageView
	if _, err := c.call(ctx, call{method: http.MethodPost, path: messagePath(id, "/cancel"), out: &v, retry: true}); err != nil {
		return herald.MessageView{}, fmt.Errorf("herald: cancel message %s: %w", id, err)
	}
	return v, nil
}

// Replay moves a DELIVERY_FAILED or CANCELLED message back to QUEUED with
// its attempts reset, and returns it (POST /v1/messages/{id}/replay); its
// timeline keeps the history. Any other status is a 409 not_replayable
// (IsConflict). It is retried on 503 store_unavailable, like Cancel.
func (c *Client) Replay(ctx context.Context, id string) (herald.MessageView, error) {
	var v herald.MessageView
	if _, err := c.call(ctx, call{method: http.MethodPost, path: messagePath(id, "/replay"), out: &v, retry: true}); err != nil {
		return herald.MessageView{}, fmt.Errorf("herald: replay message %s: %w", id, err)
	}
	return v, nil
}

// SendNow makes a QUEUED message scheduled for later (SendAt), or a
// TO_RETRY one, due now, and returns it (POST
// /v1/messages/{id}/send-now); its timeline records it. Any other status
// is a 409 not_waiting (IsConflict). It is retried on 503
// store_unavailable, like Cancel.
func (c *Client) SendNow(ctx context.Context, id string) (herald.MessageView, error) {
	var v herald.MessageView
	if _, err := c.call(ctx, call{method: http.MethodPost, path: messagePath(id, "/send-now"), out: &v, retry: true}); err != nil {
		return herald.MessageView{}, fmt.Errorf("herald: send message %s now: %w", id, err)
	}
	return v, nil
}

// CancelFilter selects the waiting messages CancelMessages cancels: Route
// is required, every other field optional, and every one given must match.
type CancelFilter struct {
	Route  string        `json:"route"`
	Lane   string        `json:"lane,omitempty"`
	Target string        `json:"target,omitempty"`
	Status herald.Status `json:"status,omitempty"` // QUEUED or TO_RETRY; empty for both
	// Before keeps the messages created before it; zero means any time.
	Before time.Time `json:"before,omitzero"`
}

// CancelMessages cancels the waiting (QUEUED and TO_RETRY) messages that f
// selects (POST /v1/messages/cancel) and returns how many; none in flight
// is touched. It is retried on 503 store_unavailable: a retry cancels
// only what the first try left.
func (c *Client) CancelMessages(ctx context.Context, f CancelFilter) (int, error) {
	var out struct {
		Cancelled int `json:"cancelled"`
	}
	if _, err := c.call(ctx, call{method: http.MethodPost, path: "/v1/messages/cancel", in: f, out: &out, retry: true}); err != nil {
		return 0, fmt.Errorf("herald: cancel messages of route %q: %w", f.Route, err)
	}
	return out.Cancelled, nil
}

// Explain says why the message is or is not moving (GET
// /v1/messages/{id}/explain): lane_spacing, backoff, awaiting_carrier,
// terminal and so on (see docs/CONFIG.md, "Lanes and admission").
func (c *Client) Explain(ctx context.Context, id string) (herald.Explanation, error) {
	var x herald.Explanation
	if _, err := c.call(ctx, call{method: http.MethodGet, path: messagePath(id, "/explain"), out: &x, retry: true}); err != nil {
		return herald.Explanation{}, fmt.Errorf("herald: explain message %s: %w", id, err)
	}
	return x, nil
}

// messagePath is the path of message id, followed by suffix.
func messagePath(id, suffix string) string {
	return "/v1/messages/" + url.PathEscape(id) + suffix
}

// Condition says whether WaitFor has seen what it waits for.
type Condition func(herald.MessageView) bool

// Terminal is the Condition that the message is terminal:
// DELIVERY_SUCCESSFUL, DELIVERY_FAILED or CANCELLED.
func Terminal(m herald.MessageView) bool { return m.Status.Terminal() }

// InStatus returns the Condition that the message is in one of statuses.
func InStatus(statuses ...herald.Status) Condition {
	statuses = slices.Clone(statuses)
	return func(m herald.MessageView) bool { return slices.Contains(statuses, m.Status) }
}

// WaitFor reads the message id until cond holds for it (nil means
// Terminal) and returns it. It reads at once, then after a wait that
// starts short and doubles up to Config.PollInterval. When ctx ends first
// it returns the message as last read (a zero view if none was) and an
// error that wraps ctx's; an error reading the message (after its own
// retries) ends the wait too.
func (c *Client) WaitFor(ctx context.Context, id string, cond Condition) (herald.MessageView, error) {
	if cond == nil {
		cond = Terminal
	}
	wait := min(25*time.Millisecond, c.cfg.PollInterval)
	var last herald.MessageView
	for {
		m, err := c.Get(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return last, fmt.Errorf("herald: wait for message %s: %w (%s)", id, ctx.Err(), lastSeen(last))
			}
			return last, err
		}
		last = m
		if cond(m) {
			return m, nil
		}
		if err := sleep(ctx, wait); err != nil {
			return last, fmt.Errorf("herald: wait for message %s: %w (%s)", id, err, lastSeen(last))
		}
		wait = min(2*wait, c.cfg.PollInterval)
	}
}

// lastSeen says, for an error, in which status m was last read.
func lastSeen(m herald.MessageView) string {
	if m.ID == "" {
		return "not read yet"
	}
	return "last seen " + string(m.Status)
}
