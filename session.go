package herald

import (
	"context"
	"time"
)

// Session is a login to the admin page (package ui), kept in the store so
// that every node serving the page knows it: a browser may reach any node
// behind a load balancer, and a restart logs no one out. It holds neither
// an API key nor the cookie's value.
type Session struct {
	// ID names it: the admin page keeps a hash of the random id its
	// cookie holds, so that the store holds no cookie a reader could use.
	ID string
	// Tenant and Role are those of the key it was opened with.
	Tenant, Role string
	// CSRF is the token that a change made with it carries.
	CSRF string
	// Created is when it was opened; Used when it was last used, as last
	// recorded (see TouchSession: at most once a minute).
	Created, Used time.Time
	// Expires is when it ends: the earlier of its lifetime's end and its
	// idle timeout after Used.
	Expires time.Time
}

// SessionStore keeps the admin page's sessions. Both stores implement it;
// the core never calls it. Every method is safe for concurrent use, and
// every change it reports as done is durable (a Redis store: as durable as
// the server's persistence). Implementations must pass storetest.Exercise,
// which tests it when the store implements it.
type SessionStore interface {
	// CreateSession stores s (a new ID). Before, it deletes the sessions
	// of s.Tenant that have ended at s.Created (Expires at or before it)
	// and then, while the tenant holds perTenant sessions or more, its
	// least recently used one (the earliest Used, then the smallest ID),
	// so that the tenant holds at most perTenant once s is stored; never
	// another tenant's. perTenant <= 0 bounds nothing. All in one write.
	CreateSession(ctx context.Context, s Session, perTenant int) error

	// Session returns session id when it is live at now (Expires after
	// now), or ErrNotFound.
	Session(ctx context.Context, id string, now time.Time) (*Session, error)

	// TouchSession records that session id was used at used and now ends
	// at expires, when it is live at used; otherwise it changes nothing
	// and returns ErrNotFound.
	TouchSession(ctx context.Context, id string, used, expires time.Time) error

	// DeleteSession deletes session id; an unknown id is no error.
	DeleteSession(ctx context.Context, id string) error
}
