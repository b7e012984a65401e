package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/store/storetest"
)

// open returns a Store on a new file in tb's temporary directory.
func open(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(filepath.Join(tb.TempDir(), "herald.db"))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestSQLite(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T) herald.Store { return open(t) })
}

// TestSQLiteNormal runs the suite without the per-commit fsync.
func TestSQLiteNormal(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T) herald.Store {
		s, err := Open(filepath.Join(t.TempDir(), "herald.db") + "?synchronous=normal")
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestOpenDSN(t *testing.T) {
	dir := t.TempDir()
	for _, dsn := range []string{"", "?synchronous=full", filepath.Join(dir, "a.db") + "?synchronous=off", filepath.Join(dir, "b.db") + "?cache=shared"} {
		if s, err := Open(dsn); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", dsn)
		}
	}
	for _, dsn := range []string{filepath.Join(dir, "c.db"), filepath.Join(dir, "d.db") + "?synchronous=FULL", filepath.Join(dir, "e.db") + "?synchronous=normal"} {
		s, err := Open(dsn)
		if err != nil {
			t.Errorf("Open(%q): %v", dsn, err)
			continue
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

func BenchmarkSQLite(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) herald.Store { return open(b) })
}

// testMessage returns a message ready for Create.
func testMessage(id string) *herald.Message {
	now := time.Now()
	return &herald.Message{ID: id, Tenant: "t", Route: "r", Target: "x", Text: "hi", MaxAttempts: 3, CreatedAt: now, UpdatedAt: now, DueAt: now}
}

// TestCreateIsDurable reads a created message from a second Store on the
// same file.
func TestCreateIsDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	first, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	ctx := context.Background()
	if _, _, err := first.Create(ctx, testMessage("m1"), herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Another connection sees it (one Store at a time writes a database).
	other, err := sql.Open("sqlite3", path+"?_query_only=1")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var text string
	if err := other.QueryRowContext(ctx, `SELECT text FROM messages WHERE id = 'm1'`).Scan(&text); err != nil || text != "hi" {
		t.Fatalf("another connection: text = %q, %v; want the message's", text, err)
	}
}

// TestCloseDrainsWrites closes the store under a stream of Creates: every
// Create that succeeded must be found after reopening.
func TestCloseDrainsWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created []string
	)
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("m-%d-%d", g, i)
				if _, _, err := s.Create(ctx, testMessage(id), herald.CreateOptions{}); err != nil {
					if !errors.Is(err, errClosed) {
						t.Errorf("Create: %v", err)
					}
					return
				}
				mu.Lock()
				created = append(created, id)
				mu.Unlock()
			}
		})
	}
	// Close once some Creates succeeded (and others are under way), however
	// slow the disk.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(created)
		mu.Unlock()
		if n >= 8 {
			break
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range created {
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("created %s before Close, then Get: %v", id, err)
		}
	}
	if len(created) == 0 {
		t.Fatal("no Create succeeded before Close")
	}
}

