package herald

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"
)

// MessageView is the JSON shape of a message that users read: the HTTP API's
// responses and the outcome events' "message" field.
type MessageView struct {
	ID            string            `json:"id"`
	Route         string            `json:"route"`
	Target        string            `json:"target"`
	Lane          string            `json:"lane"`
	Status        Status            `json:"status"`
	Attempt       int               `json:"attempt"`
	MaxAttempts   int               `json:"max_attempts"`
	Priority      int               `json:"priority"`
	CorrelationID string            `json:"correlation_id"`
	CreatedAt     time.Time         `json:"created_at"`
	UpdatedAt     time.Time         `json:"updated_at"`
	NextAttemptAt *time.Time        `json:"next_attempt_at"`
	Deadline      *time.Time        `json:"deadline"`
	ExpiresAt     *time.Time        `json:"expires_at"`
	ExternalID    string            `json:"external_id"`
	LastError     string            `json:"last_error"`
	Result        map[string]string `json:"result,omitempty"` // what the carrier reported beyond delivery (Message.Result)
	Payload       string            `json:"payload,omitempty"`
	Text          string            `json:"text,omitempty"`
	Params        map[string]string `json:"params,omitempty"`
	Timeline      []TimelineView    `json:"timeline"`
	// Deduplicated is true on the earlier message a send returns in place
	// of a duplicate (dedup_ttl).
	Deduplicated bool `json:"deduplicated,omitempty"`
}

// TimelineView is the JSON shape of a TimelineEntry. An entry that ends
// an attempt also carries what the carrier answered (Call): answer, error
// and duration_ms, absent on the other entries.
type TimelineView struct {
	At      time.Time `json:"at"`
	From    Status    `json:"from"`
	To      Status    `json:"to"`
	Attempt int       `json:"attempt"`
	Reason  string    `json:"reason"`
	// Answer is the carrier's code: an HTTP status, a gRPC code, a
	// vendor's code.
	Answer string `json:"answer,omitempty"`
	// Error is the failure's text (at most MaxCallError bytes).
	Error string `json:"error,omitempty"`
	// DurationMS is how long the call took, in milliseconds (absent when
	// under one, or when no call ended the attempt: a timeout).
	DurationMS int64 `json:"duration_ms,omitempty"`
}

// View returns the user-facing shape of m.
func (m *Message) View() MessageView {
	v := MessageView{
		ID: m.ID, Route: m.Route, Target: m.Target, Lane: m.Lane, Status: m.Status,
		Attempt: m.Attempt, MaxAttempts: m.MaxAttempts, Priority: m.Priority,
		CorrelationID: m.CorrelationID, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(),
		ExternalID: m.ExternalID, LastError: m.LastError, Result: m.Result, Text: m.Text, Params: m.Params,
		Timeline: make([]TimelineView, 0, len(m.Timeline)), Deduplicated: m.Deduplicated,
	}
	if len(m.Payload) > 0 {
		v.Payload = base64.StdEncoding.EncodeToString(m.Payload)
	}
	if m.Status.Waiting() && !m.DueAt.IsZero() && m.DueAt.After(m.CreatedAt) {
		v.NextAttemptAt = utcPtr(m.DueAt)
	}
	if m.Status.InFlight() && !m.Deadline.IsZero() {
		v.Deadline = utcPtr(m.Deadline)
	}
	if !m.ExpiresAt.IsZero() {
		v.ExpiresAt = utcPtr(m.ExpiresAt)
	}
	for _, e := range m.Timeline {
		v.Timeline = append(v.Timeline, TimelineView{At: e.At.UTC(), From: e.From, To: e.To, Attempt: e.Attempt, Reason: e.Reason,
			Answer: e.Answer, Error: e.Error, DurationMS: e.Duration.Milliseconds()})
	}
	return v
}

func utcPtr(t time.Time) *time.Time {
	u := t.UTC()
	return &u
}

