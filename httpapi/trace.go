package httpapi

import (
	"context"
	"net/http"
)

// Tracer traces the API's requests: package otelx implements it with
// OpenTelemetry. Without one (Config.Tracer nil) requests are served as
// they come, with nothing added.
type Tracer interface {
	// StartRequest starts the span of r, a server span that continues the
	// trace of r's traceparent header when it has one; r is served with
	// the context returned, so that Engine.Send finds the span there. end
	// is called once r is answered, with the pattern of the route that
	// served it ("" when none did: a 404, or a request refused before
	// routing) and the status answered.
	StartRequest(r *http.Request) (_ context.Context, end func(pattern string, status int))
}

// traced serves next within a span of t for each request; next unchanged
// when t is nil.
func traced(t Tracer, next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, end := t.StartRequest(r)
		note := &routeNote{}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(ctx, routeNoteKey{}, note)))
		end(note.pattern, sw.status())
	})
}

// notePattern serves next, then notes for traced the pattern of the route
// that served the request (the mux sets it on the request it is given);
// next unchanged when t is nil.
func notePattern(t Tracer, next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if n, ok := r.Context().Value(routeNoteKey{}).(*routeNote); ok {
			n.pattern = r.Pattern
		}
	})
}

// routeNote is where notePattern leaves the route's pattern for traced.
type routeNote struct{ pattern string }

type routeNoteKey struct{}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// status is the status answered: 200 when the handler wrote nothing.
func (s *statusWriter) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}
