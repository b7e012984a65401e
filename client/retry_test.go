package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald/client"
)

// fault sits in front of the API: it counts the requests to the paths
// under prefix (/v1/messages when empty) and answers the next fails of them itself, 503 store_unavailable
// with the Retry-After header retryAfter (none when empty), as the API
// does when its store does not answer. plain answers a proxy's text 503
// instead.
type fault struct {
	prefix     string
	mu         sync.Mutex
	fails      int
	retryAfter string
	plain      bool
	tries      int
	failed     chan struct{} // told of every answer the fault gives, when not nil
}

func (f *fault) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prefix := f.prefix
		if prefix == "" {
			prefix = "/v1/messages"
		}
		if !strings.HasPrefix(r.URL.Path, prefix) {
			next.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.tries++
		fail := f.fails != 0
		if f.fails > 0 {
			f.fails--
		}
		f.mu.Unlock()
		if !fail {
			next.ServeHTTP(w, r)
			return
		}
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		if f.plain {
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"store_unavailable","message":"the store is unavailable; try again"}}`))
		}
		if f.failed != nil {
			f.failed <- struct{}{}
		}
	})
}

// set arms f to answer the next fails requests (-1: all) and resets its count.
func (f *fault) set(fails int, retryAfter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails, f.retryAfter, f.tries = fails, retryAfter, 0
}

func (f *fault) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries
}

func TestRetriesAStoreUnavailable(t *testing.T) {
	f := &fault{}
	s := newServer(t, f.wrap)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)

	// A send with an idempotency key is retried and gets through.
	f.set(2, "0")
	res, err := c.Send(ctx, client.SendRequest{Route: routeHooks, Text: "x", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatalf("send after two 503s: %v", err)
	}
	if !res.Created || f.count() != 3 {
		t.Errorf("created %v after %d tries, want created after 3", res.Created, f.count())
	}

	// So is a read.
	f.set(2, "0")
	m, err := c.Get(ctx, res.Message.ID)
	if err != nil || m.ID != res.Message.ID {
		t.Fatalf("get after two 503s: %+v, %v", m, err)
	}
	if f.count() != 3 {
		t.Errorf("the server saw %d tries, want 3", f.count())
	}

	// And a list, with no Retry-After: the client's own backoff.
	f.set(1, "")
	if _, err := c.List(ctx, client.ListFilter{}); err != nil || f.count() != 2 {
		t.Errorf("list after a 503 without Retry-After: %v after %d tries, want success after 2", err, f.count())
	}

	// A send without an idempotency key is not: it might have been stored.
	f.set(2, "0")
	_, err = c.Send(ctx, client.SendRequest{Route: routeHooks, Text: "y"})
	wantAPIError(t, err, http.StatusServiceUnavailable, client.CodeStoreUnavailable)
	if !client.IsUnavailable(err) || f.count() != 1 {
		t.Errorf("send without a key: IsUnavailable %v after %d tries, want true after 1", client.IsUnavailable(err), f.count())
	}
}

func TestRetriesAreBounded(t *testing.T) {
	f := &fault{}
	s := newServer(t, f.wrap)
	c := newClient(t, s.URL, keyAcme, func(cfg *client.Config) { cfg.MaxRetries = 2 })
	ctx := testCtx(t)

	f.set(-1, "0")
	_, err := c.Get(ctx, "any")
	e := wantAPIError(t, err, http.StatusServiceUnavailable, client.CodeStoreUnavailable)
	if f.count() != 3 || e.RetryAfter != 0 {
		t.Errorf("%d tries, RetryAfter %v; want 3 (2 retries), 0", f.count(), e.RetryAfter)
	}

	// Retries off.
	off := newClient(t, s.URL, keyAcme, func(cfg *client.Config) { cfg.MaxRetries = -1 })
	f.set(-1, "0")
	_, err = off.Get(ctx, "any")
	wantAPIError(t, err, http.StatusServiceUnavailable, client.CodeStoreUnavailable)
	if f.count() != 1 {
		t.Errorf("MaxRetries -1: %d tries, want 1", f.count())
	}

	// A Retry-After over MaxRetryAfter ends the retries.
	f.set(-1, "60")
	_, err = c.Get(ctx, "any")
	e = wantAPIError(t, err, http.StatusServiceUnavailable, client.CodeStoreUnavailable)
	if f.count() != 1 || e.RetryAfter != time.Minute {
		t.Errorf("Retry-After 60: %d tries, RetryAfter %v; want 1, 1m", f.count(), e.RetryAfter)
	}

	// A 503 that is not the API's store_unavailable (a proxy's page) is not retried.
	f.plain = true
	f.set(-1, "0")
	_, err = c.Get(ctx, "any")
	e = asAPIError(t, err)
	if e.Status != http.StatusServiceUnavailable || e.Code != "" || e.Message == "" || f.count() != 1 {
		t.Errorf("a plain 503: %+v after %d tries, want no code and 1 try", e, f.count())
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	f := &fault{}
	s := newServer(t, f.wrap)
	c := newClient(t, s.URL, keyAcme)
	m := send(t, c, client.SendRequest{Route: routeHooks, Text: "x"})

	f.set(1, "1")
	start := time.Now()
	if _, err := c.Get(testCtx(t), m.ID); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 900*time.Millisecond || f.count() != 2 {
		t.Errorf("retried after %v and %d tries, want after Retry-After's 1s and 2 tries", d, f.count())
	}
}

func TestCancelledContextStopsTheRetries(t *testing.T) {
	f := &fault{failed: make(chan struct{}, 10)}
	s := newServer(t, f.wrap)
	c := newClient(t, s.URL, keyAcme)

	f.set(-1, "5") // every answer asks for 5s
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-f.failed // the first answer is out: cancel while the client waits 5s
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err := c.Get(ctx, "any")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Get = %v, want context.Canceled", err)
	}
	if client.ErrorCode(err) != client.CodeStoreUnavailable {
		t.Errorf("the error %v does not carry the last answer's code", err)
	}
	if d := time.Since(start); d > 2*time.Second || f.count() != 1 {
		t.Errorf("stopped after %v and %d tries, want at once after 1", d, f.count())
	}

	// A context cancelled before the call sends nothing.
	f.set(-1, "0")
	_, err = c.Get(ctx, "any")
	if !errors.Is(err, context.Canceled) || f.count() != 0 {
		t.Errorf("Get with a cancelled context = %v after %d tries, want context.Canceled and none", err, f.count())
	}
	// The same for WaitFor.
	if _, err := c.WaitFor(ctx, "any", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor with a cancelled context = %v", err)
	}
}

// asAPIError returns the *client.Error in err, or fails t.
func asAPIError(t *testing.T, err error) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *client.Error", err, err)
	}
	return e
}
