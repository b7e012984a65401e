package httpapi

import (
	"context"
	"crypto/sha256"
	"net/http"
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

// needsKey reports whether path is under /v1 and not the ingress.
func needsKey(path string) bool {
	return (path == "/v1" || strings.HasPrefix(path, "/v1/")) && !strings.HasPrefix(path, "/v1/ingress/")
}

// authenticate refuses /v1 requests without a known bearer key (401) and
// tells the handlers the tenant of the others.
func (a *api) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !needsKey(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		tenant, ok := a.keys.tenant(r)
		if !ok {
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
