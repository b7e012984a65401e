package sqlite

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// TestMigrateTraceParent opens a database written before trace_parent
// (the column dropped again) and finds it added, its old rows read with
// no traceparent and a new message's kept.
func TestMigrateTraceParent(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "herald.db")
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	msg := func(id string) *herald.Message {
		return &herald.Message{ID: id, Tenant: "acme", Route: "r1", Lane: "r1", Text: "hi", MaxAttempts: 3,
			Status: herald.StatusQueued, CreatedAt: t0, UpdatedAt: t0, DueAt: t0}
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, msg("old"), herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execRaw(t, path, `ALTER TABLE messages DROP COLUMN trace_parent`)

	s, err = Open(path)
	if err != nil {
		t.Fatalf("Open of a database without trace_parent: %v", err)
	}
	defer s.Close()
	m := msg("new")
	m.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"old": "", "new": m.TraceParent} {
		got, err := s.Get(ctx, id)
		if err != nil || got.TraceParent != want {
			t.Errorf("Get %s = %+v, %v; want TraceParent %q", id, got, err, want)
		}
	}
}

// TestMigrateLaneTriggers opens databases written by versions before, with
// the one lanes trigger of the first (lanes_update, kept as it was), or
// the flight's trigger of the next (lanes_update, or a build's
// lanes_flight) and their in-flight index, and finds them gone: a flight
// that ends gives its slot back once, not twice.
func TestMigrateLaneTriggers(t *testing.T) {
	for name, triggers := range map[string]string{
		"one trigger":  `DROP TRIGGER lanes_requeued; DROP TRIGGER lanes_dequeued;` + oldLaneTrigger,
		"lanes_update": flightLaneTrigger,
		"lanes_flight": strings.Replace(flightLaneTrigger, "lanes_update", "lanes_flight", 1),
	} {
		t.Run(name, func(t *testing.T) { testMigrateLaneTriggers(t, triggers) })
	}
}

func testMigrateLaneTriggers(t *testing.T, triggers string) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "herald.db")
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execRaw(t, path, triggers)
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var old int
	if err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master
			WHERE name IN ('lanes_flight', 'lanes_update', 'messages_lane_inflight')`).Scan(&old); err != nil || old != 0 {
		t.Fatalf("an old lanes trigger or index is still there (%d, %v)", old, err)
	}
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"g": {Concurrency: 2}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		m := &herald.Message{ID: id, Tenant: "acme", Route: "g", Lane: "L", Text: "hi", MaxAttempts: 3, CreatedAt: t0, UpdatedAt: t0, DueAt: t0}
		if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 1, GatedLimit: 1, DefaultAccept: time.Minute}); err != nil || len(got) != 1 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	if err := s.Transition(ctx, herald.Transition{ID: "a", From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0}); err != nil {
		t.Fatal(err)
	}
	var inflight int
	if err := s.read.QueryRowContext(ctx, `SELECT inflight FROM lanes WHERE route = 'g' AND lane = 'L'`).Scan(&inflight); err != nil {
		t.Fatal(err)
	}
	if inflight != 0 {
		t.Errorf("the lane's in-flight count after its one flight ended = %d, want 0", inflight)
	}
}

// oldLaneTrigger is the lanes trigger of the versions before 2026-11-25.
const oldLaneTrigger = `
CREATE TRIGGER IF NOT EXISTS lanes_update AFTER UPDATE OF status ON messages
WHEN new.gated = 1 AND old.status != new.status AND NOT (old.status = 'QUEUED' AND new.status = 'SENT_TO_NS')
BEGIN
	INSERT INTO lanes (route, lane, head_prio, head_id, cap)
		SELECT new.route, new.lane, new.priority, new.id,
			COALESCE((SELECT cap FROM lane_caps WHERE route = new.route), 4611686018427387904)
		WHERE new.status = 'QUEUED'
	ON CONFLICT (route, lane) DO UPDATE SET head_prio = excluded.head_prio, head_id = excluded.head_id
		WHERE head_id = '' OR excluded.head_prio > head_prio OR (excluded.head_prio = head_prio AND excluded.head_id < head_id);
	UPDATE lanes SET (head_id, head_prio) = (
			SELECT id, priority FROM (SELECT id, priority FROM messages INDEXED BY messages_lane
				WHERE status = 'QUEUED' AND gated = 1 AND route = new.route AND lane = new.lane
				ORDER BY priority DESC, id LIMIT 1)
			UNION ALL SELECT '', 0 LIMIT 1)
	WHERE old.status = 'QUEUED' AND route = new.route AND lane = new.lane AND head_id = old.id;
	UPDATE lanes SET inflight = inflight
			+ (new.status = 'SENT_TO_NS' OR new.status = 'DELIVERED_TO_NS' OR new.status = 'SENT_TO_DEVICE')
			- (old.status = 'SENT_TO_NS' OR old.status = 'DELIVERED_TO_NS' OR old.status = 'SENT_TO_DEVICE')
	WHERE route = new.route AND lane = new.lane
		AND (new.status = 'SENT_TO_NS' OR new.status = 'DELIVERED_TO_NS' OR new.status = 'SENT_TO_DEVICE')
			!= (old.status = 'SENT_TO_NS' OR old.status = 'DELIVERED_TO_NS' OR old.status = 'SENT_TO_DEVICE');
	-- A held lane may admit again once a message joins it or one of it ends.
	UPDATE lanes SET ready_at = 0, held = 0 WHERE held = 1 AND route = new.route AND lane = new.lane
		AND (new.status = 'QUEUED' OR new.status = 'DELIVERY_SUCCESSFUL' OR new.status = 'DELIVERY_FAILED' OR new.status = 'CANCELLED');
