package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/heraldmq/herald"
)

// Claim moves up to c.Limit due QUEUED messages to SENT_TO_NS, highest
// priority first and oldest id first within a priority. Being a write, it
// runs in the writer's goroutine: no two claims ever see the same row.
func (s *Store) Claim(ctx context.Context, c herald.Claim) ([]*herald.Message, error) {
	if c.Limit <= 0 {
		return nil, nil
	}
	var claimed []*herald.Message
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		claimed, err = tx.claim(c)
		return err
	})
	if err != nil {
		return nil, wrap("claim", err)
	}
	return claimed, nil
}

// claim is Claim inside the writer's transaction: one UPDATE moves the whole
// batch and returns it, and one INSERT records the batch's transitions. All
// the messages of a claim share its lease, which no other claim gets.
func (tx *wtx) claim(c herald.Claim) ([]*herald.Message, error) {
	routes := slices.Sorted(maps.Keys(c.AcceptTimeouts))
	stmt, err := tx.st.claimStmt(tx.conn, len(routes))
	if err != nil {
		return nil, err
	}
	now := ms(c.Now)
	args := make([]any, 0, 4+2*len(routes))
	args = append(args, now, ms(c.Now.Add(c.DefaultAccept)), tx.nextLease(), c.Limit)
	for _, r := range routes {
		args = append(args, r, ms(c.Now.Add(c.AcceptTimeouts[r])))
	}
	rows, err := stmt.Query(args...)
	var seqs []int
	claimed, err := collect(rows, err, func(sc rowScanner) (*herald.Message, error) {
		var seq int
		m, err := scanMessage(sc, &seq)
		seqs = append(seqs, seq)
		return m, err
	})
	if err != nil {
		return nil, err
	}
	entries := make([]timelineRow, len(claimed))
	for i, m := range claimed {
		entries[i] = timelineRow{id: m.ID, seq: seqs[i], at: now, from: herald.StatusQueued, to: herald.StatusSentToNS, attempt: m.Attempt}
	}
	if err := tx.addTimelines(entries); err != nil {
		return nil, err
	}
	// RETURNING gives the rows in no set order.
	slices.SortFunc(claimed, func(a, b *herald.Message) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), strings.Compare(a.ID, b.ID))
	})
	return claimed, nil
}

// claimStmt returns the claim statement for nRoutes routes with their own
// accept timeout, preparing it on conn the first time.
func (st *writeStmts) claimStmt(conn *sql.Conn, nRoutes int) (*sql.Stmt, error) {
	return st.cached(conn, &st.claims, nRoutes, claimSQL)
}

// claimSQL is the claim of up to ?4 messages due at ?1, under lease ?3,
// for nRoutes routes whose deadlines follow as (route, deadline) pairs from
// ?5 on; the other routes' deadline is ?2. It walks the ready index in claim
// order and filters due_at from it: it never sorts the due rows.
func claimSQL(nRoutes int) string {
	var deadline strings.Builder
	deadline.WriteString("CASE route")
	for i := range nRoutes {
		fmt.Fprintf(&deadline, " WHEN ?%d THEN ?%d", 5+2*i, 6+2*i)
	}
	deadline.WriteString(" ELSE ?2 END")
	if nRoutes == 0 {
		deadline.Reset()
		deadline.WriteString("?2")
	}
	return `UPDATE messages SET
			status = 'SENT_TO_NS', attempt = attempt + 1, updated_at = ?1, deadline = ` + deadline.String() + `,
			lease = ?3, timeline_seq = timeline_seq + 1
		WHERE id IN (SELECT id FROM messages INDEXED BY messages_ready
			WHERE status = 'QUEUED' AND due_at <= ?1 ORDER BY priority DESC, id LIMIT CAST(?4 AS INTEGER))
		RETURNING ` + msgCols + `, timeline_seq`
}
