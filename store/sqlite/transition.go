package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/entryreason"
	"github.com/heraldmq/herald/internal/unixms"
)

// Transition applies t if the message is still in t.From (and under
// t.Lease when it is set) and t.RequireSubscription, when set, exists,
// records it in the timeline (unless the status stays) and enqueues one
// outcome event per name in t.Notify.
func (s *Store) Transition(ctx context.Context, t herald.Transition) error {
	return wrap("transition", s.submit(transitionRequest(ctx, t)))
}

// transitionRequest returns the write request of t. Its run applies t
// alone; the writer may instead apply it together with the other
// transitions waiting beside it (see applyTransitions).
func transitionRequest(ctx context.Context, t herald.Transition) *request {
	r := &request{ctx: ctx, run: func(tx *wtx) error { return tx.transitionIfSubscribed(t) }, done: make(chan struct{})}
	if !t.UndoAttempt && t.PauseUntil.IsZero() && !requeued(t) && t.RequireSubscription == "" && len(t.Result) == 0 { // the grouped statement knows none of these
		r.tr = &t
	}
	return r
}

// transitionIfSubscribed is transition, once t.RequireSubscription, when
// set, is found in the same transaction; when it is not, nothing changes
// and the answer is ErrConflict (ErrNotFound for an unknown message).
func (tx *wtx) transitionIfSubscribed(t herald.Transition) error {
	if t.RequireSubscription != "" {
		var exists bool
		if err := tx.st.subscriptionExists.QueryRow(t.RequireSubscription).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return tx.missing(t.ID)
		}
	}
	return tx.transition(t)
}

// requeued reports whether t brings a terminal message back to QUEUED (a
// replay): the route's gating may have changed since it ended, so the
// transition sets it again, in the same statement, so that the lanes'
// triggers see it.
func requeued(t herald.Transition) bool {
	return t.From.Terminal() && t.To == herald.StatusQueued
}

// ClaimPoll moves the DueAt of pull task id, DELIVERED_TO_NS under lease
// and due at due, to until; see herald.Store.
func (s *Store) ClaimPoll(ctx context.Context, id string, lease int64, due, until time.Time) error {
	err := s.write(ctx, func(tx *wtx) error {
		n, err := deleted(tx.st.claimPoll.Exec(id, lease, unixms.From(due), unixms.From(until)))
		if err == nil && n == 0 {
			err = tx.missing(id)
		}
		return err
	})
	return wrap("claim poll", err)
}

// transition is Transition inside the writer's transaction: one UPDATE
// applies it and appends its timeline entry. On ErrConflict and
// ErrNotFound it has changed nothing.
func (tx *wtx) transition(t herald.Transition) error {
	moved := t.To != t.From || t.Reason != ""
	result, err := encodeParams(t.Result)
	if err != nil {
		return err
	}
	var (
		seq, gated  int
		route, lane string
		prio        int64
	)
	err = tx.st.transition.QueryRow(
		string(t.To), unixms.From(t.At), unixms.From(t.DueAt), unixms.From(t.Deadline),
		unixms.From(t.ExpiresAt), t.ExternalID, t.LastError, t.ResetAttempts, t.To.InFlight(),
		t.ID, string(t.From), t.Lease,
		moved, entryTail(t.At, t.From, t.To, entryreason.Encode(t.Reason, t.Call)), t.UndoAttempt, requeued(t), tx.gatedJSON, tx.orderedJSON, tx.keptJSON, result,
	).Scan(&seq, &gated, &route, &lane, &prio)
	if errors.Is(err, sql.ErrNoRows) {
		return tx.missing(t.ID)
	}
	if err != nil {
		return err
	}
	var flights laneFlights
	flights.add(gated, route, lane, keptKey{prio, t.ID}, t.From, t.To, tx.orphanLands(t))
	if err := tx.recordFlights(flights); err != nil {
		return err
	}
	if !t.PauseUntil.IsZero() && (gated == gatedLanes || gated == gatedKept) {
		if err := tx.pause(route, lane, t.PauseUntil, t.PauseReason); err != nil {
			return err
		}
	}
	if !moved {
		return nil
	}
	return tx.notify(&t, seq)
}

// notify enqueues the outcome events of t, which has moved its message to
// change number seq: one per name in t.Notify.
func (tx *wtx) notify(t *herald.Transition, seq int) error {
	for _, sub := range t.Notify {
		id := t.ID + "." + strconv.Itoa(seq) + "." + sub
		if _, err := tx.st.insertEvent.Exec(id, sub, t.ID, string(t.To), unixms.From(t.At)); err != nil {
			return err
		}
	}
	return nil
}

