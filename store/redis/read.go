package redis

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// Get returns the message with its timeline.
func (s *Store) Get(ctx context.Context, id string) (*herald.Message, error) {
	h, err := s.client.HGetAll(ctx, s.key("m:"+id)).Result()
	if err != nil {
		return nil, wrap(ctx, "get", err)
	}
	if len(h) == 0 {
		return nil, herald.ErrNotFound
	}
	m, err := withTimeline(h)
	return m, wrap(ctx, "get", err)
}

// Overdue returns up to limit active messages past their Deadline (in
// flight) or past their ExpiresAt.
func (s *Store) Overdue(ctx context.Context, now time.Time, limit int) ([]*herald.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	res, err := s.eval(ctx, overdueScript, unixms.From(now), limit)
	if err != nil {
		return nil, wrap(ctx, "overdue", err)
	}
	replies, _ := res.([]any)
	msgs := make([]*herald.Message, len(replies))
	for i, r := range replies {
		if msgs[i], err = decodeReply(r); err != nil {
			return nil, wrap(ctx, "overdue", err)
		}
	}
	return msgs, nil
}

// DuePolls returns up to limit DELIVERED_TO_NS messages whose poll is due
// at now, earliest due first.
func (s *Store) DuePolls(ctx context.Context, now time.Time, limit int) ([]*herald.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	res, err := s.eval(ctx, duePollsScript, unixms.From(now), limit)
	if err != nil {
		return nil, wrap(ctx, "due polls", err)
	}
	replies, _ := res.([]any)
	msgs := make([]*herald.Message, len(replies))
	for i, r := range replies {
		if msgs[i], err = decodeReply(r); err != nil {
			return nil, wrap(ctx, "due polls", err)
		}
	}
	return msgs, nil
}

// FindByExternalID returns the active message of route whose carrier id is
// externalID, or ErrNotFound.
func (s *Store) FindByExternalID(ctx context.Context, route, externalID string) (*herald.Message, error) {
	id, err := s.client.HGet(ctx, s.key("ext"), esc(route)+"|"+externalID).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, herald.ErrNotFound
	}
	if err != nil {
		return nil, wrap(ctx, "find by external id", err)
	}
	hashes, err := s.hashes(ctx, []string{id})
	if err != nil {
		return nil, wrap(ctx, "find by external id", err)
	}
	h := hashes[0]
	if len(h) == 0 {
		return nil, herald.ErrNotFound // deleted between the two reads
	}
	m, _, err := decode(h)
	if err != nil {
		return nil, wrap(ctx, "find by external id", err)
	}
	if m.Route != route || m.ExternalID != externalID || m.Status.Terminal() {
		return nil, herald.ErrNotFound // it moved on between the two reads
	}
	return m, nil
}

// ActiveRoutes returns, sorted, the routes that have messages not yet
// terminal.
func (s *Store) ActiveRoutes(ctx context.Context) ([]string, error) {
	counts, err := s.counts(ctx)
	if err != nil {
		return nil, wrap(ctx, "active routes", err)
	}
	var routes []string
	for _, c := range counts {
		if !c.Status.Terminal() {
			routes = append(routes, c.Route)
		}
	}
	slices.Sort(routes)
	return slices.Compact(routes), nil
}

// Counts returns the number of messages by tenant, route and status, with
// the oldest CreatedAt of each group.
func (s *Store) Counts(ctx context.Context) ([]herald.Count, error) {
	counts, err := s.counts(ctx)
	return counts, wrap(ctx, "counts", err)
}

// counts is Counts, its errors unwrapped.
func (s *Store) counts(ctx context.Context) ([]herald.Count, error) {
	res, err := s.eval(ctx, countsScript)
	if err != nil {
		return nil, err
	}
	rows, _ := res.([]any)
	counts := make([]herald.Count, 0, len(rows))
	for _, r := range rows {
		row, _ := r.([]any)
		if len(row) != 3 {
			return nil, errors.New("unexpected counts reply")
		}
		parts, ok := splitName(str(row[0]), 3)
		n, err1 := strconv.Atoi(str(row[1]))
		oldest, err2 := strconv.ParseFloat(str(row[2]), 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, errors.New("unexpected counts reply")
		}
		counts = append(counts, herald.Count{
			Tenant: parts[0], Route: parts[1], Status: herald.Status(parts[2]), N: n, OldestCreated: unixms.Time(int64(oldest)),
		})
	}
	slices.SortFunc(counts, func(a, b herald.Count) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Route, b.Route), cmp.Compare(a.Status, b.Status))
	})
	return counts, nil
}

// key returns the store's key of name.
func (s *Store) key(name string) string { return s.keys[0] + name }
