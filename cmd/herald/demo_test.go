package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald/config"
)

// TestDemoShowsMessagesFlowing runs the demo to its end and checks that it
// printed the transitions of every message and a summary.
func TestDemoShowsMessagesFlowing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	store := "sqlite:" + filepath.Join(t.TempDir(), "demo.db")
	if err := runDemo(ctx, &out, freeAddr(t), store, 5, 0.3, true); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"(new)           -> QUEUED", "SENT_TO_NS", "all messages ended: "} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "-> QUEUED              attempt 0  (created)"); n != 5 {
		t.Errorf("demo showed %d messages created, want 5:\n%s", n, text)
	}
}

func TestServeRefusesFlowControlItDoesNotEnforce(t *testing.T) {
	f, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	f.Routes[0].Ordered = true
	f.Routes[0].DedupTTL = config.Duration(time.Hour)
	if _, err := buildRoutes(f); err != nil {
		t.Fatalf("buildRoutes with ordered and dedup_ttl on SQLite: %v", err)
	}
	f.Store = "redis://127.0.0.1:1/0"
	if _, err := buildRoutes(f); err == nil || !strings.Contains(err.Error(), "dedup_ttl (1h0m0s, from the route or its profile): not supported on the Redis store") {
		t.Fatalf("buildRoutes with dedup_ttl on Redis: %v, want a clear refusal", err)
	}
}
