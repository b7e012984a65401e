package ui

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/httpapi"
)

// TouchEvery is how often a session's last use is written to its store:
// a session used more often is touched at most once in that time, so
// that a page polling every few seconds costs reads, not writes. Its idle
// timeout counts from the last touch: to within TouchEvery.
const TouchEvery = time.Minute

// session is a logged-in browser.
type session struct {
	id httpapi.Identity
	// csrf is the token the page sends with every change (httpapi.CSRFHeader).
	csrf string
}

// sessions are the page's logins, kept in a herald.SessionStore (the
// server's store, so that every node knows them; or memory): each under
// the SHA-256 of the cookie's random id, never the id itself.
type sessions struct {
	store     herald.SessionStore
	ttl, idle time.Duration
	perTenant int
	now       func() time.Time
	log       *slog.Logger
}

// randomToken returns 256 random bits, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// storeID is what the store knows session sid by: the hex SHA-256 of the
// cookie's value, so that a reader of the store finds no cookie to use.
func storeID(sid string) string {
	sum := sha256.Sum256([]byte(sid))
	return hex.EncodeToString(sum[:])
}

// ends returns when a session started at started and used at used ends.
func (s *sessions) ends(started, used time.Time) time.Time {
	end := used.Add(s.idle)
	if life := started.Add(s.ttl); life.Before(end) {
		end = life
	}
	return end
}

// start makes a session of id and returns the cookie's value. When the
// tenant has as many live sessions as it may, its least recently used ends.
func (s *sessions) start(ctx context.Context, id httpapi.Identity) (string, error) {
	sid := randomToken()
	now := s.now()
	err := s.store.CreateSession(ctx, herald.Session{ID: storeID(sid), Tenant: id.Tenant, Role: string(id.Role),
		CSRF: randomToken(), Created: now, Used: now, Expires: s.ends(now, now)}, s.perTenant)
	if err != nil {
		return "", err
	}
	return sid, nil
}

// get returns the live session of the cookie's value sid, and marks it
// used when its last recorded use is TouchEvery old or older. ok is false
// when there is no such session; err when the store could not say.
func (s *sessions) get(ctx context.Context, sid string) (sess session, ok bool, err error) {
	if sid == "" {
		return session{}, false, nil
	}
	key := storeID(sid)
	now := s.now()
	st, err := s.store.Session(ctx, key, now)
	if errors.Is(err, herald.ErrNotFound) {
		return session{}, false, nil
	}
	if err != nil {
		return session{}, false, err
	}
	if now.Sub(st.Used) >= TouchEvery {
		switch err := s.store.TouchSession(ctx, key, now, s.ends(st.Created, now)); {
		case errors.Is(err, herald.ErrNotFound):
			return session{}, false, nil // ended meanwhile: a logout
		case err != nil:
			// It was live when read: the request goes on, and the
			// next one touches it again.
			s.log.Warn("ui: a session's use could not be recorded", "tenant", st.Tenant, "err", err)
		}
	}
	return session{id: httpapi.Identity{Tenant: st.Tenant, Role: httpapi.Role(st.Role)}, csrf: st.CSRF}, true, nil
}

// end deletes session sid.
func (s *sessions) end(ctx context.Context, sid string) error {
	return s.store.DeleteSession(ctx, storeID(sid))
}
