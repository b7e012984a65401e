// Package ui serves herald's admin page at /ui: an overview of the queue,
// a search of messages with each one's timeline, the dead letters with
// replay and purge, the rooms with their subscriptions and each one's
// deliveries, and charts of the last hour. The page is plain HTML,
// CSS and JavaScript embedded in the binary (assets/); it reads and acts
// through the JSON API of package httpapi, served by the same server.
//
// An operator logs in with an API key (POST /ui/login): the key is checked
// against the API's keys, and the browser gets an HttpOnly, SameSite=Strict
// cookie (Secure when the request came over TLS, or through a trusted
// proxy that says it did) holding an opaque random session id, never the
// key; the session maps to the key's tenant and role in the server's store
// (Config.Sessions: every node sharing the store knows it, and a restart
// ends none), under a hash of the id, and ends at logout, after its
// lifetime, when unused for the idle timeout, or when its tenant's logins
// outnumber what a tenant may keep (its least recently used first; never
// another tenant's). Failed logins are throttled, exponentially, per
// client address and per key prefix, in each process's memory. UI implements httpapi.Sessions, so that the API
// takes the cookie in place of a bearer key; the API refuses a change so
// authenticated unless it comes from the page's origin with the session's
// CSRF token, which the page reads from its own HTML, and refuses any
// change of a read-only key's session, whose page shows no buttons.
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
	"net/netip"
	"strings"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/httpapi"
)

// Path is where the page is served.
const Path = "/ui"

// CookieName is the name of the session cookie.
const CookieName = "herald_session"

// The defaults of Config.
const (
	// DefaultSessionTTL is how long a login lasts at most.
	DefaultSessionTTL = 12 * time.Hour
	// DefaultIdleTimeout ends a session unused for that long (an open page
	// uses its session every few seconds).
	DefaultIdleTimeout = 30 * time.Minute
	// DefaultMaxSessionsPerTenant is how many sessions a tenant keeps: a
	// login beyond it ends that tenant's least recently used session.
	DefaultMaxSessionsPerTenant = 100
)

//go:embed assets
var assets embed.FS

// Config configures a UI.
type Config struct {
	// Keys maps each API key to its tenant, as httpapi.Config.Keys does.
	// Keys that are empty or map to an empty tenant are ignored.
	Keys map[string]string
	// Roles gives a key of Keys its role, as httpapi.Config.Roles does.
	Roles map[string]httpapi.Role
	// SessionTTL is how long a login lasts. Defaults to DefaultSessionTTL.
	SessionTTL time.Duration
	// IdleTimeout ends a session unused for that long. Defaults to
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxSessionsPerTenant bounds each tenant's sessions. Defaults to
	// DefaultMaxSessionsPerTenant.
	MaxSessionsPerTenant int
	// Sessions keeps the sessions: the server's store, so that every node
	// behind a load balancer serves them and a restart keeps them. Nil
	// keeps them in this process's memory, which a restart forgets.
	Sessions herald.SessionStore
	// TrustedProxies are the networks of the proxies in front of herald
	// (the config's http.trusted_proxies): a request from one is believed
	// about its client's address (X-Forwarded-For, for the throttle and
	// the logs) and about TLS (X-Forwarded-Proto: https makes the cookie
	// Secure).
	TrustedProxies []netip.Prefix
	// Logger receives a line for every login, logout, wrong key and burst
	// of throttled logins. Defaults to slog.Default().
	Logger *slog.Logger
	// Problem counts what goes wrong, by kind (ui_login_failed,
	// ui_login_throttled): a metric. Nil counts nothing.
	Problem func(kind string)
}

// UI is the admin page's handler and its sessions.
type UI struct {
	keys             map[[sha256.Size]byte]httpapi.Identity
	sessions         *sessions
	byAddr, byPrefix *throttle // failed logins
	proxies          proxies
	log              *slog.Logger
	problem          func(kind string)
	pages            *template.Template
	static           http.Handler
}

var _ httpapi.Sessions = (*UI)(nil)

// New returns the page's handler.
func New(cfg Config) *UI {
	u := &UI{keys: make(map[[sha256.Size]byte]httpapi.Identity, len(cfg.Keys)), log: cfg.Logger, problem: cfg.Problem,
		proxies: proxies(cfg.TrustedProxies)}
	for key, tenant := range cfg.Keys {
		if key != "" && tenant != "" {
			role := cfg.Roles[key]
			if role == "" {
				role = httpapi.RoleWrite
			}
			u.keys[sha256.Sum256([]byte(key))] = httpapi.Identity{Tenant: tenant, Role: role}
		}
	}
	ttl, idle, perTenant := cfg.SessionTTL, cfg.IdleTimeout, cfg.MaxSessionsPerTenant
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	if perTenant <= 0 {
		perTenant = DefaultMaxSessionsPerTenant
	}
	store := cfg.Sessions
	if store == nil {
		store = newMemorySessions()
	}
	u.sessions = &sessions{store: store, ttl: ttl, idle: idle, perTenant: perTenant, now: time.Now}
	u.byAddr, u.byPrefix = newThrottle(addrRule, time.Now), newThrottle(prefixRule, time.Now)
	if u.log == nil {
		u.log = slog.Default()
	}
	u.sessions.log = u.log
	if u.problem == nil {
		u.problem = func(string) {}
	}
	u.pages = template.Must(template.ParseFS(assets, "assets/*.html"))
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the directory is embedded: it exists
	}
	u.static = http.StripPrefix(Path+"/assets/", http.FileServerFS(sub))
	return u
}

// Session returns the identity and CSRF token of r's session cookie, and
// marks the session used (at most every TouchEvery); it implements
// httpapi.Sessions. err is the store's, when it could not say.
func (u *UI) Session(r *http.Request) (id httpapi.Identity, csrfToken string, ok bool, err error) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return httpapi.Identity{}, "", false, nil
	}
	s, ok, err := u.sessions.get(r.Context(), c.Value)
	if !ok || err != nil {
		return httpapi.Identity{}, "", false, err
	}
	return s.id, s.csrf, true, nil
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
	// Role is the session's: the page shows no buttons to "read".
	Role  httpapi.Role
	CSRF  string
	Error string
}

// page serves the page to a logged-in browser, and sends any other to the login.
func (u *UI) page(w http.ResponseWriter, r *http.Request) {
	id, token, ok, err := u.Session(r)
	if err != nil {
		u.unavailable(w, r, err)
		return
	}
	if !ok {
		http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
		return
	}
	u.render(w, http.StatusOK, "index.html", pageData{Tenant: id.Tenant, Role: id.Role, CSRF: token})
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

// unavailable answers 503 when the sessions' store could not be read or
// written: the browser's session, if any, is left as it is.
func (u *UI) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	u.log.Warn("ui: the sessions' store failed", "path", r.URL.Path, "err", err)
	w.Header().Set("Retry-After", "1")
	u.render(w, http.StatusServiceUnavailable, "login.html", pageData{Error: "herald cannot reach its store just now. Try again in a moment."})
}
