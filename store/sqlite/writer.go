package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/heraldmq/herald"
)

// writer owns the only read-write connection to the database. Its goroutine
// applies write requests as they arrive inside one open transaction and
// commits it as a whole (group commit, see loop).
//
// SQLite commits without syncing (synchronous=NORMAL). When the store is
// durable, a second goroutine, the syncer, fsyncs the WAL file after each
// commit and only then answers the batch's requests, while the writer
// already applies the next batch: this is SQLite's synchronous=FULL with
// the fsync taken off the writer's path. Once the WAL file is synced, a
// commit is durable: SQLite syncs the WAL again before every checkpoint
// copies it into the database file, and the database file after.
type writer struct {
	db   *sql.DB
	conn *sql.Conn
	tx   *wtx
	wal  *os.File // the WAL file to fsync; nil when not durable

	reqs    chan *request   // write requests, closed by close
	permits chan struct{}   // one token per batch that may be committed and not yet synced
	sync    chan []*request // committed batches, for the syncer
	done    chan struct{}   // closed when both goroutines have returned
}

// wtx is what a request runs with: the writer's connection, inside the
// open transaction, and its prepared statements. Only the writer's
// goroutine uses it.
type wtx struct {
	conn  *sql.Conn
	st    *writeStmts
	lease int64 // the last lease handed out
	// rules are the gated routes' admission (SetAdmission), gatedJSON
	// their names as a JSON array, and orderedJSON the ordered ones' ("[]"
	// before SetAdmission).
	rules                  map[string]herald.Admission
	gatedJSON, orderedJSON string
	// keptJSON names the kept routes (kept.go) as a JSON array, whose
	// lanes' flights kept holds.
	keptJSON string
	kept     *keptLanes
	// beats are the nodes' heartbeats, which Store.Heartbeat writes
	// outside the writer's goroutine (they guard themselves).
	beats *nodeBeats
}

// openWriter opens the read-write connection to the database at path,
// creates the schema and starts the writer's goroutines.
func openWriter(path string, durable bool) (*writer, error) {
	ctx := context.Background()
	// synchronous=NORMAL: the syncer does the commits' fsync. A 4 MiB page
	// cache holds the index pages that writes touch (the active rows' partial
	// indexes are small); a larger one made every COMMIT slower (SQLite walks
	// the cache at commit) and cost 25 MB of RSS for no gain in W2 or W3.
	db, err := sql.Open("sqlite3", path+"?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000&_foreign_keys=0&_cache_size=-4000")
	if err != nil {
		return nil, fmt.Errorf("sqlite open: %w", err)
	}
	db.SetMaxOpenConns(1)
	w := &writer{
		db:      db,
		reqs:    make(chan *request, maxBatch),
		permits: make(chan struct{}, pipelineDepth),
		sync:    make(chan []*request, pipelineDepth),
		done:    make(chan struct{}),
	}
	if err := w.init(ctx, path, durable); err != nil {
		w.closeConn()
		return nil, fmt.Errorf("sqlite open: %w", err)
	}
	for range pipelineDepth {
		w.permits <- struct{}{}
	}
	go w.loop()
	go w.syncer()
	return w, nil
}

// init opens the connection, creates the schema, prepares the statements
// and, when durable, opens the WAL file.
func (w *writer) init(ctx context.Context, path string, durable bool) error {
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return err
	}
	w.conn = conn
	if err := migrate(ctx, conn); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, schema); err != nil {
		return err
	}
	if err := migrateTraceParent(ctx, conn); err != nil {
		return err
	}
	if err := migrateResult(ctx, conn); err != nil {
		return err
	}
	if err := migrateSubscriptionSecret(ctx, conn); err != nil {
		return err
	}
	st, err := prepareWrite(ctx, conn)
	if err != nil {
		return err
	}
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return err
	}
	// A random start keeps leases distinct across processes and restarts.
	w.tx = &wtx{conn: conn, st: st, lease: int64(binary.BigEndian.Uint64(seed[:]) >> 2), gatedJSON: "[]", orderedJSON: "[]", keptJSON: "[]", kept: newKeptLanes(), beats: &nodeBeats{}}
	if !durable {
		return nil
	}
	// The connection has opened (created) the WAL file; its directory entry
	// must be durable too.
	if w.wal, err = os.OpenFile(path+"-wal", os.O_RDWR, 0); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// migrate brings a database written by an earlier version to the schema's
