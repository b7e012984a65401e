package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
)

// keyring maps the SHA-256 of each bearer key to its identity, so that a
// lookup takes the same time whatever the key shares with a real one.
type keyring map[[sha256.Size]byte]Identity

// newKeyring reads keys (key → tenant) and roles (key → role; RoleWrite
// for a key it does not name).
func newKeyring(keys map[string]string, roles map[string]Role) keyring {
	k := make(keyring, len(keys))
	for key, tenant := range keys {
		if key != "" && tenant != "" {
			role := roles[key]
			if role == "" {
				role = RoleWrite
			}
			k[sha256.Sum256([]byte(key))] = Identity{Tenant: tenant, Role: role}
		}
	}
	return k
}

// identity returns the identity of the request's bearer key.
func (k keyring) identity(r *http.Request) (Identity, bool) {
	scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Identity{}, false
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return Identity{}, false
	}
	id, ok := k[sha256.Sum256([]byte(key))]
	return id, ok
}

// needsKey reports whether path is under /v1 and neither the ingress nor
// the OpenAPI document.
func needsKey(path string) bool {
	return (path == "/v1" || strings.HasPrefix(path, "/v1/")) && !strings.HasPrefix(path, "/v1/ingress/") && path != openAPIPath
}

// CSRFHeader is the header in which a request authenticated by a browser
// session carries the session's token when it changes anything.
const CSRFHeader = "X-CSRF-Token"

// authenticate refuses /v1 requests without a known bearer key or a
// browser session (401), state-changing ones of a session that are
// cross-site or lack its token (403), and state-changing ones of a
// read-only key (403); it tells the handlers the identity of the others.
// A request with an Authorization header is judged by it alone, whatever
// cookies it has.
func (a *api) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !needsKey(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		id, ok := a.keys.identity(r)
		if !ok && r.Header.Get("Authorization") == "" && a.sessions != nil {
			var token string
			if id, token, ok = a.sessions.Session(r); ok {
				if msg := browserWriteRefused(r, token); msg != "" {
					writeError(w, http.StatusForbidden, codeForbidden, msg)
					return
				}
			}
		}
		if !ok {
			closeUnread(w, r)
			w.Header().Set("WWW-Authenticate", "Bearer")
			msg := "a valid Authorization: Bearer <key> header is required"
			if r.Header.Get("Authorization") != "" {
				msg = "the bearer key is not valid"
			}
			writeError(w, http.StatusUnauthorized, "unauthorized", msg)
			return
		}
		if id.Role == RoleRead && !readOnly(r.Method) {
			closeUnread(w, r)
			a.log.Info("refused: a read-only key may not change anything", "tenant", id.Tenant, "method", r.Method, "path", r.URL.Path)
			a.problem(problemReadOnly)
			writeError(w, http.StatusForbidden, codeForbidden, "this key may only read (role read): "+r.Method+" is refused")
			return
		}
		next.ServeHTTP(w, withIdentity(r, id))
	})
}

// browserWriteRefused says why r, authenticated by a browser session whose
// token is token, may not go on, or "" when it may: a request that changes
// nothing may; one that changes something must come from the page's own
// origin (SameOrigin) and carry token in CSRFHeader.
func browserWriteRefused(r *http.Request, token string) string {
	if readOnly(r.Method) {
		return ""
	}
	if !SameOrigin(r) {
		return "a cross-origin request may not change anything with the session cookie"
	}
	got := r.Header.Get(CSRFHeader)
	if token == "" || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		return "the " + CSRFHeader + " header does not match the session"
	}
	return ""
}

// SameOrigin reports whether a browser says r comes from a page of r's own
// origin: Sec-Fetch-Site, when present, is "same-origin", and Origin, when
// present, names r's host (with https when r came over TLS). At least one
// of them must be present (browsers send Origin with every POST and
// DELETE), so a request that proves nothing is refused. A page served
// with "Referrer-Policy: no-referrer" makes its browser send "Origin:
// null", which is refused: serve the page with another policy.
func SameOrigin(r *http.Request) bool {
	site, origin := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin")
	if site == "" && origin == "" {
		return false
	}
	if site != "" && site != "same-origin" {
		return false
	}
	if origin != "" {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
		// Without TLS here, a proxy in front may have ended it: either
		// scheme will do, the host tells a foreign origin.
		if r.TLS != nil && u.Scheme != "https" {
			return false
		}
	}
	return true
}

// closeUnread asks the server to close r's connection after the answer
// when r has a body that will not be read: an unauthenticated client's
// body is never read, not even drained to keep the connection.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
}
