package sqlite

import (
	"context"

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

// claim is Claim inside the writer's transaction.
func (tx *wtx) claim(c herald.Claim) ([]*herald.Message, error) {
	type ready struct{ id, route string }
	rows, err := tx.st.selectReady.Query(ms(c.Now), c.Limit)
	due, err := collect(rows, err, func(sc rowScanner) (ready, error) {
		var r ready
		err := sc.Scan(&r.id, &r.route)
		return r, err
	})
	if err != nil {
		return nil, err
	}
	now := ms(c.Now)
	claimed := make([]*herald.Message, 0, len(due))
	for _, r := range due {
		timeout, ok := c.AcceptTimeouts[r.route]
		if !ok {
			timeout = c.DefaultAccept
		}
		var seq int
		m, err := scanMessage(tx.st.claim.QueryRow(now, ms(c.Now.Add(timeout)), tx.nextLease(), r.id), &seq)
		if err != nil {
			return nil, err
		}
		err = tx.addTimeline(m.ID, seq, c.Now, herald.StatusQueued, herald.StatusSentToNS, m.Attempt, "")
		if err != nil {
			return nil, err
		}
		claimed = append(claimed, m)
	}
	return claimed, nil
}
