package sqlite

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// Claim moves up to c.Limit due QUEUED messages to SENT_TO_NS, highest
// priority first and oldest id first within a priority. The claim is a
// write, in the writer's goroutine, so no two claims ever see the same row;
// it returns only what it changed, and the messages' other columns, which
// never change, are read afterwards from the read pool, off the writer's
// path.
func (s *Store) Claim(ctx context.Context, c herald.Claim) ([]*herald.Message, error) {
	if c.Limit <= 0 {
		return nil, nil
	}
	var (
		claims []claimedRow
		lease  int64
	)
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		claims, lease, err = tx.claim(c)
		return err
	})
	if err != nil {
		return nil, wrap("claim", err)
	}
	if len(claims) == 0 {
		return nil, nil
	}
	msgs, err := s.readClaimed(ctx, claims, lease, c.Now)
	if err != nil {
		return nil, wrap("claim", err)
	}
	return msgs, nil
}

// claimedRow is what a claim changed in one message besides the lease and
// the time, which all the messages of a claim share.
type claimedRow struct {
	id       string
	attempt  int
	deadline int64
}

// readClaimed reads the claimed messages and sets on each what the claim at
// now, under lease, changed, whatever happened to it since (a cancel, say:
// the claim's lease then records nothing). A message deleted since is left
// out.
func (s *Store) readClaimed(ctx context.Context, claims []claimedRow, lease int64, now time.Time) ([]*herald.Message, error) {
	ids := make([]string, len(claims))
	byID := make(map[string]*claimedRow, len(claims))
	for i := range claims {
		ids[i] = claims[i].id
		byID[claims[i].id] = &claims[i]
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	msgs, err := scanMessages(s.rs.byIDs.QueryContext(ctx, string(idsJSON)))
	if err != nil {
		return nil, err
	}
	updated := unixms.Time(unixms.From(now)) // as stored: to the millisecond
	for _, m := range msgs {
		c := byID[m.ID]
		m.Status, m.Attempt, m.Lease = herald.StatusSentToNS, c.attempt, lease
		m.Deadline, m.UpdatedAt = unixms.Time(c.deadline), updated
	}
	slices.SortFunc(msgs, func(a, b *herald.Message) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), strings.Compare(a.ID, b.ID))
	})
	return msgs, nil
}

// claim is Claim inside the writer's transaction: the gated routes' lanes
// admit what they may (pickLanes, then pickKept for the kept routes'),
// an UPDATE moves each's messages and one more the rest of the batch, and
// each appends its messages' timeline entries. A lane admits messages of
// one priority in a pass: while one left some of a lower priority, and the
// claim has room, another pass looks at the lanes again, in the order of
// their new first messages (at most maxGatedPasses; the next claim takes
// the rest). All the messages of a claim share its lease, which no other
// claim gets; claim returns it.
func (tx *wtx) claim(c herald.Claim) ([]claimedRow, int64, error) {
	lease := tx.nextLease()
	var claims []claimedRow
	limit := min(c.GatedLimit, c.Limit)
	for pass, cut := 0, true; cut && pass < maxGatedPasses && len(claims) < limit; pass++ {
		pc := c
		pc.GatedLimit = limit - len(claims)
		picked, lanes, more, err := tx.pickLanes(pc, pass > 0)
		if err != nil {
			return nil, 0, err
		}
		if cut = more; len(picked) == 0 {
			break
		}
		took, err := tx.claimGated(c, lease, picked)
		if err != nil {
			return nil, 0, err
		}
		if err := tx.claimedFrom(lanes, c.Node); err != nil {
			return nil, 0, err
		}
		claims = append(claims, took...)
	}
	if room := limit - len(claims); room > 0 && len(tx.rules) > 0 {
		picked, err := tx.pickKept(c, room)
		if err != nil {
			return nil, 0, err
		}
		took, err := tx.claimGated(c, lease, picked)
		if err != nil {
			return nil, 0, err
		}
		claims = append(claims, took...)
	}
	if rest := c.Limit - len(claims); rest > 0 {
		more, err := tx.claimWith(c, lease, false, rest)
		if err != nil {
			return nil, 0, err
		}
		claims = append(claims, more...)
	}
	return claims, lease, nil
}

// maxGatedPasses bounds the passes of a claim over the lanes (see claim).
const maxGatedPasses = 4

