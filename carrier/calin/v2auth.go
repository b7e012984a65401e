package calin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// tokenSkew is how long before its expiry a bearer token is renewed.
const tokenSkew = 30 * time.Second

// session holds the V2 bearer token: it logs in when there is none or it
// is about to expire, one login at a time, and once more when a call
// answers 401. It is safe for concurrent use.
type session struct {
	w     wire
	login v2Login
	gate  chan struct{} // one login at a time

	mu    sync.Mutex
	token string
	exp   time.Time // zero: unknown, kept until a 401
}

// v2Login is the login body.
type v2Login struct {
	UserID   string `json:"userId"`
	Password string `json:"password"`
	Company  string `json:"company"`
}

func newSession(w wire, userID, password, company string) *session {
	return &session{w: w, login: v2Login{UserID: userID, Password: password, Company: company}, gate: make(chan struct{}, 1)}
}

// post sends body to path with the bearer token; on a 401 it logs in once
// more and sends it again. A second 401 is an error: the API refuses the
// account's fresh token.
func (s *session) post(ctx context.Context, path string, body any) (answer, error) {
	tok, err := s.bearer(ctx)
	if err != nil {
		return answer{}, err
	}
	a, err := s.w.post(ctx, path, body, tok)
	if err != nil || a.status != http.StatusUnauthorized {
		return a, err
	}
	s.drop(tok) // expired or revoked: a 401 means the call was refused, so sending it again is safe
	if tok, err = s.bearer(ctx); err != nil {
		return answer{}, err
	}
	a, err = s.w.post(ctx, path, body, tok)
	if err == nil && a.status == http.StatusUnauthorized {
		return a, errors.New("401 Unauthorized again after a fresh login: the API refuses the account's token")
	}
	return a, err
}

// bearer returns a token that is not about to expire, logging in for one
// when needed.
func (s *session) bearer(ctx context.Context) (string, error) {
	if tok := s.valid(); tok != "" {
		return tok, nil
	}
	select {
	case s.gate <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for a login: %w", ctx.Err())
	}
	defer func() { <-s.gate }()
	if tok := s.valid(); tok != "" { // another call logged in meanwhile
		return tok, nil
	}
	tok, exp, err := s.fetch(ctx)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.token, s.exp = tok, exp
	s.mu.Unlock()
	return tok, nil
}

// valid returns the token held, or "" when there is none or it expires
// within tokenSkew.
func (s *session) valid() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == "" || (!s.exp.IsZero() && s.exp.Sub(s.w.now()) < tokenSkew) {
		return ""
	}
	return s.token
}

// drop forgets tok, unless another call has already replaced it.
func (s *session) drop(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == tok {
		s.token, s.exp = "", time.Time{}
	}
}

// fetch logs in. Its errors are never in doubt: a login creates nothing.
func (s *session) fetch(ctx context.Context) (string, time.Time, error) {
	a, err := s.w.post(ctx, "/API/User/Login", s.login, "")
	var tok string
	var exp time.Time
	if err == nil {
		tok, exp, err = s.w.parseV2Login(a)
	}
	if err != nil {
		var d *doubtError
		if errors.As(err, &d) {
			err = d.err
		}
		return "", time.Time{}, fmt.Errorf("login: %w", err)
	}
	return tok, exp, nil
}
