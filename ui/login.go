package ui

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldmq/herald/httpapi"
)

// maxFormBytes bounds the body of the login and logout forms.
const maxFormBytes = 4 << 10

// keyPrefixLen is how much of a key the per-prefix throttle goes by: many
// addresses trying keys that start alike are slowed down together.
const keyPrefixLen = 8

// The throttles of failed logins.
var (
	// addrRule: a client address (an IPv6 /64) may fail 5 times, then
	// waits 1 s, 2 s, 4 s, ... up to 15 minutes after each failure.
	addrRule = throttleRule{free: 5, base: time.Second, max: 15 * time.Minute, forget: time.Hour}
	// prefixRule: the keys sharing a prefix may fail 10 times, from any
	// address, then wait as long, up to 5 minutes.
	prefixRule = throttleRule{free: 10, base: time.Second, max: 5 * time.Minute, forget: time.Hour}
)

// The problems the page counts (Config.Problem).
const (
	problemLoginFailed    = "ui_login_failed"
	problemLoginThrottled = "ui_login_throttled"
)

// loginPage serves the login form, or sends a logged-in browser to the page.
func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := u.Session(r); ok {
		http.Redirect(w, r, Path, http.StatusSeeOther)
		return
	}
	u.render(w, http.StatusOK, "login.html", pageData{})
}

// login handles POST /ui/login: the form's key, when it is an API key,
// starts a session of its tenant and role, set as the cookie, and sends
// the browser to the page. A wrong key is answered 401 with the form
// again; a form posted from another origin is refused 403; a client
// address, or a key prefix, that failed too often is answered 429 until
// its wait is over, whatever the key.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	client := u.proxies.client(r)
	if !httpapi.SameOrigin(r) {
		u.log.Warn("ui: login refused: not from the page's origin", "origin", r.Header.Get("Origin"),
			"fetch_site", r.Header.Get("Sec-Fetch-Site"), "remote", client)
		u.render(w, http.StatusForbidden, "login.html", pageData{Error: "This login did not come from herald's own login page. Open it and try again."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		u.render(w, http.StatusBadRequest, "login.html", pageData{Error: "The form could not be read. Try again."})
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	addrKey, prefixKey := throttleAddr(client), keyPrefix(key)
	if wait := max(u.byAddr.wait(addrKey), u.byPrefix.wait(prefixKey)); wait > 0 {
		u.problem(problemLoginThrottled)
		u.throttled(w, wait)
		return
	}
	id, ok := u.keys[sha256.Sum256([]byte(key))]
	if key == "" || !ok {
		u.problem(problemLoginFailed)
		addrWait, addrFirst := u.byAddr.fail(addrKey)
		prefixWait, prefixFirst := u.byPrefix.fail(prefixKey)
		if addrFirst {
			u.log.Warn("ui: failed logins throttled: a client address", "remote", client, "wait", addrWait)
		}
		if prefixFirst {
			u.log.Warn("ui: failed logins throttled: keys starting alike, from any address", "prefix_sha256", prefixKey, "wait", prefixWait)
		}
		if !addrFirst && !prefixFirst && addrWait == 0 && prefixWait == 0 {
			u.log.Warn("ui: login with a wrong key", "remote", client)
		}
		u.render(w, http.StatusUnauthorized, "login.html", pageData{Error: "That key is not valid."})
		return
	}
	u.byAddr.succeed(addrKey)
	if c, err := r.Cookie(CookieName); err == nil {
		u.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: u.sessions.start(id), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.proxies.secure(r),
	})
	u.log.Info("ui: login", "tenant", id.Tenant, "role", id.Role, "remote", client)
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

// throttled answers 429 with the form and how long to wait.
func (u *UI) throttled(w http.ResponseWriter, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	u.render(w, http.StatusTooManyRequests, "login.html", pageData{
		Error: fmt.Sprintf("Too many failed logins. Wait %d seconds, then try again.", secs)})
}

// keyPrefix is the key of the per-prefix throttle for key: the SHA-256 of
// its first keyPrefixLen bytes, so that no part of a key is kept or logged.
func keyPrefix(key string) string {
	sum := sha256.Sum256([]byte(key[:min(len(key), keyPrefixLen)]))
	return hex.EncodeToString(sum[:8])
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
			u.log.Info("ui: logout", "tenant", s.id.Tenant, "remote", u.proxies.client(r))
		}
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.proxies.secure(r),
	})
	http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
}
