package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldmq/herald/config"
)

// TestChirpStackIngressNeedsSecret: a chirpstack route without
// ingress_secret_env is refused at start, naming the key, unless it takes
// its events over MQTT (its HTTP ingress is then closed); with
// ingress_open: true the server starts and warns that its ingress is open.
func TestChirpStackIngressNeedsSecret(t *testing.T) {
	t.Setenv("HERALD_TEST_KEY", "k")
	t.Setenv("HERALD_TEST_TOKEN", "t")
	dir := t.TempDir()
	cfg := `listen: 127.0.0.1:0
store: sqlite:` + filepath.Join(dir, "herald.db") + `
api_keys: [{key_env: HERALD_TEST_KEY}]
routes:
  - {name: lora, carrier: chirpstack, server: "127.0.0.1:1", token_env: HERALD_TEST_TOKEN`
	_, err := config.Parse([]byte(cfg + "}\n"))
	if err == nil || !strings.Contains(err.Error(), "ingress_secret_env is required") || !strings.Contains(err.Error(), "ingress_open: true") {
		t.Fatalf("config without a secret: %v, want ingress_secret_env required", err)
	}
	if _, err := config.Parse([]byte(cfg + ", mqtt: {url: \"tcp://127.0.0.1:1\", application_id: a}}\n")); err != nil {
		t.Errorf("a route with mqtt: and no secret (its HTTP ingress closed): %v", err)
	}
	f, err := config.Parse([]byte(cfg + ", ingress_open: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s, err := startServer(context.Background(), f, false, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.shutdown()
	if !strings.Contains(logs.String(), "level=WARN msg=\"ingress_open:") || !strings.Contains(logs.String(), "route=lora") {
		t.Errorf("no warning of the open ingress:\n%s", logs.String())
	}
}
