// Package ui serves herald's admin page at /ui: an overview of the queue,
// a search of messages with each one's timeline, the dead letters with
// replay and purge, and charts of the last hour. The page is plain HTML,
// CSS and JavaScript embedded in the binary (assets/); it reads and acts
// through the JSON API of package httpapi, served by the same server.
//
// An operator logs in with an API key (POST /ui/login): the key is checked
// against the API's keys, and the browser gets an HttpOnly, SameSite=Strict
// cookie holding an opaque random session id, never the key; the session
// maps to the key's tenant in this process's memory and ends at logout, at
// its expiry, or when the process stops. UI implements httpapi.Sessions, so
// that the API takes the cookie in place of a bearer key; the API refuses a
// change so authenticated unless it comes from the page's origin with the
// session's CSRF token, which the page reads from its own HTML.
//
// Mount a UI at both /ui and /ui/ of the server that serves the API at /:
//
//	admin := ui.New(ui.Config{Keys: keys})
//	mux.Handle("/ui", admin)
//	mux.Handle("/ui/", admin)
//	mux.Handle("/", httpapi.New(httpapi.Config{Engine: e, Keys: keys, Sessions: admin}))
package ui

import (
	"crypto/sha256"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/heraldmq/herald/httpapi"
)

// Path is where the page is served.
const Path = "/ui"

// CookieName is the name of the session cookie.
const CookieName = "herald_session"

// DefaultSessionTTL is how long a login lasts when Config.SessionTTL is zero.
const DefaultSessionTTL = 12 * time.Hour

// MaxSessions bounds the sessions kept at once; a login beyond it ends the
// session closest to its expiry.
const MaxSessions = 10000

//go:embed assets
var assets embed.FS

// Config configures a UI.
type Config struct {
	// Keys maps each API key to its tenant, as httpapi.Config.Keys does.
	// Keys that are empty or map to an empty tenant are ignored.
	Keys map[string]string
	// SessionTTL is how long a login lasts. Defaults to DefaultSessionTTL.
	SessionTTL time.Duration
	// Logger receives a line for every login, failed login and logout.
	// Defaults to slog.Default().
	Logger *slog.Logger
}

// UI is the admin page's handler and its sessions.
type UI struct {
	keys     map[[sha256.Size]byte]string
	sessions *sessions
	log      *slog.Logger
	pages    *template.Template
	static   http.Handler
}

var _ httpapi.Sessions = (*UI)(nil)

// New returns the page's handler.
func New(cfg Config) *UI {
	u := &UI{keys: make(map[[sha256.Size]byte]string, len(cfg.Keys)), log: cfg.Logger}
	for key, tenant := range cfg.Keys {
		if key != "" && tenant != "" {
			u.keys[sha256.Sum256([]byte(key))] = tenant
		}
	}
	ttl := cfg.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	u.sessions = newSessions(ttl, MaxSessions, time.Now)
	if u.log == nil {
		u.log = slog.Default()
	}
	u.pages = template.Must(template.ParseFS(assets, "assets/*.html"))
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the directory is embedded: it exists
	}
	u.static = http.StripPrefix(Path+"/assets/", http.FileServerFS(sub))
	return u
}

// Session returns the tenant and CSRF token of r's session cookie; it
// implements httpapi.Sessions.
func (u *UI) Session(r *http.Request) (tenant, csrfToken string, ok bool) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return "", "", false
	}
	s, ok := u.sessions.get(c.Value)
	if !ok {
		return "", "", false
	}
	return s.tenant, s.csrf, true
}

// ServeHTTP serves the page at /ui and /ui/, the login at /ui/login, the
// logout at /ui/logout and the assets under /ui/assets/.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == Path || path == Path+"/":
		u.methods(w, r, u.page, http.MethodGet, http.MethodHead)
	case path == Path+"/login":
		if r.Method == http.MethodPost {
			u.login(w, r)
			return
		}
		u.methods(w, r, u.loginPage, http.MethodGet, http.MethodHead)
	case path == Path+"/logout":
		u.methods(w, r, u.logout, http.MethodPost)
	case isAsset(path):
		u.methods(w, r, u.asset, http.MethodGet, http.MethodHead)
	default:
		http.NotFound(w, r)
	}
}

// isAsset reports whether path names a file of assets/ served as it is:
// a script or a style sheet, not a page template nor the directory.
func isAsset(path string) bool {
	name, ok := strings.CutPrefix(path, Path+"/assets/")
	return ok && !strings.Contains(name, "/") && (strings.HasSuffix(name, ".js") || strings.HasSuffix(name, ".css"))
}

// methods serves r with h when its method is one of allowed, and answers
// 405 otherwise.
func (u *UI) methods(w http.ResponseWriter, r *http.Request, h http.HandlerFunc, allowed ...string) {
	for _, m := range allowed {
		if r.Method == m {
			h(w, r)
			return
		}
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}

// pageData is what the page templates show.
type pageData struct {
	Tenant string
	CSRF   string
	Error  string
}

// page serves the page to a logged-in browser, and sends any other to the login.
func (u *UI) page(w http.ResponseWriter, r *http.Request) {
	tenant, token, ok := u.Session(r)
	if !ok {
		http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
		return
	}
	u.render(w, http.StatusOK, "index.html", pageData{Tenant: tenant, CSRF: token})
}

// asset serves a file of assets/.
func (u *UI) asset(w http.ResponseWriter, r *http.Request) {
	// The files change with the binary only; a browser asks again each time.
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	u.static.ServeHTTP(w, r)
}

// contentPolicy lets the page load its own scripts, styles and API answers
// only: no inline script, no other origin, no framing.
const contentPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// render answers status with the page template name.
func (u *UI) render(w http.ResponseWriter, status int, name string, data pageData) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", contentPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// Not no-referrer: with it a browser sends "Origin: null" with the
	// page's own POSTs, and the origin check (httpapi.SameOrigin) needs it.
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	if err := u.pages.ExecuteTemplate(w, name, data); err != nil {
		u.log.Warn("ui: rendering a page", "page", name, "err", err)
	}
}