// transitions applies ts, whose ids are all distinct, with one UPDATE and
// returns the outcome of each: nil, ErrConflict or ErrNotFound. It is
// transition for each of ts in turn, but for the cost of one statement.
// When it fails (err != nil), it may have applied some of ts: the
// transaction must be rolled back.
func (tx *wtx) transitions(ts []*herald.Transition) (outcomes []error, err error) {
	stmt, err := tx.st.transitionsStmt(tx.conn, len(ts))
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, transitionsCols*len(ts))
	for _, t := range ts {
		args = append(args,
			t.ID, string(t.From), t.Lease,
			string(t.To), unixms.From(t.At), unixms.From(t.DueAt), unixms.From(t.Deadline),
			unixms.From(t.ExpiresAt), t.ExternalID, t.LastError, t.ResetAttempts, t.To.InFlight(),
			t.To != t.From || t.Reason != "", entryTail(t.At, t.From, t.To, entryreason.Encode(t.Reason, t.Call)))
	}
	rows, err := stmt.Query(args...)
	type applied struct {
		id, route, lane string
		seq, gated      int
		prio            int64
	}
	done, err := collect(rows, err, func(sc rowScanner) (applied, error) {
		var a applied
		err := sc.Scan(&a.id, &a.seq, &a.gated, &a.route, &a.lane, &a.prio)
		return a, err
	})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*applied, len(done))
	for i := range done {
		byID[done[i].id] = &done[i]
	}
	var flights laneFlights
	outcomes = make([]error, len(ts))
	for i, t := range ts {
		a, ok := byID[t.ID]
		if !ok {
			if outcomes[i] = tx.missing(t.ID); !isOutcome(outcomes[i]) {
				return nil, outcomes[i]
			}
			continue
		}
		if t.To == t.From {
			continue
		}
		flights.add(a.gated, a.route, a.lane, keptKey{a.prio, a.id}, t.From, t.To, tx.orphanLands(*t))
		if err := tx.notify(t, a.seq); err != nil {
			return nil, err
		}
	}
	return outcomes, tx.recordFlights(flights)
}

// laneFlights gathers, per lane of a gated route, how many flights the
// transitions of a statement started (positive) or ended (negative), and
// whether one of them ended its message: the lanes' table records them
// once per lane (recordFlights), in the same transaction. A kept route's
// lane counts its QUEUED messages too, for the writer's memory (kept.go).
type laneFlights map[herald.LaneRef]*laneFlight

// laneFlight is what transitions did to the slots of one lane.
type laneFlight struct {
	delta int  // flights started less flights ended
	ended bool // a message became terminal: a held lane may admit again
	// sooner: a QUEUED message became due sooner (an operator's send-now):
	// a lane parked until its messages are due is looked at again.
	sooner bool
	kept   bool // the lane is a kept route's
	// queued counts the messages that became QUEUED less those that left
	// it, and requeued is the first in claim order of those that became
	// QUEUED, on a kept route's lane.
	queued   int
	requeued *keptKey
}

// add counts the change of status from, to of the message at key of lane
// (route, lane), gated as its column says. A claim (QUEUED to SENT_TO_NS)
// is not counted: claimedFrom and pickKept record it; nor is the end of an
// orphan's flight, which held no slot (takeOver).
func (f *laneFlights) add(gated int, route, lane string, key keptKey, from, to herald.Status, orphan bool) {
	// sooner: a message QUEUED again or due sooner (an operator's
	// send-now), which the lane's claims must look for again.
	sooner := to == herald.StatusQueued && (from == to || from == herald.StatusToRetry)
	if (gated != gatedLanes && gated != gatedKept) || (from == to && !sooner) || (from == herald.StatusQueued && to == herald.StatusSentToNS) {
		return
	}
	delta := boolInt(to.InFlight()) - boolInt(from.InFlight())
	if orphan {
		delta = 0
	}
	queued := 0
	if gated == gatedKept {
		queued = boolInt(to == herald.StatusQueued) - boolInt(from == herald.StatusQueued)
	}
	if delta == 0 && queued == 0 && !to.Terminal() && !sooner {
		return
	}
	if *f == nil {
		*f = laneFlights{}
	}
	ref := herald.LaneRef{Route: route, Lane: lane}
	l := (*f)[ref]
	if l == nil {
		l = &laneFlight{kept: gated == gatedKept}
		(*f)[ref] = l
	}
	if gated == gatedKept && to == herald.StatusQueued && (l.requeued == nil || key.before(*l.requeued)) {
		l.requeued = &key
	}
	l.delta += delta
	l.queued += queued
	l.ended = l.ended || to.Terminal()
	l.sooner = l.sooner || sooner
}

