package httpapi

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// codeOverloaded answers a request whose body would take the bodies held
// in memory at once over Config.MaxBodyBytesInFlight.
const codeOverloaded = "overloaded"

// bodyBudget bounds the request body bytes held in memory at once, across
// requests: each request with a body takes its share before its body is
// read and gives it back when its handler returns.
type bodyBudget struct {
	mu   sync.Mutex
	free int64
}

// take reserves n bytes, or reports false when fewer are free.
func (b *bodyBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.free {
		return false
	}
	b.free -= n
	return true
}

func (b *bodyBudget) give(n int64) {
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
}

// bodyShare is what r's body may hold in memory: its Content-Length, or
// MaxBodyBytes when it is larger or not known (a chunked body).
func bodyShare(r *http.Request) int64 {
	if r.ContentLength < 0 || r.ContentLength > MaxBodyBytes {
		return MaxBodyBytes
	}
	return r.ContentLength
}

// bounded answers 503 overloaded, with Retry-After and without reading
// the body, a request whose body's share is not free in the budget (nil:
// no bound); the client may send it again shortly.
func (a *api) bounded(next http.Handler) http.Handler {
	if a.budget == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := bodyShare(r)
		if r.Body == nil || r.Body == http.NoBody || n == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if !a.budget.take(n) {
			a.problem("body_budget")
			if a.budgetWarn.ok() {
				a.log.Warn("requests refused 503: the request bodies in memory are at their bound (http.max_body_bytes_in_flight); logged at most once a minute", "method", r.Method, "path", r.URL.Path, "bytes", n)
			}
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close") // its body is not read
			writeError(w, http.StatusServiceUnavailable, codeOverloaded, "the server holds as many request bodies as it may; try again")
			return
		}
		defer a.budget.give(n)
		next.ServeHTTP(w, r)
	})
}

// sometimes lets a log line through at most once a minute, so that a
// flood of refusals writes one line, not one each.
type sometimes struct{ last atomic.Int64 }

func (s *sometimes) ok() bool {
	now := time.Now().UnixNano()
	last := s.last.Load()
	return now-last >= int64(time.Minute) && s.last.CompareAndSwap(last, now)
}
