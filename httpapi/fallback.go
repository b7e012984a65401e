package httpapi

import (
	"net/http"
)

// jsonFallback serves mux, answering the requests that no pattern matches
// with the JSON error shape: 404 not_found, or 405 method_not_allowed (with
// its Allow header) when the path exists for another method.
func jsonFallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&fallbackWriter{ResponseWriter: w}, r)
	})
}

// fallbackWriter turns the mux's plain-text 404 and 405 into JSON and lets
// any other answer (a redirect) through.
type fallbackWriter struct {
	http.ResponseWriter
	replaced bool
}

func (f *fallbackWriter) WriteHeader(status int) {
	switch status {
	case http.StatusNotFound:
		f.replaced = true
		f.Header().Del("X-Content-Type-Options")
		writeError(f.ResponseWriter, status, codeNotFound, "no such endpoint")
	case http.StatusMethodNotAllowed:
		f.replaced = true
		f.Header().Del("X-Content-Type-Options")
		allow := f.Header().Get("Allow")
		writeError(f.ResponseWriter, status, codeMethodNotAllowed, "method not allowed; allowed: "+allow)
	default:
		f.ResponseWriter.WriteHeader(status)
	}
}

func (f *fallbackWriter) Write(b []byte) (int, error) {
	if f.replaced {
		return len(b), nil // the plain-text body: the JSON one is written
	}
	return f.ResponseWriter.Write(b)
}
