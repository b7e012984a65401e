package redis

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/entryreason"
	"github.com/heraldmq/herald/internal/unixms"
)

// Claim moves up to c.Limit due QUEUED messages to SENT_TO_NS, highest
// priority first and oldest id first within a priority, in one script: no
// two claims, from any process, return the same message. Up to
// c.GatedLimit of them are of gated routes, taken first, through their
// lanes (see lanes.go).
func (s *Store) Claim(ctx context.Context, c herald.Claim) ([]*herald.Message, error) {
	if c.Limit <= 0 {
		return nil, nil
	}
	args := make([]any, 0, 9+2*len(c.Hold)+2*len(c.KeptAhead)+2*len(c.KeptSent)+2*len(c.AcceptTimeouts))
	args = append(args, unixms.From(c.Now), c.Limit, max(c.GatedLimit, 0), c.DefaultAccept.Milliseconds(), c.Node, len(c.KeptAhead))
	for route, n := range c.KeptAhead {
		args = append(args, esc(route), n)
	}
	args = append(args, len(c.KeptSent))
	for l, n := range c.KeptSent {
		args = append(args, esc(l.Route)+"|"+esc(l.Lane), n)
	}
	args = append(args, s.unholdNow(len(c.Hold) > 0), len(c.Hold))
	for _, h := range c.Hold {
		args = append(args, esc(h.Route), esc(h.Lane))
	}
	for route, d := range c.AcceptTimeouts {
		args = append(args, esc(route), d.Milliseconds())
	}
	res, err := s.eval(ctx, claimScript, args...)
	if err != nil {
		return nil, wrap(ctx, "claim", err)
	}
	claimed, err := s.readClaimed(ctx, res)
	return claimed, wrap(ctx, "claim", err)
}

// unholdEvery is how often a claim that holds nothing looks at the held
// messages (claim.lua's heldkeys), to let go those that no claim holds
// any more: another node's, whose holds ended, or which held a route
// that this node has (a node whose configuration lacked it).
const unholdEvery = time.Second

// unholdNow reports, as claim.lua's unhold argument, whether a claim
// looks at the held messages: always when it holds some, and the first
// after those; otherwise once per unholdEvery.
func (s *Store) unholdNow(holding bool) int {
	if holding {
		s.unheld.Store(0)
		return 1
	}
	now := time.Now().UnixMilli()
	last := s.unheld.Load()
	if now-last >= unholdEvery.Milliseconds() && s.unheld.CompareAndSwap(last, now) {
		return 1
	}
	return 0
}

// readClaimed reads the messages of claim.lua's reply, with the fields
// that the claim set, whatever happened to them since (a cancel, say: the
// claim's lease then records nothing). A message deleted since is left out.
func (s *Store) readClaimed(ctx context.Context, reply any) ([]*herald.Message, error) {
	rows, _ := reply.([]any)
	ids := make([]string, len(rows))
	for i, r := range rows {
		row, _ := r.([]any)
		if len(row) != 2 {
			return nil, errors.New("unexpected claim reply")
		}
		ids[i] = str(row[0])
	}
	hashes, err := s.hashes(ctx, ids)
	if err != nil {
		return nil, err
	}
	claimed := make([]*herald.Message, 0, len(rows))
	for i, h := range hashes {
		if len(h) == 0 {
			continue
		}
		row := rows[i].([]any)
		h["s"] = str(row[1])
		m, _, err := decode(h)
		if err != nil {
			return nil, err
		}
		claimed = append(claimed, m)
	}
	return claimed, nil
}

// Transition applies t if the message is still in t.From (and under
// t.Lease when it is set, and t.RequireSubscription, when set, exists),
// records it in the timeline, enqueues one
// outcome event per name in t.Notify and pauses the message's lane, when
// t says so, in one script (with other transitions: see batcher).
func (s *Store) Transition(ctx context.Context, t herald.Transition) error {
	attempts := "0"
	switch {
	case t.ResetAttempts:
		attempts = "reset"
	case t.UndoAttempt:
		attempts = "undo"
	}
	pause := "0"
	if !t.PauseUntil.IsZero() {
		pause = strconv.FormatInt(unixms.From(t.PauseUntil), 10) + "|" + t.PauseReason
	}
	enc := newEncoding()
	args := append(slices.Grow(enc.args, 15+len(t.Notify)), t.ID, string(t.From), string(t.To), t.Lease, unixms.From(t.At), unixms.From(t.DueAt), unixms.From(t.Deadline),
		unixms.From(t.ExpiresAt), t.ExternalID, t.LastError, attempts, entryreason.Encode(t.Reason, t.Call), pause, t.RequireSubscription, encodeResult(t.Result))
	for _, sub := range t.Notify {
		args = append(args, sub)
	}
	enc.args = args
	res, err := s.transitions.do(ctx, enc)
	if err != nil {
		return wrap(ctx, "transition", err)
	}
	return outcome("transition", res)
}

// ClaimPoll moves the due of pull task id, DELIVERED_TO_NS under lease
// and due at due, to until; see herald.Store.
func (s *Store) ClaimPoll(ctx context.Context, id string, lease int64, due, until time.Time) error {
	res, err := s.eval(ctx, claimPollScript, id, lease, unixms.From(due), unixms.From(until))
	if err != nil {
		return wrap(ctx, "claim poll", err)
	}
	return outcome("claim poll", res)
}

// Release moves up to limit TO_RETRY messages whose DueAt <= now back to
// QUEUED, earliest due first, and returns how many moved.
func (s *Store) Release(ctx context.Context, now time.Time, limit int) (int, error) {
	return s.evalCount(ctx, "release", releaseScript, now, limit)
}
