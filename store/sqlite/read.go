package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// defaultListLimit is List's page size when the query names none.
const defaultListLimit = 100

// Get returns the message with its timeline, both read from its row.
func (s *Store) Get(ctx context.Context, id string) (*herald.Message, error) {
	m, err := scanWithTimeline(s.rs.get.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, herald.ErrNotFound
	}
	return m, wrap("get", err)
}

// List returns the messages matching q, newest (highest id) first. The
// cursor is the last id of the page when another page may follow.
func (s *Store) List(ctx context.Context, q herald.Query) ([]*herald.Message, string, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	var (
		where []string
		args  []any
	)
	add := func(cond string, arg any) {
		where = append(where, cond)
		args = append(args, arg)
	}
	if q.Tenant != "" {
		add("tenant = ?", q.Tenant)
	}
	if q.Status != "" {
		add("status = ?", string(q.Status))
	}
	if q.Route != "" {
		add("route = ?", q.Route)
	}
	if q.CorrelationID != "" {
		add("correlation_id = ?", q.CorrelationID)
	}
	if q.Target != "" {
		add("target = ?", q.Target)
	}
	if q.IDPrefix != "" {
		lo, hi := herald.IDPrefixRange(q.IDPrefix)
		add("id >= ?", lo)
		if hi != "" {
			add("id < ?", hi)
		}
	}
	if q.Reason != "" {
		add("instr(last_error, ?) > 0", q.Reason)
	}
	if !q.Since.IsZero() {
		add("updated_at >= ?", unixms.From(q.Since))
	}
	if !q.Until.IsZero() {
		add("updated_at < ?", unixms.From(q.Until))
	}
	if q.Cursor != "" {
		add("id < ?", q.Cursor)
	}
	query := "SELECT " + msgCols + " FROM messages"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit+1) // one more tells whether a next page exists

	msgs, err := scanMessages(s.read.QueryContext(ctx, query, args...))
	if err != nil {
		return nil, "", wrap("list", err)
	}
	if len(msgs) <= limit {
		return msgs, "", nil
	}
	msgs = msgs[:limit]
	return msgs, msgs[limit-1].ID, nil
}

// Overdue returns up to limit active messages past their Deadline (in
// flight) or past their ExpiresAt.
func (s *Store) Overdue(ctx context.Context, now time.Time, limit int) ([]*herald.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	msgs, err := scanMessages(s.rs.overdue.QueryContext(ctx, unixms.From(now), limit))
	return msgs, wrap("overdue", err)
}

// DuePolls returns up to limit DELIVERED_TO_NS messages whose poll is due
// at now, earliest due first.
func (s *Store) DuePolls(ctx context.Context, now time.Time, limit int) ([]*herald.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	msgs, err := scanMessages(s.rs.duePolls.QueryContext(ctx, unixms.From(now), limit))
	return msgs, wrap("due polls", err)
}

// FindByExternalID returns the active message of route whose carrier id is
// externalID, or ErrNotFound.
func (s *Store) FindByExternalID(ctx context.Context, route, externalID string) (*herald.Message, error) {
	m, err := scanMessage(s.rs.findExternal.QueryRowContext(ctx, route, externalID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, herald.ErrNotFound
	}
	return m, wrap("find by external id", err)
}

// ActiveRoutes returns, sorted, the routes that have messages not yet
// terminal.
func (s *Store) ActiveRoutes(ctx context.Context) ([]string, error) {
	rows, err := s.rs.activeRoutes.QueryContext(ctx)
	routes, err := collect(rows, err, func(sc rowScanner) (string, error) {
		var r string
		err := sc.Scan(&r)
		return r, err
	})
	return routes, wrap("active routes", err)
}

// Counts returns the number of messages by tenant, route and status, with
// the oldest CreatedAt of each group.
func (s *Store) Counts(ctx context.Context) ([]herald.Count, error) {
	rows, err := s.rs.counts.QueryContext(ctx)
	counts, err := collect(rows, err, func(sc rowScanner) (herald.Count, error) {
		var (
			c      herald.Count
			status string
			oldest int64
		)
		err := sc.Scan(&c.Tenant, &c.Route, &status, &c.N, &oldest)
		c.Status, c.OldestCreated = herald.Status(status), unixms.Time(oldest)
		return c, err
	})
	return counts, wrap("counts", err)
}
