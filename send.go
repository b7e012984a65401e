package herald

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// The bounds of a message's priority (docs/API.md, POST /v1/messages).
const (
	MinPriority = -1000
	MaxPriority = 1000
)

// SendRequest is a message to send, as a user gives it.
type SendRequest struct {
	Route          string
	Target         string
	Payload        []byte
	Text           string
	Params         map[string]string
	Priority       int
	Lane           string
	CorrelationID  string
	IdempotencyKey string
	CoalesceKey    string
	ExpiresAt      time.Time // zero: the route's max age, if any
	// SendAt, when after now, keeps the message QUEUED and not due until
	// then (at most MaxSendAhead ahead); zero or past means at once.
	SendAt time.Time
}

// Send stores a new message for tenant in QUEUED and returns it once it is
// durable. created is false when the idempotency key matched an earlier
// message, which is returned instead. Bad input returns an *InvalidError and
// stores nothing; an unknown route returns ErrUnknownRoute.
func (e *Engine) Send(ctx context.Context, tenant string, req SendRequest) (m *Message, created bool, err error) {
	if req.Route == "" {
		return nil, false, Invalid("route", "is required")
	}
	if err := checkLimits(req); err != nil {
		return nil, false, err
	}
	r, ok := e.routes[req.Route]
	if !ok {
		return nil, false, fmt.Errorf("%w %q", ErrUnknownRoute, req.Route)
	}
	if len(req.Payload) > 0 && req.Text != "" {
		return nil, false, Invalid("payload", "give payload or text, not both")
	}
	if len(req.Payload) == 0 && req.Text == "" {
		return nil, false, Invalid("payload", "one of payload or text is required")
	}
	if req.Priority < MinPriority || req.Priority > MaxPriority {
		return nil, false, Invalid("priority", "%d is not within %d..%d", req.Priority, MinPriority, MaxPriority)
	}
	now := e.clock.Now()
	if !req.ExpiresAt.IsZero() && !req.ExpiresAt.After(now) {
		return nil, false, Invalid("expires_at", "%s is not in the future", req.ExpiresAt.Format(time.RFC3339))
	}
	due := now
	if req.SendAt.After(now) {
		if req.SendAt.Sub(now) > MaxSendAhead {
			return nil, false, Invalid("send_at", "%s is more than %d days ahead", req.SendAt.Format(time.RFC3339), MaxSendAhead/(24*time.Hour))
		}
		if !req.ExpiresAt.IsZero() && !req.ExpiresAt.After(req.SendAt) {
			return nil, false, Invalid("send_at", "%s is not before expires_at %s", req.SendAt.Format(time.RFC3339), req.ExpiresAt.Format(time.RFC3339))
		}
		due = req.SendAt
	}
	m = &Message{
		ID: e.ids.next(now), Tenant: tenant, Route: req.Route, Target: req.Target,
		Lane: req.Lane, Payload: req.Payload, Text: req.Text, Params: req.Params,
		Priority: req.Priority, CorrelationID: req.CorrelationID,
		IdempotencyKey: req.IdempotencyKey, CoalesceKey: req.CoalesceKey,
		Status: StatusQueued, MaxAttempts: r.Policy.MaxAttempts,
		CreatedAt: now, UpdatedAt: now, DueAt: due, ExpiresAt: req.ExpiresAt,
	}
	if m.Lane == "" {
		m.Lane = r.Lane
	}
	if lr, ok := r.Carrier.(LaneRequirer); ok && m.Lane == "" {
		return nil, false, Invalid("lane", "is required on route %q, which has no default lane: %s", r.Name, lr.RequiredLane())
	}
	if l, ok := r.Carrier.(Laner); ok && m.Lane == "" {
		m.Lane = l.Lane(m)
	}
	if m.Lane == "" {
		m.Lane = r.Name
	}
	if m.CoalesceKey == "" && m.Target != "" && r.Policy.CoalesceByTarget {
		m.CoalesceKey = targetCoalesceKey(m.Target)
	}
	if m.ExpiresAt.IsZero() && r.Policy.MaxAge > 0 {
		m.ExpiresAt = due.Add(r.Policy.MaxAge) // a scheduled message's age counts from its send_at
	}
	if err := r.Carrier.Validate(m); err != nil {
		var invalid *InvalidError
		if !errors.As(err, &invalid) {
			err = Invalid("target", "%v", err)
		}
		return nil, false, err
	}
	var coalesced int
	opt := CreateOptions{CoalesceNotify: e.notifyFor(StatusCancelled), Coalesced: &coalesced}
	if ttl := r.Policy.DedupTTL; ttl > 0 {
		m.DedupKey, opt.DedupSince = contentHash(m), now.Add(-ttl)
		if ch, ok := r.Carrier.(ContentHasher); ok {
			m.DedupKey = ch.ContentHash(m)
		}
	}
	e.traceSend(ctx, m)
	if e.waiting.Load() {
		// The gated routes' admission is not in the store yet.
		return nil, false, fmt.Errorf("%w: herald starts when the store answers", ErrStoreUnavailable)
	}
	stored, created, err := e.store.Create(ctx, m, opt)
	if err != nil {
		e.problem("store_error", "store message", "route", m.Route, "err", err)
		return nil, false, fmt.Errorf("store message: %w", err)
	}
	switch {
	case created:
		e.transitioned(m, "", StatusQueued)
		for range coalesced {
			e.obs.Problem(problemCoalesced)
		}
		e.tallies.coalescedMessages(tenant, coalesced)
		e.nudge(e.wake)
	case m.IdempotencyKey == "" || stored.IdempotencyKey != m.IdempotencyKey:
		stored.Deduplicated = true
		e.obs.Problem(problemDeduplicated)
		e.tallies.deduplicatedSend(tenant)
	}
	e.traceSent(ctx, stored, created)
	return stored, created, nil
}

// targetCoalesceKey is the coalesce key of a message of target on a route
// that coalesces by target (Policy.CoalesceByTarget) and that names none.
func targetCoalesceKey(target string) string { return "target:" + target }

// The Problem kinds of a send answered with an earlier delivered twin,
// and of a waiting message cancelled by a newer one with its coalesce
// key, which Stats counts too.
const (
	problemDeduplicated = "deduplicated"
	problemCoalesced    = "coalesced"
)

// contentHash is the dedup key of m: a hash of its route, target, payload
// or text and params (in key order), each length-prefixed so that no two
// distinct messages share the bytes hashed.
func contentHash(m *Message) string {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(m.Route))
	field([]byte(m.Target))
	field(m.Payload)
	field([]byte(m.Text))
	for _, k := range slices.Sorted(maps.Keys(m.Params)) {
		field([]byte(k))
		field([]byte(m.Params[k]))
	}
	return hex.EncodeToString(h.Sum(nil))
}
