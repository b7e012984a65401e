package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/heraldmq/herald/httpapi"
)

// maxFormBytes bounds the body of the login and logout forms.
const maxFormBytes = 4 << 10

// session is a logged-in browser.
type session struct {
	tenant string
	// csrf is the token the page sends with every change (httpapi.CSRFHeader).
	csrf    string
	expires time.Time
}

// sessions holds the live sessions by the SHA-256 of their ids, so that a
// lookup takes the same time whatever the id shares with a real one.
type sessions struct {
	mu  sync.Mutex
	m   map[[sha256.Size]byte]session
	ttl time.Duration
	max int
	now func() time.Time
}

func newSessions(ttl time.Duration, max int, now func() time.Time) *sessions {
	return &sessions{m: map[[sha256.Size]byte]session{}, ttl: ttl, max: max, now: now}
}

// randomToken returns 256 random bits, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// start makes a session of tenant and returns its id.
func (s *sessions) start(tenant string) string {
	id := randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		s.sweep(now)
	}
	for len(s.m) >= s.max {
		s.evictOldest()
	}
	s.m[sha256.Sum256([]byte(id))] = session{tenant: tenant, csrf: randomToken(), expires: now.Add(s.ttl)}
	return id
}

// get returns the live session id, and forgets it when it has expired.
func (s *sessions) get(id string) (session, bool) {
	if id == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.m[k]
	if !ok {
		return session{}, false
	}
	if !s.now().Before(sess.expires) {
		delete(s.m, k)
		return session{}, false
	}
	return sess, true
}

// end forgets session id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(id)))
}

// sweep forgets the expired sessions; s.mu is held.
func (s *sessions) sweep(now time.Time) {
	for k, sess := range s.m {
		if !now.Before(sess.expires) {
			delete(s.m, k)
		}
	}
}

// evictOldest forgets the session closest to its expiry; s.mu is held.
func (s *sessions) evictOldest() {
	var (
		oldest [sha256.Size]byte
		first  time.Time
	)
	for k, sess := range s.m {
		if first.IsZero() || sess.expires.Before(first) {
			oldest, first = k, sess.expires
		}
	}
	delete(s.m, oldest)
}

// loginPage serves the login form, or sends a logged-in browser to the page.
func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := u.Session(r); ok {
		http.Redirect(w, r, Path, http.StatusSeeOther)
		return
	}
	u.render(w, http.StatusOK, "login.html", pageData{})
}

// login handles POST /ui/login: the form's key, when it is an API key,
// starts a session of its tenant, set as the cookie, and sends the browser
// to the page. A wrong key is answered 401 with the form again; a form
// posted from another origin is refused 403.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	if !httpapi.SameOrigin(r) {
		u.log.Warn("ui: login refused: not from the page's origin", "origin", r.Header.Get("Origin"),
			"fetch_site", r.Header.Get("Sec-Fetch-Site"), "remote", r.RemoteAddr)
		u.render(w, http.StatusForbidden, "login.html", pageData{Error: "This login did not come from herald's own login page. Open it and try again."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		u.render(w, http.StatusBadRequest, "login.html", pageData{Error: "The form could not be read. Try again."})
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	tenant, ok := u.keys[sha256.Sum256([]byte(key))]
	if key == "" || !ok {
		u.log.Warn("ui: login with a wrong key", "remote", r.RemoteAddr)
		u.render(w, http.StatusUnauthorized, "login.html", pageData{Error: "That key is not valid."})
		return
	}
	if c, err := r.Cookie(CookieName); err == nil {
		u.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: u.sessions.start(tenant), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	u.log.Info("ui: login", "tenant", tenant, "remote", r.RemoteAddr)
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

// logout handles POST /ui/logout: it ends the session, when the form
// carries its CSRF token and comes from the page's origin, clears the
// cookie and sends the browser to the login.
func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	if !httpapi.SameOrigin(r) {
		http.Error(w, "a logout must come from herald's own page", http.StatusForbidden)
		return
	}
	if c, err := r.Cookie(CookieName); err == nil {
		if s, ok := u.sessions.get(c.Value); ok {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			token := r.PostFormValue("csrf")
			if token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf)) != 1 {
				http.Error(w, "the logout form does not carry the session's token", http.StatusForbidden)
				return
			}
			u.sessions.end(c.Value)
			u.log.Info("ui: logout", "tenant", s.tenant, "remote", r.RemoteAddr)
		}
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
}