// OutcomeEvent is the JSON body sent to an outcome subscriber: a message's
// transition (Type is the status it moved to, Message its view), a lane's
// (Type is lane.circuit_open or lane.circuit_closed, Lane says which), a
// device's uplink (Uplink) or an LXMF message to herald (LXMF).
type OutcomeEvent struct {
	ID      string         `json:"id"`
	Type    Status         `json:"type"`
	At      time.Time      `json:"at"`
	Message *MessageView   `json:"message,omitempty"`
	Lane    *LaneEventView `json:"lane,omitempty"`
	// Uplink is a device's uplink that answers no message (type uplink),
	// as its carrier describes it.
	Uplink json.RawMessage `json:"uplink,omitempty"`
	// LXMF is an LXMF message addressed to herald (type lxmf.message), as
	// its carrier describes it: source, title, content, fields.
	LXMF json.RawMessage `json:"lxmf,omitempty"`
}

// LaneEventView is the lane of a lane event.
type LaneEventView struct {
	Route    string     `json:"route"`
	Lane     string     `json:"lane"`
	Failures int        `json:"failures"`        // transient failures in a row
	Until    *time.Time `json:"until,omitempty"` // circuit_open: the end of the cool-down
}

// EventSink delivers outcome events to one subscriber.
type EventSink interface {
	// Deliver sends e; e.ID is stable across retries of the same event.
	Deliver(ctx context.Context, e OutcomeEvent) error
}

// Subscriber receives an outcome event for each transition it subscribes to.
type Subscriber struct {
	Name  string
	Types []Status // defaults to DefaultEventTypes
	// Retry spaces the deliveries of one event; zero means
	// DefaultSubscriberRetry.
	Retry RetryPolicy
	// MaxAttempts bounds deliveries of one event; after the last it is
	// dead. Zero means DefaultSubscriberAttempts.
	MaxAttempts int
	Sink        EventSink
}

// The outcome events' deliveries, unless a subscriber says otherwise: as
// the original device-messaging system's receivers expect them, 6 in all,
// the retries after 2, 4, 8, 16 and 32 s (capped at 60 s), no jitter.
var DefaultSubscriberRetry = RetryPolicy{Kind: RetryExponential, Base: 2 * time.Second, Multiplier: 2, Max: time.Minute}

// DefaultSubscriberAttempts is the deliveries of one outcome event a
// subscriber gets unless it says otherwise.
const DefaultSubscriberAttempts = 6

// LaneView is the JSON shape of a lane that users read (GET /v1/lanes). A
// lane is shared by every tenant whose messages take it, so it shows
// counts only: in_flight is a number, never the ids. A tenant is shown
// only the lanes that hold its messages, counting those alone.
type LaneView struct {
	Route  string `json:"route"`
	Lane   string `json:"lane"`
	Queued int    `json:"queued"`
	// InFlight counts the lane's messages in flight: the tenant's, or every
	// tenant's for an operator.
	InFlight int `json:"in_flight"`
	// PausedUntil and PauseReason say until when and why the lane is
	// paused (backpressure, circuit_open, ...); null and "" when it is not.
	PausedUntil *time.Time `json:"paused_until"`
	PauseReason string     `json:"pause_reason"`
	// NextAt is when the lane's spacing lets its next message go; null
	// when one may go now.
	NextAt *time.Time `json:"next_at"`
	// OperatorPause is the operator's pause of the lane, or of its whole
	// route; null when none.
	OperatorPause *PauseView `json:"operator_pause"`
}

// View returns the shape of l that users read.
func (l LaneState) View() LaneView {
	v := LaneView{Route: l.Route, Lane: l.Lane, Queued: l.Queued, InFlight: len(l.InFlight),
		PausedUntil: utcOrNil(l.PausedUntil), PauseReason: l.PauseReason, NextAt: utcOrNil(l.NextAt)}
	if l.Operator != nil {
		p := l.Operator.View()
		v.OperatorPause = &p
	}
	return v
}

// utcOrNil is t in UTC, or nil (JSON null) when t is zero.
func utcOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return utcPtr(t)
}
