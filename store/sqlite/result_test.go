package sqlite

import (
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// TestMigrateResult opens a database written before the result column
// (dropped again) and finds it added: the old rows read with no result, a
// result recorded since is kept.
func TestMigrateResult(t *testing.T) {
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
	for _, id := range []string{"old", "new"} {
		if _, _, err := s.Create(ctx, msg(id), herald.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execRaw(t, path, `ALTER TABLE messages DROP COLUMN result`)

	s, err = Open(path)
	if err != nil {
		t.Fatalf("Open of a database without result: %v", err)
	}
	defer s.Close()
	result := map[string]string{"execution": "success"}
	if err := s.Transition(ctx, herald.Transition{ID: "new", From: herald.StatusQueued, To: herald.StatusCancelled,
		At: t0.Add(time.Second), Result: result}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]map[string]string{"old": nil, "new": result} {
		got, err := s.Get(ctx, id)
		if err != nil || !maps.Equal(got.Result, want) {
			t.Errorf("Get %s = %+v, %v; want Result %v", id, got, err, want)
		}
	}
}
