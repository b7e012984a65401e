package redis

import (
	"context"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// The admin page's sessions are hashes with a TTL, each in its tenant's
// sorted set by last use (see lua/lib.lua; herald.SessionStore).

var _ herald.SessionStore = (*Store)(nil)

// ttlOf returns the life left at now of what ends at end, in ms, at
// least 1: a TTL relative to the caller's clock, which the server's need
// not share.
func ttlOf(end, now time.Time) int64 {
	return max(end.Sub(now).Milliseconds(), 1)
}

// CreateSession stores sess, after forgetting the tenant's sessions that
// have ended and, beyond perTenant, its least recently used: see
// lua/create_session.lua.
func (s *Store) CreateSession(ctx context.Context, sess herald.Session, perTenant int) error {
	_, err := s.eval(ctx, createSessionScript, sess.ID, esc(sess.Tenant), sess.Role, sess.CSRF,
		unixms.From(sess.Created), unixms.From(sess.Used), unixms.From(sess.Expires), max(perTenant, 0),
		ttlOf(sess.Expires, sess.Created))
	return wrap(ctx, "create session", err)
}

// Session returns session id when it is live at now.
func (s *Store) Session(ctx context.Context, id string, now time.Time) (*herald.Session, error) {
	h, err := s.client.HGetAll(ctx, s.key("sess:"+id)).Result()
	if err != nil {
		return nil, wrap(ctx, "session", err)
	}
	if len(h) == 0 {
		return nil, herald.ErrNotFound
	}
	var ms [3]int64
	for i, f := range []string{"at", "used", "exp"} {
		if ms[i], err = strconv.ParseInt(h[f], 10, 64); err != nil {
			return nil, wrap(ctx, "session", err)
		}
	}
	sess := &herald.Session{ID: id, Tenant: unesc(h["t"]), Role: h["role"], CSRF: h["csrf"],
		Created: unixms.Time(ms[0]), Used: unixms.Time(ms[1]), Expires: unixms.Time(ms[2])}
	if !sess.Expires.After(now) {
		return nil, herald.ErrNotFound
	}
	return sess, nil
}

// TouchSession moves session id's last use and end, when it is live at used.
func (s *Store) TouchSession(ctx context.Context, id string, used, expires time.Time) error {
	res, err := s.eval(ctx, touchSessionScript, id, unixms.From(used), unixms.From(expires), ttlOf(expires, used))
	if err != nil {
		return wrap(ctx, "touch session", err)
	}
	if n, _ := res.(int64); n == 0 {
		return herald.ErrNotFound
	}
	return nil
}

// DeleteSession deletes session id.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	_, err := s.eval(ctx, deleteSessionScript, id)
	return wrap(ctx, "delete session", err)
}
