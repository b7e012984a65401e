// Package redis is a herald.Store on Redis 7 or later, for many herald
// nodes that share one queue. Any node may run every loop: each state
// change is one call of a Lua function (see scripts.go), run atomically by
// Redis, that compares the message's status (and, for a claimed message,
// its lease: a fencing token that every claim draws afresh from a counter)
// before it changes anything.
//
// # Layout
//
// A message is one hash. The fields that transitions change are packed in
// one field, and so are those they only read, so that a transition reads
// and writes a few fields, not twenty; its timeline (the latest 99 entries
// after the creation entry) is a field too. Sorted sets index what the
// loops look for: ready (QUEUED and due, scored -priority so that equal
// scores fall back to id order: highest priority first, then first in,
// first out), delayed (QUEUED, due later), retry, inflight (by deadline),
// poll, expiry, done (terminal, by update time, for Prune) and failed (the
// dead letters). List walks the ids of a tenant or of a correlation id;
// Counts reads one sorted set per tenant, route and waiting status, by
// creation time (the queue's age), and a hash of counts for the other
// statuses. Hashes and sets map idempotency keys, coalesce keys and external
// ids to messages, and sorted sets dedup keys to the messages delivered;
// the outbox is a hash per event and a sorted set of due events, and so is
// the inbox of the events push carriers send back, with a set of the
// events of each route and correlation. The messages of a gated route wait
// in their lanes instead of in ready, and claims take them through the
// lanes that admit them (see lanes.go). lua/lib.lua lists every key.
//
// Concurrent Creates, concurrent Transitions and concurrent Publishes run
// in batches: one script call applies a batch in order, so that Redis pays
// once for what a call costs (see batcher).
//
// # Redis Cluster
//
// Every key starts with "{prefix}:", so all of them hash to one slot: the
// scripts, which touch keys they find as they run, never span two slots and
// never meet a CROSSSLOT error. The price is that one store lives on one
// shard of a cluster, however many there are; stores with distinct
// prefixes spread over the shards. Open with ?cluster=true to use the
// cluster protocol.
//
// # Durability
//
// A change is as durable as the server makes it: run Redis with
// appendonly yes (and appendfsync always to survive a power cut, not just a
// crash of Redis) when no acknowledged message may be lost.
package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
)

var _ herald.Store = (*Store)(nil)

// Connection defaults, unless the URL sets them: an outage fails a call in
// seconds instead of hanging it, and the pool serves a busy engine.
const (
	defaultDialTimeout  = 2 * time.Second
	defaultReadTimeout  = 3 * time.Second
	defaultWriteTimeout = 3 * time.Second
	defaultPoolSize     = 64
)

// Store is a herald.Store on Redis. It is safe for concurrent use, by many
// processes at once.
type Store struct {
	client goredis.UniversalClient
	keys   []string // every script's KEYS: the key prefix
	// laneClock is the clock of the lanes' limits, "server" or "caller"
	// (the lane_clock option).
	laneClock string
	// unheld is when, in unix ms, a claim last looked at the held
	// messages (Store.unholdNow).
	unheld atomic.Int64

	creates, transitions, publishes *batcher
	workers                         sync.WaitGroup // the batchers'
	quit                            chan struct{}  // closed by Close
	closeOnce                       sync.Once
}

