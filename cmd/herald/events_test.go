package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald/config"
)

// TestEventsCLI: herald events ls lists a dead outcome event (its
// subscriber refused it, with one attempt allowed), and herald events
// replay sends it again.
func TestEventsCLI(t *testing.T) {
	f, err := config.Parse([]byte("listen: 127.0.0.1:0\nstore: sqlite:" + filepath.Join(t.TempDir(), "herald.db") + "\n" +
		"api_keys: [{key: k1, tenant: acme}]\n" +
		"subscribers: [{name: legacy, url: \"http://127.0.0.1:9/events\", max_attempts: 1}]\n" +
		"routes:\n  - {name: fail, carrier: webhook, url: \"http://127.0.0.1:9/in\", policy: {max_attempts: 1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := startServer(context.Background(), f, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.shutdown(); err != nil {
			t.Error(err)
		}
	})
	must := mustCLI(t, "http://"+s.addr)
	must("send", "--route", "fail", "--text", "hi")
	var page struct {
		Events []struct {
			ID, Subscriber, Type string
			Attempts             int
		} `json:"events"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(page.Events) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no dead outcome event within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
		if err := json.Unmarshal([]byte(must("events", "ls", "--subscriber", "legacy")), &page); err != nil {
			t.Fatal(err)
		}
	}
	if e := page.Events[0]; e.Subscriber != "legacy" || e.Type != "DELIVERY_FAILED" || e.Attempts != 1 {
		t.Fatalf("dead event %+v", e)
	}
	if out := must("events", "replay", page.Events[0].ID); !strings.Contains(out, `"replayed": 1`) {
		t.Errorf("events replay: %s", out)
	}
	if _, err := runCLI(t, "http://"+s.addr, "events", "replay", "--since", "yesterday"); err == nil || !strings.Contains(err.Error(), "--since") {
		t.Errorf("events replay --since yesterday: %v, want an error naming --since", err)
	}
}