// TestFailedRequestSparesBatch sends Creates that fail (duplicate ids)
// among good ones: the failures must not undo or fail the others that
// shared their transaction.
func TestFailedRequestSparesBatch(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	if _, _, err := s.Create(ctx, testMessage("dup"), herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		errs = make([]error, 200)
	)
	for i := range errs {
		wg.Go(func() {
			id := fmt.Sprintf("m-%03d", i)
			if i%10 == 0 {
				id = "dup"
			}
			_, _, errs[i] = s.Create(ctx, testMessage(id), herald.CreateOptions{})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (i%10 == 0) != (err != nil) {
			t.Errorf("Create %d: err %v", i, err)
		}
		if i%10 != 0 {
			if _, err := s.Get(ctx, fmt.Sprintf("m-%03d", i)); err != nil {
				t.Errorf("Get m-%03d: %v", i, err)
			}
		}
	}
	if m, err := s.Get(ctx, "dup"); err != nil || len(m.Timeline) != 1 {
		t.Errorf("Get dup = %v, %v; want the first message, unchanged", m, err)
	}
}

// BenchmarkSyncData measures the disk's fsync (syncData of one 4 KiB page
// rewritten in place, as a WAL frame is), which bounds what a producer that
// waits for durability can do: W1 is at most one send per sync, and W2's 16
// producers at most 16 per sync, however the commits are grouped.
func BenchmarkSyncData(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "sync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	const pages = 256
	for i := range pages {
		if _, err := f.WriteAt(page, int64(i)*4096); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := f.WriteAt(page, int64(i%pages)*4096); err != nil {
			b.Fatal(err)
		}
		if err := syncData(f); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(16/b.Elapsed().Seconds()*float64(b.N), "W2-bound-sends/s")
}

// TestPruneForgetsIdleLanes: Prune deletes the row of a lane with no
// message and nothing of its state after the cut, and the tenants'
// buckets last drawn from before it; a lane with a message, or whose
// spacing still holds it, stays. A lane's row made again by a new message
// admits as the old one would have.
func TestPruneForgetsIdleLanes(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	t0 := time.UnixMilli(1_700_000_000_000)
	rules := map[string]herald.Admission{"g": {Spacing: time.Hour, TenantRate: herald.Rate{N: 10, Per: time.Minute}}}
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	create := func(lane string, at time.Time) *herald.Message {
		t.Helper()
		m := &herald.Message{ID: fmt.Sprintf("m-%s-%d", lane, at.UnixMilli()), Tenant: "acme", Route: "g", Lane: lane, Text: "x",
			MaxAttempts: 3, CreatedAt: at, UpdatedAt: at, DueAt: at}
		if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	done := create("idle", t0)
	create("busy", t0)
	msgs, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 10, GatedLimit: 10, DefaultAccept: time.Second})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("claim = %d, %v; want both", len(msgs), err)
	}
	for _, m := range msgs {
		if m.ID == done.ID {
			if err := s.Transition(ctx, herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0}); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(table string) int {
		var n int
		if err := s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := s.Prune(ctx, t0.Add(30*time.Minute), 100); err != nil {
		t.Fatal(err)
	}
	if got := count("lanes"); got != 2 {
		t.Fatalf("%d lanes after a prune within the spacing, want 2", got)
	}
	if _, err := s.Prune(ctx, t0.Add(2*time.Hour), 100); err != nil {
		t.Fatal(err)
	}
	if got, buckets := count("lanes"), count("tenant_buckets"); got != 1 || buckets != 0 {
		t.Fatalf("%d lanes and %d tenant buckets after the prune, want 1 (busy, in flight) and 0", got, buckets)
	}
	create("idle", t0.Add(3*time.Hour))
	msgs, err = s.Claim(ctx, herald.Claim{Now: t0.Add(3 * time.Hour), Limit: 10, GatedLimit: 10, DefaultAccept: time.Second})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("claim on the forgotten lane = %d, %v; want its new message", len(msgs), err)
	}
}

// TestPruneKeepsCircuitForRetention: an idle lane whose circuit counts
// failures keeps its row while its last failure is after the prune's cut,
// and loses it once the failure is before the cut.
func TestPruneKeepsCircuitForRetention(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	t0 := time.UnixMilli(1_700_000_000_000)
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"g": {Circuit: herald.Circuit{Failures: 3, CoolDown: time.Minute}}}); err != nil {
		t.Fatal(err)
	}
	m := &herald.Message{ID: "m1", Tenant: "acme", Route: "g", Lane: "flaky", Text: "x", MaxAttempts: 3, CreatedAt: t0, UpdatedAt: t0, DueAt: t0}
	if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 1, GatedLimit: 1, DefaultAccept: time.Second}); err != nil || len(got) != 1 {
		t.Fatalf("claim = %d, %v; want the message", len(got), err)
	}
	if err := s.Transition(ctx, herald.Transition{ID: "m1", From: herald.StatusSentToNS, To: herald.StatusDeliveryFailed, At: t0}); err != nil {
		t.Fatal(err)
	}
	failedAt := t0.Add(10 * time.Minute)
	if ch, err := s.ReportCircuit(ctx, herald.CircuitReport{Route: "g", Lane: "flaky", Failed: true, At: failedAt}); err != nil || ch.Failures != 1 {
		t.Fatalf("ReportCircuit = %+v, %v; want 1 failure counted", ch, err)
	}
	failures := func() int {
		t.Helper()
		var n int
		err := s.read.QueryRowContext(ctx, `SELECT failures FROM lanes WHERE route = 'g' AND lane = 'flaky'`).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return -1
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := s.Prune(ctx, failedAt.Add(-time.Minute), 100); err != nil {
		t.Fatal(err)
	}
	if got := failures(); got != 1 {
		t.Fatalf("failures after a prune with its cut before the failure = %d, want 1 (the row kept)", got)
	}
	if _, err := s.Prune(ctx, failedAt.Add(time.Minute), 100); err != nil {
		t.Fatal(err)
	}
	if got := failures(); got != -1 {
		t.Fatalf("failures after a prune with its cut after the failure = %d, want the row gone", got)
	}
}