// orphanLands reports whether t ends the flight of an orphan (takeOver),
// and forgets it.
func (tx *wtx) orphanLands(t herald.Transition) bool {
	return len(tx.kept.orphans) > 0 && t.From.InFlight() && !t.To.InFlight() && tx.kept.orphanLands(t.ID)
}

// recordFlights records flights in the lanes' table, with one statement,
// and those of kept routes' lanes in the writer's memory (kept.go).
func (tx *wtx) recordFlights(flights laneFlights) error {
	if len(flights) == 0 {
		return nil
	}
	rows := make([][5]any, 0, len(flights))
	for ref, l := range flights {
		if l.kept {
			tx.kept.changed(ref, l.delta, l.queued, l.requeued)
			continue
		}
		rows = append(rows, [5]any{ref.Route, ref.Lane, l.delta, l.ended, l.sooner})
	}
	if len(rows) == 0 {
		return nil
	}
	rowsJSON, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = tx.st.laneFlights.Exec(string(rowsJSON))
	return err
}

// boolInt is 1 for true, 0 for false.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// transitionsStmt returns the statement that applies n transitions,
// preparing it on conn the first time.
func (st *writeStmts) transitionsStmt(conn *sql.Conn, n int) (*sql.Stmt, error) {
	return st.cached(conn, &st.transitions, n, transitionsSQL)
}

// transitionsCols is the number of parameters of each transition of
// transitionsSQL.
const transitionsCols = 14

// transitionsSQL applies n transitions of distinct messages, each given by
// transitionsCols parameters in the order of the columns of v: the
// statement transition, row by row, joined on the id. It returns the id,
// new seq, gated, route and lane of each message it changed.
func transitionsSQL(n int) string {
	var b strings.Builder
	b.WriteString(`WITH v(v_id, v_from, v_lease, v_to, v_at, v_due, v_deadline, v_expires,
			v_external, v_error, v_reset, v_keep_lease, v_moved, v_tail) AS (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, CAST(? AS TEXT), CAST(? AS INTEGER), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	}
	b.WriteString(`)
		UPDATE messages SET
			status = v_to, due_at = v_due, deadline = v_deadline,
			expires_at = CASE WHEN v_expires != 0 THEN v_expires ELSE expires_at END,
			external_id = CASE WHEN v_external != '' THEN v_external ELSE external_id END,
			last_error = CASE WHEN v_error != '' THEN v_error ELSE last_error END,
			attempt = CASE WHEN v_reset THEN 0 ELSE attempt END,
			lease = CASE WHEN v_keep_lease THEN lease ELSE 0 END,
			updated_at = CASE WHEN v_moved THEN v_at ELSE updated_at END,
			seq = seq + v_moved,
			timeline = CASE WHEN v_moved THEN timeline || (CASE WHEN v_reset THEN 0 ELSE attempt END) || v_tail ELSE timeline END
		FROM v
		WHERE messages.id = v_id AND messages.status = v_from AND (v_lease = 0 OR messages.lease = v_lease)
		RETURNING id, seq, gated, route, lane, priority`)
	return b.String()
}

// missing tells why a compare-and-set matched no row: ErrNotFound when the
// message does not exist, ErrConflict when it is not as expected.
func (tx *wtx) missing(id string) error {
	var one int
	err := tx.st.exists.QueryRow(id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return herald.ErrNotFound
	case err != nil:
		return err
	default:
		return herald.ErrConflict
	}
}

// Release moves up to limit TO_RETRY messages whose DueAt <= now back to
// QUEUED, earliest due first, and returns how many moved.
func (s *Store) Release(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int
	err := s.write(ctx, func(tx *wtx) error {
		n = 0
		rows, err := tx.st.selectRetry.Query(unixms.From(now), limit)
		due, err := collect(rows, err, func(sc rowScanner) (herald.Transition, error) {
			var dueAt int64
			t := herald.Transition{From: herald.StatusToRetry, To: herald.StatusQueued, At: now}
			err := sc.Scan(&t.ID, &dueAt)
			t.DueAt = unixms.Time(dueAt)
			return t, err
		})
		if err != nil {
			return err
		}
		for _, t := range due {
			if err := tx.transition(t); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, wrap("release", err)
}