END;`

// flightLaneTrigger is the flight's trigger of the versions of
// 2026-11-25, which kept the lanes' slots by trigger and their messages in
// flight in an index (a build of that day named it lanes_flight).
const flightLaneTrigger = `
CREATE INDEX IF NOT EXISTS messages_lane_inflight ON messages (route, lane, id)
	WHERE gated = 1 AND (status = 'SENT_TO_NS' OR status = 'DELIVERED_TO_NS' OR status = 'SENT_TO_DEVICE');
CREATE TRIGGER IF NOT EXISTS lanes_update AFTER UPDATE OF status ON messages
WHEN new.gated = 1 AND old.status != new.status AND NOT (old.status = 'QUEUED' AND new.status = 'SENT_TO_NS')
	AND ((new.status = 'SENT_TO_NS' OR new.status = 'DELIVERED_TO_NS' OR new.status = 'SENT_TO_DEVICE')
			!= (old.status = 'SENT_TO_NS' OR old.status = 'DELIVERED_TO_NS' OR old.status = 'SENT_TO_DEVICE')
		OR new.status = 'DELIVERY_SUCCESSFUL' OR new.status = 'DELIVERY_FAILED' OR new.status = 'CANCELLED')
BEGIN
	UPDATE lanes SET inflight = inflight
			+ (new.status = 'SENT_TO_NS' OR new.status = 'DELIVERED_TO_NS' OR new.status = 'SENT_TO_DEVICE')
			- (old.status = 'SENT_TO_NS' OR old.status = 'DELIVERED_TO_NS' OR old.status = 'SENT_TO_DEVICE'),
		ready_at = CASE WHEN held = 1 AND (new.status = 'DELIVERY_SUCCESSFUL' OR new.status = 'DELIVERY_FAILED' OR new.status = 'CANCELLED')
			THEN 0 ELSE ready_at END,
		held = CASE WHEN new.status = 'DELIVERY_SUCCESSFUL' OR new.status = 'DELIVERY_FAILED' OR new.status = 'CANCELLED'
			THEN 0 ELSE held END
	WHERE route = new.route AND lane = new.lane;
END;`

// execRaw runs stmts on the closed database at path, as a version before
// would have left it.
func execRaw(t *testing.T, path, stmts string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmts); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateOrderedColumn opens a database written before the ordered
// column, whose target index held every gated message, and finds the
// column added, the index remade for ordered routes only, and the stored
// messages of an ordered route indexed again once SetAdmission says so:
// the second message of a target waits for the first.
func TestMigrateOrderedColumn(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "herald.db")
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rules := map[string]herald.Admission{"o": {Ordered: true}}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		m := &herald.Message{ID: id, Tenant: "acme", Route: "o", Lane: "L", Target: "dev", Text: "hi", MaxAttempts: 3, CreatedAt: t0, UpdatedAt: t0, DueAt: t0}
		if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// (The versions without the column had no trigger lanes_target_ended,
	// which reads it.)
	execRaw(t, path, `DROP INDEX messages_target;
		CREATE INDEX messages_target ON messages (route, target, id)
			WHERE gated = 1 AND status != 'DELIVERY_SUCCESSFUL' AND status != 'DELIVERY_FAILED' AND status != 'CANCELLED';
		DROP TRIGGER lanes_target_ended;
		ALTER TABLE messages DROP COLUMN ordered;`)
	if s, err = Open(path); err != nil {
		t.Fatalf("Open of a database without the ordered column: %v", err)
	}
	defer s.Close()
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	if first, err := s.FirstActive(ctx, "o", "dev"); err != nil || first != "a" {
		t.Errorf("FirstActive = %q, %v; want a", first, err)
	}
	got, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 10, GatedLimit: 10, DefaultAccept: time.Minute})
	if err != nil || len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("claim = %v, %v; want a alone (b waits for it)", got, err)
	}
}

// TestMigrateCircuitAt opens a database written before lanes.circuit_at
// whose idle lane counts circuit failures, and finds the count kept by a
// prune within the retention from the migration, not lost at once.
func TestMigrateCircuitAt(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "herald.db")
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rules := map[string]herald.Admission{"g": {Concurrency: 1, Circuit: herald.Circuit{Failures: 3, CoolDown: time.Minute}}}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	m := &herald.Message{ID: "a", Tenant: "acme", Route: "g", Lane: "L", Text: "hi", MaxAttempts: 3, CreatedAt: t0, UpdatedAt: t0, DueAt: t0}
	if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Transition(ctx, herald.Transition{ID: "a", From: herald.StatusQueued, To: herald.StatusCancelled, At: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReportCircuit(ctx, herald.CircuitReport{Route: "g", Lane: "L", Failed: true, At: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execRaw(t, path, `ALTER TABLE lanes DROP COLUMN circuit_at`)
	if s, err = Open(path); err != nil {
		t.Fatalf("Open of a database without lanes.circuit_at: %v", err)
	}
	defer s.Close()
	if _, err := s.Prune(ctx, time.Now().Add(-time.Hour), 100); err != nil {
		t.Fatal(err)
	}
	var failures int
	if err := s.read.QueryRowContext(ctx, `SELECT failures FROM lanes WHERE route = 'g' AND lane = 'L'`).Scan(&failures); err != nil || failures != 1 {
		t.Fatalf("the idle lane's failures after the migration and a prune = %d, %v; want 1", failures, err)
	}
}