// TestGroupedTransitionsKeepLaneSlots: one statement of transitions that
// ends some flights of two lanes, moves one between stages in flight and
// one to TO_RETRY leaves each lane's in-flight count equal to its
// messages in flight, and lets a held lane admit again.
func TestGroupedTransitionsKeepLaneSlots(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	t0 := time.UnixMilli(1_700_000_000_000)
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"g": {Concurrency: 3}}); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		lane := []string{"A", "B"}[i%2]
		m := &herald.Message{ID: fmt.Sprintf("m%d", i), Tenant: "acme", Route: "g", Lane: lane, Text: "x", MaxAttempts: 3, CreatedAt: t0, UpdatedAt: t0, DueAt: t0}
		if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 10, GatedLimit: 10, DefaultAccept: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// m0, m2, m4 of A and m1, m3, m5 of B are in flight: both lanes full.
	ts := []*herald.Transition{
		{ID: "m0", From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0},
		{ID: "m2", From: herald.StatusSentToNS, To: herald.StatusDeliveredToNS, At: t0},
		{ID: "m1", From: herald.StatusSentToNS, To: herald.StatusDeliveryFailed, At: t0},
		{ID: "m3", From: herald.StatusSentToNS, To: herald.StatusToRetry, At: t0, DueAt: t0.Add(time.Hour)},
		{ID: "m6", From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0}, // not in flight: a conflict
	}
	var outcomes []error
	err := s.write(ctx, func(tx *wtx) error {
		var err error
		outcomes, err = tx.transitions(ts)
		return err
	})
	if err != nil || outcomes[4] == nil {
		t.Fatalf("transitions = %v, %v; want the last a conflict", outcomes, err)
	}
	counts := func() string {
		t.Helper()
		var a, b, wantA, wantB int
		err := s.read.QueryRowContext(ctx, `SELECT
				(SELECT inflight FROM lanes WHERE route = 'g' AND lane = 'A'), (SELECT inflight FROM lanes WHERE route = 'g' AND lane = 'B'),
				(SELECT COUNT(*) FROM messages WHERE lane = 'A' AND `+inFlightSQL+`), (SELECT COUNT(*) FROM messages WHERE lane = 'B' AND `+inFlightSQL+`)`).
			Scan(&a, &b, &wantA, &wantB)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("A %d of %d, B %d of %d", a, wantA, b, wantB)
	}
	if got := counts(); got != "A 2 of 2, B 1 of 1" {
		t.Fatalf("lanes' counts after the grouped transitions: %s, want A 2 of 2, B 1 of 1", got)
	}
	got, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 10, GatedLimit: 10, DefaultAccept: time.Minute})
	if err != nil || len(got) != 2 {
		t.Fatalf("claim after = %d, %v; want A's m6 and B's m7, a slot each", len(got), err)
	}
}
