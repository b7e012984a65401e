package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// TestMigrateDedup opens a database written by a version that
// deduplicated against any message delivered lately (its index, and no
// last_sent table or triggers) and finds the index gone and the table
// kept: the first command after the upgrade is stored, the same one sent
// again is deduplicated; Prune forgets a target untouched since its cut.
func TestMigrateDedup(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "herald.db")
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	msg := func(id string) *herald.Message {
		return &herald.Message{ID: id, Tenant: "acme", Route: "r1", Lane: "r1", Target: "dev", Payload: []byte{1}, MaxAttempts: 3,
			Status: herald.StatusQueued, CreatedAt: t0, UpdatedAt: t0, DueAt: t0, DedupKey: "red"}
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	execRaw(t, path, `DROP TRIGGER last_sent_created; DROP TRIGGER last_sent_sent; DROP TABLE last_sent;
		CREATE INDEX messages_dedup ON messages (tenant, route, dedup_key, updated_at)
			WHERE dedup_key != '' AND status = 'DELIVERY_SUCCESSFUL';`)

	s, err = Open(path)
	if err != nil {
		t.Fatalf("Open of a database with the former dedup index: %v", err)
	}
	defer s.Close()
	since := herald.CreateOptions{DedupSince: t0}
	if _, created, err := s.Create(ctx, msg("a"), since); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	for _, to := range []herald.Status{herald.StatusSentToNS, herald.StatusDeliverySuccessful} {
		from := herald.StatusQueued
		if to == herald.StatusDeliverySuccessful {
			from = herald.StatusSentToNS
		}
		if err := s.Transition(ctx, herald.Transition{ID: "a", From: from, To: to, At: t0.Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if prev, created, err := s.Create(ctx, msg("b"), since); err != nil || created || prev.ID != "a" {
		t.Fatalf("the same command again: %+v, created %v, %v; want a back", prev, created, err)
	}
	var n int
	if err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'messages_dedup'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the former dedup index: %d, %v; want gone", n, err)
	}
	if _, err := s.Prune(ctx, t0.Add(time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	err = s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM last_sent`).Scan(&n)
	if err != nil || n != 0 {
		t.Errorf("last_sent after a prune past its target's last change: %d rows, %v; want none", n, err)
	}
}
