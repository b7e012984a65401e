package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
)

// keyring maps the SHA-256 of each bearer key to its tenant, so that a
// lookup takes the same time whatever the key shares with a real one.
type keyring map[[sha256.Size]byte]string

func newKeyring(keys map[string]string) keyring {
	k := make(keyring, len(keys))
	for key, tenant := range keys {
		if key != "" && tenant != "" {
			k[sha256.Sum256([]byte(key))] = tenant
		}
	}
	return k
}

// tenant returns the tenant of the request's bearer key.
func (k keyring) tenant(r *http.Request) (string, bool) {
	scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return "", false
	}
	t, ok := k[sha256.Sum256([]byte(key))]
	return t, ok
}

type tenantKey struct{}

// tenantOf returns the tenant that authenticate put in r's context.
func tenantOf(r *http.Request) string {
	t, _ := r.Context().Value(tenantKey{}).(string)
	return t
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
// browser session (401), and state-changing ones of a session that are
// cross-site or lack its token (403); it tells the handlers the tenant of
// the others. A request with an Authorization header is judged by it
// alone, whatever cookies it has.
func (a *api) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !needsKey(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		tenant, ok := a.keys.tenant(r)
		if !ok && r.Header.Get("Authorization") == "" && a.sessions != nil {
			var token string
			if tenant, token, ok = a.sessions.Session(r); ok {
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
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}

// browserWriteRefused says why r, authenticated by a browser session whose
// token is token, may not go on, or "" when it may: a request that changes
// nothing may; one that changes something must come from the page's own
// origin (SameOrigin) and carry token in CSRFHeader.
func browserWriteRefused(r *http.Request, token string) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
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
