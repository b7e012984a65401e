package herald

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DeadEventView is the JSON shape of a dead outcome event that users
// read: its subscriber gave up on it after its last delivery failed.
type DeadEventView struct {
	ID         string `json:"id"`
	Subscriber string `json:"subscriber"`
	// Type is the status the message moved to, or a lane event's or an
	// uplink's type.
	Type Status    `json:"type"`
	At   time.Time `json:"at"`
	// MessageID is the message the event is about.
	MessageID string `json:"message_id"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
}

// DeadEventFilter selects a tenant's dead outcome events. Empty fields
// match everything.
type DeadEventFilter struct {
	Subscriber string
	// Since and Until bound the event's time (inclusive, exclusive).
	Since, Until time.Time
	// Limit bounds a page: 1 to MaxDeadEventPage, 0 for
	// DefaultDeadEventPage.
	Limit int
	// Cursor is the next_cursor of the page before, "" for the first.
	Cursor string
}

// The pages of DeadEvents.
const (
	DefaultDeadEventPage = 100
	MaxDeadEventPage     = 1000
)

// DeadEvents returns a page of tenant's dead outcome events (those about
// its messages), newest first, and the cursor of the next page ("" when
// there is none). Bad input returns an *InvalidError.
func (e *Engine) DeadEvents(ctx context.Context, tenant string, f DeadEventFilter) ([]DeadEventView, string, error) {
	q, err := e.deadEventQuery(tenant, f.Subscriber, f.Since, f.Until)
	if err != nil {
		return nil, "", err
	}
	switch {
	case f.Limit == 0:
		q.Limit = DefaultDeadEventPage
	case f.Limit < 0 || f.Limit > MaxDeadEventPage:
		return nil, "", Invalid("limit", "%d: want 1 to %d", f.Limit, MaxDeadEventPage)
	default:
		q.Limit = f.Limit
	}
	if q.After, err = decodeEventCursor(f.Cursor); err != nil {
		return nil, "", err
	}
	events, next, err := e.store.DeadEvents(ctx, q)
	if err != nil {
		e.problem("store_error", "list dead outcome events", "err", err)
		return nil, "", fmt.Errorf("dead outcome events: %w", err)
	}
	views := make([]DeadEventView, len(events))
	for i, ev := range events {
		views[i] = DeadEventView{ID: ev.ID, Subscriber: ev.Subscriber, Type: ev.Type, At: ev.At.UTC(), MessageID: ev.MessageID,
			Attempts: ev.Attempt, LastError: ev.LastError}
	}
	return views, encodeEventCursor(next), nil
}

// EventReplay names the dead outcome events to send again: IDs, or the
// filter of the other fields (none: every dead event of the tenant).
type EventReplay struct {
	IDs        []string
	Subscriber string
	Since      time.Time
	Until      time.Time
}

// ReplayEvents makes tenant's dead outcome events that r names live again:
// delivered at once, with their subscriber's attempts afresh. It returns
// how many; an id that names none of tenant's dead events is skipped.
// Bad input returns an *InvalidError.
func (e *Engine) ReplayEvents(ctx context.Context, tenant string, r EventReplay) (int, error) {
	if r.IDs != nil && (r.Subscriber != "" || !r.Since.IsZero() || !r.Until.IsZero()) {
		return 0, Invalid("ids", "give ids or a filter (subscriber, since, until), not both")
	}
	if r.IDs != nil {
		if len(r.IDs) == 0 || len(r.IDs) > MaxDeadEventPage {
			return 0, Invalid("ids", "%d ids: want 1 to %d", len(r.IDs), MaxDeadEventPage)
		}
		return e.replayEvents(ctx, tenant, r.IDs)
	}
	q, err := e.deadEventQuery(tenant, r.Subscriber, r.Since, r.Until)
	if err != nil {
		return 0, err
	}
	q.Limit = MaxDeadEventPage
	total := 0
	for {
		events, next, err := e.store.DeadEvents(ctx, q)
		if err != nil {
			e.problem("store_error", "list dead outcome events", "err", err)
			return total, fmt.Errorf("replay outcome events: %w", err)
		}
		ids := make([]string, len(events))
		for i, ev := range events {
			ids[i] = ev.ID
		}
		n, err := e.replayEvents(ctx, tenant, ids)
		total += n
		if err != nil || next.IsZero() {
			return total, err
		}
		q.After = next
	}
}

// replayEvents makes tenant's dead events ids live again and wakes the
// outbox.
func (e *Engine) replayEvents(ctx context.Context, tenant string, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	n, err := e.store.ReplayEvents(ctx, tenant, ids, e.clock.Now())
	if err != nil {
		e.problem("store_error", "replay outcome events", "err", err)
		return n, fmt.Errorf("replay outcome events: %w", err)
	}
	if n > 0 {
		e.log.Info("outcome events replayed", "tenant", tenant, "events", n)
		if len(e.subscribers) > 0 { // else no outbox runs to take the nudge
			e.nudge(e.eventPending)
		}
	}
	return n, nil
}

// deadEventQuery checks a filter of tenant's dead events and returns its
// query.
func (e *Engine) deadEventQuery(tenant, subscriber string, since, until time.Time) (EventQuery, error) {
	if _, ok := e.subscriber(subscriber); subscriber != "" && !ok {
		return EventQuery{}, Invalid("subscriber", "%q is no configured subscriber", truncate(subscriber, 64))
	}
	if !since.IsZero() && !until.IsZero() && !until.After(since) {
		return EventQuery{}, Invalid("until", "is not after since")
	}
	return EventQuery{Tenant: tenant, Subscriber: subscriber, Since: since, Until: until}, nil
}

// encodeEventCursor returns c as the opaque cursor of a page, "" for
// none.
func encodeEventCursor(c EventCursor) string {
	if c.IsZero() {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.At.UnixMilli(), 10) + "." + c.ID))
}

// decodeEventCursor reads a cursor encodeEventCursor made.
func decodeEventCursor(s string) (EventCursor, error) {
	if s == "" {
		return EventCursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	ms, id, ok := strings.Cut(string(b), ".")
	at, err2 := strconv.ParseInt(ms, 10, 64)
	if err != nil || !ok || err2 != nil || id == "" {
		return EventCursor{}, Invalid("cursor", "not a cursor this API gave: pass next_cursor from the previous page as it is")
	}
	return EventCursor{At: time.UnixMilli(at), ID: id}, nil
}