// claimGated claims the gated messages picked, under lease.
func (tx *wtx) claimGated(c herald.Claim, lease int64, picked []string) ([]claimedRow, error) {
	if len(picked) == 0 {
		return nil, nil
	}
	idsJSON, err := json.Marshal(picked)
	if err != nil {
		return nil, err
	}
	return tx.claimWith(c, lease, true, string(idsJSON))
}

// claimWith runs the claim statement under lease: of the gated messages
// whose ids the JSON array which holds, or of up to which ungated ones.
func (tx *wtx) claimWith(c herald.Claim, lease int64, gated bool, which any) ([]claimedRow, error) {
	routes := slices.Sorted(maps.Keys(c.AcceptTimeouts))
	held := !gated && len(c.Hold) > 0
	cache := &tx.st.claims
	switch {
	case gated:
		cache = &tx.st.gatedClaims
	case held:
		cache = &tx.st.heldClaims
	}
	stmt, err := tx.st.cached(tx.conn, cache, len(routes), func(n int) string { return claimSQL(n, gated, held) })
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, 5+2*len(routes))
	args = append(args, unixms.From(c.Now), unixms.From(c.Now.Add(c.DefaultAccept)), lease, which,
		entryTail(c.Now, herald.StatusQueued, herald.StatusSentToNS, ""))
	for _, r := range routes {
		args = append(args, r, unixms.From(c.Now.Add(c.AcceptTimeouts[r])))
	}
	if held {
		holdJSON, err := json.Marshal(holdPairs(c.Hold))
		if err != nil {
			return nil, err
		}
		args = append(args, string(holdJSON))
	}
	rows, err := stmt.Query(args...)
	return collect(rows, err, func(sc rowScanner) (claimedRow, error) {
		var r claimedRow
		err := sc.Scan(&r.id, &r.attempt, &r.deadline)
		return r, err
	})
}

// claimSQL is the claim of messages due at ?1, under lease ?3, for nRoutes
// routes whose deadlines follow as (route, deadline) pairs from ?6 on; the
// other routes' deadline is ?2. Each message's timeline entry is its new
// attempt followed by the tail ?5. Ungated, it takes up to ?4 messages: it
// walks the ready index in claim order and filters due_at from it, never
// sorting the due rows. Gated, it takes the QUEUED messages whose ids the
// JSON array ?4 holds, which the lanes admitted. Held (ungated only), it
// passes over the messages of the routes and lanes of the JSON array of
// [route, lane] pairs after the routes' deadlines (lane "": every lane).
func claimSQL(nRoutes int, gated, held bool) string {
	var deadline strings.Builder
	deadline.WriteString("CASE route")
	for i := range nRoutes {
		fmt.Fprintf(&deadline, " WHEN ?%d THEN ?%d", 6+2*i, 7+2*i)
	}
	deadline.WriteString(" ELSE ?2 END")
	if nRoutes == 0 {
		deadline.Reset()
		deadline.WriteString("?2")
	}
	which := `id IN (SELECT id FROM messages INDEXED BY messages_ready
			WHERE status = 'QUEUED' AND gated = 0 AND due_at <= ?1` + heldSQL(held, 6+2*nRoutes) + `
			ORDER BY priority DESC, id LIMIT CAST(?4 AS INTEGER))`
	if gated {
		which = `id IN (SELECT value FROM json_each(?4)) AND status = 'QUEUED'`
	}
	return `UPDATE messages SET
			status = 'SENT_TO_NS', attempt = attempt + 1, updated_at = ?1, deadline = ` + deadline.String() + `,
			lease = ?3, seq = seq + 1, timeline = timeline || (attempt + 1) || ?5
		WHERE ` + which + `
		RETURNING id, attempt, deadline`
}

// heldSQL is the claim's condition that passes over the held messages,
// whose [route, lane] pairs are the JSON array ?n: none unless held.
func heldSQL(held bool, n int) string {
	if !held {
		return ""
	}
	return fmt.Sprintf(` AND NOT EXISTS (SELECT 1 FROM json_each(?%d) h
				WHERE h.value ->> 0 = route AND (h.value ->> 1 = '' OR h.value ->> 1 = lane))`, n)
}

// holdPairs is hold as [route, lane] pairs.
func holdPairs(hold []herald.LaneRef) [][2]string {
	pairs := make([][2]string, len(hold))
	for i, h := range hold {
		pairs[i] = [2]string{h.Route, h.Lane}
	}
	return pairs
}
