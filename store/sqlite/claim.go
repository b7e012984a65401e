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
// batch, appends each message's timeline entry and returns the batch. All
// the messages of a claim share its lease, which no other claim gets.
func (tx *wtx) claim(c herald.Claim) ([]*herald.Message, error) {
	routes := slices.Sorted(maps.Keys(c.AcceptTimeouts))
	stmt, err := tx.st.claimStmt(tx.conn, len(routes))
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, 5+2*len(routes))
	args = append(args, ms(c.Now), ms(c.Now.Add(c.DefaultAccept)), tx.nextLease(), c.Limit,
		entryTail(c.Now, herald.StatusQueued, herald.StatusSentToNS, ""))
	for _, r := range routes {
		args = append(args, r, ms(c.Now.Add(c.AcceptTimeouts[r])))
	}
	claimed, err := scanMessages(stmt.Query(args...))
	if err != nil {
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
// ?6 on; the other routes' deadline is ?2. Each message's timeline entry is
// its new attempt followed by the tail ?5. It walks the ready index in
// claim order and filters due_at from it: it never sorts the due rows.
func claimSQL(nRoutes int) string {
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
	return `UPDATE messages SET
			status = 'SENT_TO_NS', attempt = attempt + 1, updated_at = ?1, deadline = ` + deadline.String() + `,
			lease = ?3, seq = seq + 1, timeline = timeline || (attempt + 1) || ?5
		WHERE id IN (SELECT id FROM messages INDEXED BY messages_ready
			WHERE status = 'QUEUED' AND due_at <= ?1 ORDER BY priority DESC, id LIMIT CAST(?4 AS INTEGER))
		RETURNING ` + msgCols
}
