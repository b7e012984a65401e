package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// The admin page's sessions are rows of the sessions table, times in unix
// milliseconds (herald.SessionStore).

// sessionCols are the sessions table's columns, in the order scanSession
// reads them.
const sessionCols = `id, tenant, role, csrf, created, used, expires`

var _ herald.SessionStore = (*Store)(nil)

// CreateSession deletes the sessions that have ended at s.Created, then
// s.Tenant's least recently used while it holds perTenant or more, and
// stores s, in one transaction.
func (s *Store) CreateSession(ctx context.Context, sess herald.Session, perTenant int) error {
	err := s.write(ctx, func(tx *wtx) error {
		if _, err := tx.st.endedSessions.Exec(unixms.From(sess.Created)); err != nil {
			return err
		}
		if perTenant > 0 {
			var n int
			if err := tx.st.countSessions.QueryRow(sess.Tenant).Scan(&n); err != nil {
				return err
			}
			if n >= perTenant {
				if _, err := tx.st.evictSessions.Exec(sess.Tenant, n-perTenant+1); err != nil {
					return err
				}
			}
		}
		_, err := tx.st.insertSession.Exec(sess.ID, sess.Tenant, sess.Role, sess.CSRF,
			unixms.From(sess.Created), unixms.From(sess.Used), unixms.From(sess.Expires))
		return err
	})
	return wrap("create session", err)
}

// Session returns session id when it is live at now.
func (s *Store) Session(ctx context.Context, id string, now time.Time) (*herald.Session, error) {
	var (
		sess                   herald.Session
		created, used, expires int64
	)
	err := s.rs.session.QueryRowContext(ctx, id).Scan(&sess.ID, &sess.Tenant, &sess.Role, &sess.CSRF, &created, &used, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, herald.ErrNotFound
	}
	if err != nil {
		return nil, wrap("session", err)
	}
	sess.Created, sess.Used, sess.Expires = unixms.Time(created), unixms.Time(used), unixms.Time(expires)
	if !sess.Expires.After(now) {
		return nil, herald.ErrNotFound
	}
	return &sess, nil
}

// TouchSession moves session id's last use and end, when it is live at used.
func (s *Store) TouchSession(ctx context.Context, id string, used, expires time.Time) error {
	err := s.write(ctx, func(tx *wtx) error {
		n, err := deleted(tx.st.touchSession.Exec(id, unixms.From(used), unixms.From(expires)))
		if err == nil && n == 0 {
			return herald.ErrNotFound
		}
		return err
	})
	return wrap("touch session", err)
}

// DeleteSession deletes session id.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *wtx) error {
		_, err := tx.st.deleteSession.Exec(id)
		return err
	})
	return wrap("delete session", err)
}
