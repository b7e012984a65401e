package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
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

// TestServeKeepsFlowControlOnRedis builds routes for the Redis store with
// every flow control, a webhook route's default circuit included: Redis
// keeps them all, as SQLite does.
func TestServeKeepsFlowControlOnRedis(t *testing.T) {
	f, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	f.Store = "redis://127.0.0.1:1/0"
	routes, err := buildRoutes(f)
	if err != nil {
		t.Fatalf("buildRoutes on Redis: %v", err)
	}
	def := config.DefaultWebhookCircuit
	if got, want := routes[0].Policy.Admission.Circuit, (herald.Circuit{Failures: def.Failures, CoolDown: def.CoolDown.D()}); got != want {
		t.Errorf("webhook route's circuit on Redis = %+v, want the default %+v", got, want)
	}
	f.Routes[0].Ordered = true
	f.Routes[0].DedupTTL = config.Duration(time.Hour)
	f.Routes[0].Circuit = &config.Circuit{Failures: 3, CoolDown: config.Duration(time.Second)}
	if routes, err = buildRoutes(f); err != nil {
		t.Fatalf("buildRoutes with ordered, dedup_ttl and circuit on Redis: %v", err)
	}
	p := routes[0].Policy
	if !p.Admission.Ordered || p.DedupTTL != time.Hour || p.Admission.Circuit != (herald.Circuit{Failures: 3, CoolDown: time.Second}) {
		t.Errorf("policy on Redis: ordered %v, dedup_ttl %v, circuit %+v; want them as configured", p.Admission.Ordered, p.DedupTTL, p.Admission.Circuit)
	}
}
