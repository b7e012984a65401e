// Package sqlite is herald's embedded default Store: one SQLite file in WAL
// mode.
//
// Every write goes through one writer goroutine, which applies the write
// requests as they arrive inside one open transaction and commits it once
// for all of them (group commit); a second goroutine fsyncs each commit
// while the writer goes on with the next batch, and answers the batch's
// callers only then. A write that returns nil is therefore durable. Reads
// use a separate pool of read-only connections, which WAL lets run beside
// the writer; they see every committed write, including one whose fsync is
// still under way.
package sqlite

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"github.com/heraldmq/herald"
)

//go:embed schema.sql
var schema string

var _ herald.Store = (*Store)(nil)

// errClosed is returned by writes to a closed Store.
var errClosed = errors.New("sqlite: store closed")

// Store is a herald.Store in one SQLite file. It is safe for concurrent use.
type Store struct {
	w    *writer
	read *sql.DB
	rs   *readStmts
	// kept names the kept routes (kept.go), as of the last SetAdmission,
	// for the reads of their lanes.
	kept atomic.Pointer[map[string]bool]
	// beats are the nodes' heartbeats and the orphans, which the writer
	// shares (heartbeat.go).
	beats *nodeBeats
	lock  *os.File // lockDatabase's

	mu     sync.RWMutex // guards closed against write submissions
	closed bool
}

// Open opens (creating it if needed) the database at dsn: a file path,
// optionally followed by "?synchronous=full" (the default: every commit is
// fsynced before its writes return) or "?synchronous=normal" (no fsync per
// commit: writes survive a crash of the process, but the last ones may be
// lost with the machine). The schema is created if missing.
func Open(dsn string) (*Store, error) {
	path, durable, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	lock, err := lockDatabase(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite open: %w", err)
	}
	w, err := openWriter(path, durable)
	if err != nil {
		unlock(lock)
		return nil, err
	}
	read, err := sql.Open("sqlite3", path+"?_busy_timeout=5000&_query_only=1&_stmt_cache_size=32")
	if err != nil {
		w.close()
		unlock(lock)
		return nil, fmt.Errorf("sqlite open: %w", err)
	}
	n := 2 * runtime.GOMAXPROCS(0)
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	rs, err := prepareRead(read)
	if err != nil {
		read.Close()
		w.close()
		unlock(lock)
		return nil, fmt.Errorf("sqlite open: %w", err)
	}
	return &Store{w: w, read: read, rs: rs, beats: w.tx.beats, lock: lock}, nil
}

// unlock releases the lock of lockDatabase.
func unlock(lock *os.File) error {
	if lock == nil {
		return nil
	}
	return lock.Close()
}

// parseDSN splits dsn into the file path and whether every commit must be
// fsynced (synchronous=full).
func parseDSN(dsn string) (path string, durable bool, err error) {
	path, query, _ := strings.Cut(dsn, "?")
	if path == "" {
		return "", false, fmt.Errorf("sqlite open %q: no file path", dsn)
	}
	opts, err := url.ParseQuery(query)
	if err != nil {
		return "", false, fmt.Errorf("sqlite open %q: %w", dsn, err)
	}
	durable = true
	for k, v := range opts {
		if k != "synchronous" {
			return "", false, fmt.Errorf("sqlite open %q: unknown option %q (want synchronous)", dsn, k)
		}
		switch strings.ToLower(v[len(v)-1]) {
		case "full":
			durable = true
		case "normal":
			durable = false
		default:
			return "", false, fmt.Errorf("sqlite open %q: synchronous must be full or normal", dsn)
		}
	}
	return path, durable, nil
}

// write runs fn in the writer's next transaction and returns its error once
// that transaction has committed (or failed). A request whose ctx ends
// before it runs is not applied; once it has run, write waits for the
// commit whatever ctx does, so that a nil error always means durable.
func (s *Store) write(ctx context.Context, fn func(tx *wtx) error) error {
	return s.submit(&request{ctx: ctx, run: fn, done: make(chan struct{})})
}

// submit hands r to the writer and returns its error once answered (see
// write).
func (s *Store) submit(r *request) error {
	ctx := r.ctx
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errClosed
	}
	select {
	case s.w.reqs <- r:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	s.mu.RUnlock()
	<-r.done
	return r.err
}

// wrap prefixes err with the operation's name, leaving herald's sentinel
// errors (and nil) as they are.
func wrap(op string, err error) error {
	if err == nil || errors.Is(err, herald.ErrNotFound) || errors.Is(err, herald.ErrConflict) {
		return err
	}
	if full(err) {
		return fmt.Errorf("sqlite %s: %w: %w", op, herald.ErrStoreFull, err)
	}
	return fmt.Errorf("sqlite %s: %w", op, err)
}

// Ping reports whether the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return wrap("ping", s.read.QueryRowContext(ctx, "SELECT 1").Scan(&one))
}

// Close waits for the writes already submitted to commit, then closes the
// database. Writes submitted after Close fail; closing twice is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	werr := s.w.close()
	rerr := s.rs.close()
	if err := s.read.Close(); rerr == nil {
		rerr = err
	}
	return wrap("close", errors.Join(werr, rerr, unlock(s.lock)))
}
