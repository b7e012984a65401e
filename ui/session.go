package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"

	"github.com/heraldmq/herald/httpapi"
)

// session is a logged-in browser.
type session struct {
	id httpapi.Identity
	// csrf is the token the page sends with every change (httpapi.CSRFHeader).
	csrf string
	// started and seen are when it logged in and when it was last used:
	// it ends a lifetime after the one or an idle timeout after the other.
	started, seen time.Time
}

// sessionKey is the SHA-256 of a session's id, so that a lookup takes the
// same time whatever the id shares with a real one.
type sessionKey = [sha256.Size]byte

// sessions holds the live sessions, by tenant: a tenant's logins make room
// for themselves by ending that tenant's least recently used session,
// never another tenant's.
type sessions struct {
	mu        sync.Mutex
	byKey     map[sessionKey]*session
	byTenant  map[string]map[sessionKey]*session
	ttl, idle time.Duration
	perTenant int
	now       func() time.Time
}

func newSessions(ttl, idle time.Duration, perTenant int, now func() time.Time) *sessions {
	return &sessions{byKey: map[sessionKey]*session{}, byTenant: map[string]map[sessionKey]*session{},
		ttl: ttl, idle: idle, perTenant: perTenant, now: now}
}

// randomToken returns 256 random bits, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// live reports whether s is live at now.
func (s *sessions) live(sess *session, now time.Time) bool {
	return now.Before(sess.started.Add(s.ttl)) && now.Before(sess.seen.Add(s.idle))
}

// start makes a session of id and returns its session id. When the tenant
// has as many live sessions as it may, its least recently used ends.
func (s *sessions) start(id httpapi.Identity) string {
	sid := randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	own := s.byTenant[id.Tenant]
	if own == nil {
		own = map[sessionKey]*session{}
	}
	if len(own) >= s.perTenant {
		for k, sess := range own {
			if !s.live(sess, now) {
				s.forget(k, sess)
			}
		}
	}
	for len(own) >= s.perTenant {
		s.evictLeastRecent(own)
	}
	k := sha256.Sum256([]byte(sid))
	sess := &session{id: id, csrf: randomToken(), started: now, seen: now}
	s.byKey[k], own[k] = sess, sess
	s.byTenant[id.Tenant] = own // forget drops an emptied map
	return sid
}

// get returns the live session sid and marks it used; it forgets it when
// it has ended.
func (s *sessions) get(sid string) (session, bool) {
	if sid == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(sid))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byKey[k]
	if !ok {
		return session{}, false
	}
	if !s.live(sess, now) {
		s.forget(k, sess)
		return session{}, false
	}
	sess.seen = now
	return *sess, true
}

// end forgets session sid.
func (s *sessions) end(sid string) {
	k := sha256.Sum256([]byte(sid))
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.byKey[k]; ok {
		s.forget(k, sess)
	}
}

// count returns how many sessions tenant holds, live or not yet forgotten.
func (s *sessions) count(tenant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byTenant[tenant])
}

// forget removes session k; s.mu is held.
func (s *sessions) forget(k sessionKey, sess *session) {
	delete(s.byKey, k)
	own := s.byTenant[sess.id.Tenant]
	delete(own, k)
	if len(own) == 0 {
		delete(s.byTenant, sess.id.Tenant)
	}
}

// evictLeastRecent forgets the session of own used least recently; s.mu
// is held.
func (s *sessions) evictLeastRecent(own map[sessionKey]*session) {
	var (
		oldest sessionKey
		victim *session
	)
	for k, sess := range own {
		if victim == nil || sess.seen.Before(victim.seen) {
			oldest, victim = k, sess
		}
	}
	s.forget(oldest, victim)
}
