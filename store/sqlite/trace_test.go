package sqlite

import (
	"database/sql"
	"path/filepath"
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
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ALTER TABLE messages DROP COLUMN trace_parent`); err != nil {
		t.Fatal(err)
	}
	db.Close()

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