// shape where schema.sql's CREATE ... IF NOT EXISTS cannot (which makes
// the tables and triggers new to it: last_sent starts empty, so that the
// first message after the upgrade to a target is not deduplicated): the
// dedup index of the versions that deduplicated against any message
// delivered lately, gone; the gated,
// dedup_key, backoff and ordered columns of messages, the data column of
// events, the owner and circuit_at columns of lanes, the lanes' triggers
// and in-flight index, the target index that now holds the ordered routes'
// messages only, and the ready index that now holds ungated messages only.
func migrate(ctx context.Context, conn *sql.Conn) error {
	var tables, gated, dedup, backoff, data, laneCols, owner, circuitAt, ordered, oldTarget int
	err := conn.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'messages'),
			(SELECT COUNT(*) FROM pragma_table_info('messages') WHERE name = 'gated'),
			(SELECT COUNT(*) FROM pragma_table_info('messages') WHERE name = 'dedup_key'),
			(SELECT COUNT(*) FROM pragma_table_info('messages') WHERE name = 'backoff'),
			(SELECT COUNT(*) FROM pragma_table_info('events') WHERE name = 'data'),
			(SELECT COUNT(*) FROM pragma_table_info('lanes')),
			(SELECT COUNT(*) FROM pragma_table_info('lanes') WHERE name = 'owner'),
			(SELECT COUNT(*) FROM pragma_table_info('lanes') WHERE name = 'circuit_at'),
			(SELECT COUNT(*) FROM pragma_table_info('messages') WHERE name = 'ordered'),
			(SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'messages_target' AND sql NOT LIKE '%ordered = 1%')`).Scan(
		&tables, &gated, &dedup, &backoff, &data, &laneCols, &owner, &circuitAt, &ordered, &oldTarget)
	if err != nil || tables == 0 {
		return err
	}
	// The versions before kept a lane's slots in a trigger, lanes_update
	// (before that, with its first message too), and its messages in flight
	// in an index: the statements that change a status keep the slots now
	// (laneFlights), and the in-flight index serves the lanes' reads.
	// (A build of 2026-11-25 named the trigger lanes_flight.)
	if _, err := conn.ExecContext(ctx, `DROP TRIGGER IF EXISTS lanes_update;
			DROP TRIGGER IF EXISTS lanes_flight;
			DROP INDEX IF EXISTS messages_lane_inflight;
			DROP INDEX IF EXISTS messages_dedup;`); err != nil {
		return err
	}
	// messages_target held every gated message; it holds those of ordered
	// routes only now, which their column says (SetAdmission sets it).
	if ordered == 0 {
		if _, err := conn.ExecContext(ctx, `ALTER TABLE messages ADD COLUMN ordered INTEGER NOT NULL DEFAULT 0`); err != nil {
			return err
		}
	}
	if oldTarget > 0 {
		if _, err := conn.ExecContext(ctx, `DROP INDEX messages_target`); err != nil {
			return err
		}
	}
	if laneCols > 0 && owner == 0 {
		if _, err := conn.ExecContext(ctx, `ALTER TABLE lanes ADD COLUMN owner TEXT NOT NULL DEFAULT ''`); err != nil {
			return err
		}
	}
	// The rows of a version before hold no time of their circuit's last
	// failure: the migration's, so that their state stays for the
	// retention from now.
	if laneCols > 0 && circuitAt == 0 {
		if _, err := conn.ExecContext(ctx, `ALTER TABLE lanes ADD COLUMN circuit_at INTEGER NOT NULL DEFAULT 0;
				UPDATE lanes SET circuit_at = ? WHERE failures > 0 OR circuit != ''`, time.Now().UnixMilli()); err != nil {
			return err
		}
	}
	if backoff == 0 {
		if _, err := conn.ExecContext(ctx, `ALTER TABLE messages ADD COLUMN backoff TEXT NOT NULL DEFAULT ''`); err != nil {
			return err
		}
	}
	if gated == 0 {
		if _, err := conn.ExecContext(ctx, `ALTER TABLE messages ADD COLUMN gated INTEGER NOT NULL DEFAULT 0;
			DROP INDEX IF EXISTS messages_ready;`); err != nil {
			return err
		}
	}
	if dedup == 0 {
		if _, err := conn.ExecContext(ctx, `ALTER TABLE messages ADD COLUMN dedup_key TEXT NOT NULL DEFAULT ''`); err != nil {
			return err
		}
	}
	if data == 0 {
		_, err = conn.ExecContext(ctx, `ALTER TABLE events ADD COLUMN data BLOB`)
	}
	return err
}

// syncDir fsyncs the directory dir.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// close drains the requests already submitted, stops the goroutines and
// closes the connection. Nothing may submit after it starts.
func (w *writer) close() error {
	close(w.reqs)
	<-w.done
	return w.closeConn()
}

// closeConn closes what init opened.
func (w *writer) closeConn() error {
	var errs []error
	if w.tx != nil {
		errs = append(errs, w.tx.st.close())
	}
	if w.wal != nil {
		errs = append(errs, w.wal.Close())
	}
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
	}
	return errors.Join(append(errs, w.db.Close())...)
}

// nextLease returns a fresh, non-zero fencing token.
func (tx *wtx) nextLease() int64 {
	tx.lease++
	if tx.lease <= 0 {
		tx.lease = 1
	}
	return tx.lease
}
