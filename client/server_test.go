package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/room"
	"github.com/heraldmq/herald/carrier/webhook"
	"github.com/heraldmq/herald/httpapi"
	"github.com/heraldmq/herald/notify"
	"github.com/heraldmq/herald/store/sqlite"
)

// The keys of the test server and their tenants.
const (
	keyAcme  = "key-acme"
	keyOther = "key-other"
	// keyReader is acme's read-only key, keyOps its admin key.
	keyReader = "key-reader"
	keyOps    = "key-ops"
)

// The routes of the test server. Each is a webhook to the same endpoint,
// which accepts a message at once (204) unless its target says otherwise:
// "refuse" is refused for good (400), "refuse-once" is refused the first
// time its message id is seen and accepted after.
const (
	routeHooks = "hooks" // no flow control
	routeHeld  = "held"  // one dispatch an hour per lane: the second message stays QUEUED
	routeDedup = "dedup" // content dedup for an hour
)

// server is a herald server in this process: a real engine with a real
// clock on a fresh SQLite store, its HTTP API on an httptest server, and
// the webhook endpoint its routes, and the rooms' push subscriptions,
// deliver to.
type server struct {
	URL      string // the API's base address
	api      *httptest.Server
	endpoint *httptest.Server
	engine   *herald.Engine
	store    *sqlite.Store
	dir      string
}

// startServer starts a server whose API handler is wrapped by wrap, when
// not nil (to put a fault in front of it).
func startServer(wrap func(http.Handler) http.Handler) (_ *server, err error) {
	s := &server{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.dir, err = os.MkdirTemp("", "herald-client-test-"); err != nil {
		return nil, err
	}
	if s.store, err = sqlite.Open(filepath.Join(s.dir, "herald.db")); err != nil {
		return nil, err
	}
	s.endpoint = httptest.NewServer(newEndpoint())
	policy, err := herald.ProfilePolicy(herald.ProfileChannel)
	if err != nil {
		return nil, err
	}
	held, dedup := policy, policy
	held.Admission = herald.Admission{Spacing: time.Hour}
	dedup.DedupTTL = time.Hour
	var routes []herald.Route
	for _, r := range []struct {
		name   string
		policy herald.Policy
	}{{routeHooks, policy}, {routeHeld, held}, {routeDedup, dedup}} {
		c, err := webhook.New(webhook.Config{URL: s.endpoint.URL})
		if err != nil {
			return nil, err
		}
		routes = append(routes, herald.Route{Name: r.name, Carrier: c, Policy: r.policy})
	}
	// The rooms' deliveries: a push subscription to the endpoint, on a
	// loopback address the egress policy is told to allow, is accepted
	// (its target, the subscription's id, is no refusal).
	rc, err := room.New(room.Config{Store: s.store, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		return nil, err
	}
	roomPolicy, err := herald.ProfilePolicy(herald.ProfileRoom)
	if err != nil {
		return nil, err
	}
	routes = append(routes, herald.Route{Name: herald.RoomRoutePrefix, Prefix: true, Carrier: rc, Policy: roomPolicy})
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	// An outcome subscriber that never answers: each of its events dies
	// at its one attempt.
	gone, err := notify.New("http://127.0.0.1:9/events", nil, nil, nil)
	if err != nil {
		return nil, err
	}
	s.engine, err = herald.New(herald.Config{
		Store: s.store, Routes: routes, Logger: logger,
		Subscribers:  []herald.Subscriber{{Name: "gone", Sink: gone, MaxAttempts: 1}},
		PollInterval: 10 * time.Millisecond, ReapInterval: 50 * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	if err := s.engine.Start(context.Background()); err != nil {
		s.engine = nil
		return nil, err
	}
	var h http.Handler = httpapi.New(httpapi.Config{
		Engine: s.engine, Logger: logger,
		Keys:  map[string]string{keyAcme: "acme", keyOther: "other", keyReader: "acme", keyOps: "acme"},
		Roles: map[string]httpapi.Role{keyReader: httpapi.RoleRead, keyOps: httpapi.RoleAdmin},
	})
	if wrap != nil {
		h = wrap(h)
	}
	s.api = httptest.NewServer(h)
	s.URL = s.api.URL
	return s, nil
}

// Close stops the server and removes its store.
func (s *server) Close() error {
	var errs []error
	if s.api != nil {
		s.api.Close()
	}
	if s.engine != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, s.engine.Stop(ctx))
		cancel()
	}
	if s.endpoint != nil {
		s.endpoint.Close()
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	return errors.Join(errs...)
}

// newEndpoint returns the webhook endpoint of the test routes.
func newEndpoint() http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id := r.Header.Get("X-Herald-Message-Id")
		switch r.Header.Get("X-Herald-Target") {
		case "refuse":
			http.Error(w, "refused", http.StatusBadRequest)
			return
		case "refuse-once":
			mu.Lock()
			first := !seen[id]
			seen[id] = true
			mu.Unlock()
			if first {
				http.Error(w, fmt.Sprintf("refused %s once", id), http.StatusBadRequest)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
