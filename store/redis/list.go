package redis

import (
	"context"
	"slices"
	"sort"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// defaultListLimit is List's page size when the query names none.
const defaultListLimit = 100

// List returns the messages matching q, newest (highest id) first. The
// cursor is the last id of the page when another page may follow.
//
// It walks the narrowest index that q allows, newest first, and filters
// the messages it reads by the rest of q.
func (s *Store) List(ctx context.Context, q herald.Query) ([]*herald.Message, string, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	next, err := s.listSource(ctx, q)
	if err != nil {
		return nil, "", wrap(ctx, "list", err)
	}
	var (
		out   []*herald.Message
		after = q.Cursor
		chunk = limit + 1
	)
	if q.IDPrefix != "" {
		// Ids below after are walked: start below the prefix's range.
		if _, hi := herald.IDPrefixRange(q.IDPrefix); hi != "" && (after == "" || hi < after) {
			after = hi
		}
	}
	for len(out) <= limit {
		ids, err := next(ctx, after, chunk)
		if err != nil {
			return nil, "", wrap(ctx, "list", err)
		}
		msgs, err := s.read(ctx, ids)
		if err != nil {
			return nil, "", wrap(ctx, "list", err)
		}
		for _, m := range msgs {
			if m != nil && matches(q, m) && len(out) <= limit {
				out = append(out, m)
			}
		}
		if len(ids) < chunk {
			break
		}
		after, chunk = ids[len(ids)-1], min(2*chunk, 1000)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, out[limit-1].ID, nil
}

// idSource returns up to n ids below after ("" for no bound), highest first.
type idSource func(ctx context.Context, after string, n int) ([]string, error)

// listSource picks the index that List walks for q: the ids of a
// correlation id, those of the groups of a waiting status (when they are
// few), the dead letters, the ids of a tenant, or those of every tenant.
// The sorted sets are walked down to q's IDPrefix only (ids sort by
// time, so a prefix is a range of them); List starts below its range.
func (s *Store) listSource(ctx context.Context, q herald.Query) (idSource, error) {
	if q.CorrelationID != "" {
		return s.lexSource(s.key("corr:"+q.CorrelationID), q.IDPrefix), nil
	}
	if q.Status.Waiting() {
		src, err := s.groupSource(ctx, q)
		if src != nil || err != nil {
			return src, err
		}
	}
	switch {
	case q.Status == herald.StatusDeliveryFailed:
		return s.lexSource(s.key("failed"), q.IDPrefix), nil
	case q.Tenant != "":
		return s.lexSource(s.key("ten:"+esc(q.Tenant)), q.IDPrefix), nil
	default:
		return s.allSource(ctx, q.IDPrefix)
	}
}

// lexSource walks a sorted set of ids that all score 0, by id, down to
// the lowest id at or above low ("" for every id).
func (s *Store) lexSource(key, low string) idSource {
	lowest := "-"
	if low != "" {
		lowest = "[" + low
	}
	return func(ctx context.Context, after string, n int) ([]string, error) {
		max := "+"
		if after != "" {
			max = "(" + after
		}
		return s.client.ZRevRangeByLex(ctx, key, &goredis.ZRangeBy{Max: max, Min: lowest, Count: int64(n)}).Result()
	}
}

// groupMax bounds the ids that groupSource reads at once.
const groupMax = 10000

// groupSource reads, sorts and walks the ids of the groups of q's status
// (of q's tenant and route when given), or returns nil when they hold more
// than groupMax ids: groups are sorted by creation time, not id.
func (s *Store) groupSource(ctx context.Context, q herald.Query) (idSource, error) {
	names, err := s.client.SMembers(ctx, s.key("pairs")).Result()
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, name := range names {
		tr, ok := splitName(name, 2)
		if ok && (q.Tenant == "" || tr[0] == q.Tenant) && (q.Route == "" || tr[1] == q.Route) {
			keys = append(keys, s.key("grp:"+name+"|"+string(q.Status)))
		}
	}
	sizes, err := s.pipelined(ctx, keys, func(p goredis.Pipeliner, key string) { p.ZCard(ctx, key) })
	if err != nil {
		return nil, err
	}
	total := int64(0)
	for _, c := range sizes {
		total += c.(*goredis.IntCmd).Val()
	}
	if total > groupMax {
		return nil, nil
	}
	groups, err := s.pipelined(ctx, keys, func(p goredis.Pipeliner, key string) { p.ZRange(ctx, key, 0, -1) })
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range groups {
		for _, id := range c.(*goredis.StringSliceCmd).Val() {
			if strings.HasPrefix(id, q.IDPrefix) {
				ids = append(ids, id)
			}
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return func(_ context.Context, after string, n int) ([]string, error) {
		i := 0
		if after != "" {
			i, _ = slices.BinarySearchFunc(ids, after, func(id, after string) int { return strings.Compare(after, id) })
			if i < len(ids) && ids[i] == after {
				i++
			}
		}
		return ids[i:min(i+n, len(ids))], nil
	}, nil
}

// allSource merges the id sets of every tenant.
func (s *Store) allSource(ctx context.Context, low string) (idSource, error) {
	names, err := s.client.SMembers(ctx, s.key("pairs")).Result()
	if err != nil {
		return nil, err
	}
	var tenants []idSource
	seen := map[string]bool{}
	for _, name := range names {
		tr, ok := splitName(name, 2)
		if ok && !seen[tr[0]] {
			seen[tr[0]] = true
			tenants = append(tenants, s.lexSource(s.key("ten:"+esc(tr[0])), low))
		}
	}
	return func(ctx context.Context, after string, n int) ([]string, error) {
		var ids []string
		for _, next := range tenants {
			some, err := next(ctx, after, n)
			if err != nil {
				return nil, err
			}
			ids = append(ids, some...)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(ids)))
		return ids[:min(n, len(ids))], nil
	}, nil
}

// pipelined runs cmd for each key in one pipeline and returns the commands.
func (s *Store) pipelined(ctx context.Context, keys []string, cmd func(p goredis.Pipeliner, key string)) ([]goredis.Cmder, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	return s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, k := range keys {
			cmd(p, k)
		}
		return nil
	})
}

// read returns the messages ids, nil for those that no longer exist.
func (s *Store) read(ctx context.Context, ids []string) ([]*herald.Message, error) {
	hashes, err := s.hashes(ctx, ids)
	if err != nil {
		return nil, err
	}
	msgs := make([]*herald.Message, len(ids))
	for i, h := range hashes {
		if len(h) == 0 {
			continue
		}
		if msgs[i], _, err = decode(h); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// hashes reads the hashes of messages ids in one round trip, empty for
// those that no longer exist: the fields decode reads, without the
// timeline, which only Get needs and which is the largest field.
func (s *Store) hashes(ctx context.Context, ids []string) ([]map[string]string, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.key("m:" + id)
	}
	cmds, err := s.pipelined(ctx, keys, func(p goredis.Pipeliner, key string) { p.HMGet(ctx, key, decodedFields...) })
	if err != nil {
		return nil, err
	}
	hashes := make([]map[string]string, len(cmds))
	for i, c := range cmds {
		h := make(map[string]string, len(decodedFields))
		for j, v := range c.(*goredis.SliceCmd).Val() {
			if v != nil {
				h[decodedFields[j]] = str(v)
			}
		}
		hashes[i] = h
	}
	return hashes, nil
}

// matches reports whether m passes q's filters.
func matches(q herald.Query, m *herald.Message) bool {
	updated := unixms.From(m.UpdatedAt)
	return (q.Tenant == "" || m.Tenant == q.Tenant) &&
		(q.Status == "" || m.Status == q.Status) &&
		(q.Route == "" || m.Route == q.Route) &&
		(q.CorrelationID == "" || m.CorrelationID == q.CorrelationID) &&
		(q.Target == "" || m.Target == q.Target) &&
		strings.HasPrefix(m.ID, q.IDPrefix) &&
		(q.Reason == "" || strings.Contains(m.LastError, q.Reason)) &&
		(q.Since.IsZero() || updated >= unixms.From(q.Since)) &&
		(q.Until.IsZero() || updated < unixms.From(q.Until))
}
