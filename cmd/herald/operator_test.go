package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestSendAtSendNowCancelCLI: herald send --send-at schedules a message
// (get --explain says scheduled), herald send-now sends it now, and
// herald cancel cancels one message by ID or, with --route, a route's
// waiting messages: refused without --yes and without a terminal, done
// with --yes.
func TestSendAtSendNowCancelCLI(t *testing.T) {
	base := startCLIServer(t, "  - {name: slow, carrier: webhook, url: \"http://127.0.0.1:9/in\", policy: {max_attempts: 5, retry: {kind: constant, base: 1h}}}\n")
	must := mustCLI(t, base)
	type view struct {
		ID, Status    string
		NextAttemptAt *time.Time `json:"next_attempt_at"`
		Timeline      []struct{ Reason string }
	}
	read := func(out string) view {
		t.Helper()
		var v view
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID == "" {
			t.Fatalf("not a message: %v\n%s", err, out)
		}
		return v
	}
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	a := read(must("send", "--route", "slow", "--text", "later", "--send-at", at.Format(time.RFC3339)))
	if a.Status != "QUEUED" || a.NextAttemptAt == nil || !a.NextAttemptAt.Equal(at) {
		t.Errorf("send --send-at: %s next_attempt_at %v, want QUEUED until %v", a.Status, a.NextAttemptAt, at)
	}
	if out := must("get", a.ID, "--explain"); !strings.Contains(out, `"scheduled"`) {
		t.Errorf("get --explain of a scheduled message: %s", out)
	}
	if _, err := runCLI(t, base, "send", "--route", "slow", "--text", "x", "--send-at", "tomorrow"); err == nil || !strings.Contains(err.Error(), "--send-at") {
		t.Errorf("send --send-at tomorrow: %v, want an error naming --send-at", err)
	}
	sent := read(must("send-now", a.ID[:24])) // a unique prefix
	if last := sent.Timeline[len(sent.Timeline)-1]; sent.Status == "QUEUED" && last.Reason != "sent now by an operator" {
		t.Errorf("send-now: %+v, want its timeline to record it", sent)
	}

	b := read(must("send", "--route", "slow", "--text", "b", "--send-at", at.Format(time.RFC3339)))
	c := read(must("send", "--route", "slow", "--text", "c", "--send-at", at.Format(time.RFC3339), "--target", "t2"))
	if _, err := runCLI(t, base, "cancel", "--route", "slow", "--target", "t2"); err == nil ||
		!strings.Contains(err.Error(), "refusing to cancel the waiting messages of route slow, target t2 without --yes") {
		t.Errorf("cancel --route without --yes nor a terminal: %v", err)
	}
	if _, err := runCLI(t, base, "cancel"); err == nil || !strings.Contains(err.Error(), "--route") {
		t.Errorf("cancel with neither an ID nor --route: %v", err)
	}
	if _, err := runCLI(t, base, "cancel", b.ID, "--route", "slow"); err == nil {
		t.Error("cancel with an ID and --route succeeded")
	}
	if read(must("get", c.ID)).Status != "QUEUED" {
		t.Fatal("the refused bulk cancel cancelled")
	}
	if out := must("cancel", "--route", "slow", "--target", "t2", "--status", "queued", "--yes"); !strings.Contains(out, `"cancelled": 1`) {
		t.Errorf("cancel --route --target --yes: %s", out)
	}
	if v := read(must("cancel", b.ID)); v.Status != "CANCELLED" {
		t.Errorf("cancel ID: %s, want CANCELLED", v.Status)
	}
	if read(must("get", c.ID)).Status != "CANCELLED" {
		t.Error("the bulk cancel left its message")
	}
	if _, err := runCLI(t, base, "send-now", b.ID); err == nil || !strings.Contains(err.Error(), "not_waiting") {
		t.Errorf("send-now of a cancelled message: %v, want not_waiting", err)
	}
}