// Open connects to the Redis at rawURL, redis://[user:pass@]host:port/db or
// rediss://... for TLS, with go-redis's query options (dial_timeout,
// pool_size, ...) and two of the store's own:
//
//   - prefix: the name that every key starts with, in braces ("{prefix}:").
//     Defaults to "herald".
//   - cluster: true to speak the Redis Cluster protocol, following the
//     slot's moves among the nodes.
//   - lane_clock: server (the default) to keep the lanes' limits (spacing,
//     buckets, pauses) in the Redis server's time, read inside each call,
//     so that nodes whose clocks disagree still share them; caller to keep
//     them in the times the callers give (Claim.Now, Transition.At), as
//     tests on a fake clock need. Every node of a store should say the
//     same: the last to start decides.
//
// Dial, read and write timeouts default to 2s, 3s and 3s, the pool to 64
// connections, and failed commands are not retried (max_retries=-1): the
// engine retries, and a write retried blindly could apply twice.
func Open(rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("redis open: the store URL does not parse") // the error would show the password
	}
	q := u.Query()
	prefix := q.Get("prefix")
	if prefix == "" {
		prefix = "herald"
	}
	if strings.ContainsAny(prefix, "{}") {
		return nil, fmt.Errorf("redis open %s: the prefix must not hold braces", u.Redacted())
	}
	cluster := false
	if v := q.Get("cluster"); v != "" {
		if cluster, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("redis open %s: cluster=%q is not a boolean", u.Redacted(), v)
		}
	}
	laneClock := q.Get("lane_clock")
	switch laneClock {
	case "":
		laneClock = "server"
	case "server", "caller":
	default:
		return nil, fmt.Errorf("redis open %s: lane_clock=%q: want server or caller", u.Redacted(), laneClock)
	}
	q.Del("prefix")
	q.Del("cluster")
	q.Del("lane_clock")
	u.RawQuery = q.Encode()

	var client goredis.UniversalClient
	if cluster {
		opt, err := goredis.ParseClusterURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("redis open %s: %w", u.Redacted(), err)
		}
		setDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolSize, &opt.MaxRetries, &opt.DialerRetries)
		client = goredis.NewClusterClient(opt)
	} else {
		opt, err := goredis.ParseURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("redis open %s: %w", u.Redacted(), err)
		}
		setDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolSize, &opt.MaxRetries, &opt.DialerRetries)
		client = goredis.NewClient(opt)
	}
	s := &Store{client: client, keys: []string{"{" + prefix + "}:"}, quit: make(chan struct{}), laneClock: laneClock}
	s.unheld.Store(time.Now().UnixMilli())
	s.creates = newBatcher(s, createScript, 3, 64)
	s.transitions = newBatcher(s, transitionScript, 4, 64)
	s.publishes = newBatcher(s, publishScript, 2, 16)
	return s, nil
}

// setDefaults fills the connection options that the URL left unset.
func setDefaults(dial, read, write *time.Duration, poolSize, maxRetries, dialerRetries *int) {
	orDefault(dial, defaultDialTimeout)
	orDefault(read, defaultReadTimeout)
	orDefault(write, defaultWriteTimeout)
	orDefault(poolSize, defaultPoolSize)
	orDefault(maxRetries, -1)
	orDefault(dialerRetries, 1)
}

func orDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Ping reports whether the server answers.
func (s *Store) Ping(ctx context.Context) error {
	return wrap(ctx, "ping", s.client.Ping(ctx).Err())
}

// Close closes the store's connections; calls under way may fail. Closing
// twice is a no-op.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.quit)
		s.workers.Wait()
		err = wrap(context.Background(), "close", s.client.Close())
	})
	return err
}

// wrap prefixes err with the operation's name and marks the errors that
// mean the server cannot be reached, or cannot serve for now, with
// herald.ErrStoreUnavailable. It leaves herald's sentinels and nil as they
// are.
func wrap(ctx context.Context, op string, err error) error {
	switch {
	case err == nil, errors.Is(err, herald.ErrNotFound), errors.Is(err, herald.ErrConflict):
		return err
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("redis %s: %w", op, err)
	case outOfMemory(err):
		return fmt.Errorf("redis %s: %w: %w", op, herald.ErrStoreFull, err)
	case unavailable(err):
		return fmt.Errorf("redis %s: %w: %w", op, herald.ErrStoreUnavailable, err)
	default:
		return fmt.Errorf("redis %s: %w", op, err)
	}
}

// transient are the prefixes of the server's error replies that mean "not
// now": loading its data, a replica, out of memory or disk, a busy script, a
// cluster without its slot.
var transient = []string{"LOADING", "READONLY", "MASTERDOWN", "MISCONF", "OOM", "BUSY", "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS"}

// unavailable reports whether err means that the server could not serve the
// command: a refused, broken or timed-out connection, a closed or exhausted
// pool, or a transient reply.
func unavailable(err error) bool {
	var netErr net.Error
	switch {
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, goredis.ErrClosed),
		errors.Is(err, goredis.ErrPoolTimeout), errors.Is(err, goredis.ErrPoolExhausted):
		return true
	}
	var reply goredis.Error
	if !errors.As(err, &reply) {
		return false
	}
	for _, p := range transient {
		if strings.HasPrefix(reply.Error(), p) {
			return true
		}
	}
	return false
}

// outOfMemory reports whether err is the server's OOM reply: it refuses
// writes at its maxmemory (herald.ErrStoreFull).
func outOfMemory(err error) bool {
	var reply goredis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "OOM")
}
