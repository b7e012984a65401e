package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald/client"
)

// TestMessagesCLI drives the message commands against a server: send (text,
// hex, base64), get (--explain), ls, cancel, replay and dlq ls, replay and
// purge, each printing the server's JSON indented; and their errors, which
// carry the API's code.
func TestMessagesCLI(t *testing.T) {
	// Both routes post to a closed port: "fail" fails at its first
	// attempt, "slow" waits an hour before its second.
	base := startCLIServer(t, "  - {name: fail, carrier: webhook, url: \"http://127.0.0.1:9/in\", policy: {max_attempts: 1}}\n"+
		"  - {name: slow, carrier: webhook, url: \"http://127.0.0.1:9/in\", policy: {max_attempts: 5, retry: {kind: constant, base: 1h}}}\n")
	must := mustCLI(t, base)
	type view struct {
		ID, Status, Payload, Text, Target, Lane string
		Priority                                int
		Params                                  map[string]string
		ExpiresAt                               *time.Time `json:"expires_at"`
	}
	read := func(out string) view {
		t.Helper()
		var v view
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID == "" {
			t.Fatalf("not a message: %v\n%s", err, out)
		}
		return v
	}
	waitStatus := func(id, status string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			v := read(must("get", id))
			if v.Status == status {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %s is %s, want %s", id, v.Status, status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	out := must("send", "--route", "fail", "--text", "hi", "--correlation-id", "batch")
	if !strings.HasPrefix(out, "{\n  \"id\": \"") || !strings.HasSuffix(out, "\n}\n\n") {
		t.Errorf("send printed %q, want the JSON indented by two spaces, then a blank line", out)
	}
	a := read(out)
	b := read(must("send", "--route", "fail", "--payload", "AAEC", "--correlation-id", "batch"))
	if b.Payload != "AAEC" || a.Text != "hi" {
		t.Errorf("send: text %q, payload %q; want hi and AAEC", a.Text, b.Payload)
	}
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	c := read(must("send", "--route", "slow", "--target", "t1", "--hex", "01 02 ff", "--param", "k=v", "--priority", "3",
		"--lane", "L", "--expires-at", expires.Format(time.RFC3339), "--idempotency-key", "i1"))
	if c.Payload != "AQL/" || c.Target != "t1" || c.Priority != 3 || c.Lane != "L" || c.Params["k"] != "v" ||
		c.ExpiresAt == nil || !c.ExpiresAt.Equal(expires) {
		t.Errorf("send --hex with options: %+v", c)
	}
	if again := read(must("send", "--route", "slow", "--text", "other", "--idempotency-key", "i1")); again.ID != c.ID {
		t.Errorf("a repeat of idempotency key i1 gave %s, want %s", again.ID, c.ID)
	}

	// An id by a unique prefix, through the API's id_prefix and the store.
	prefix := c.ID[:minIDPrefix]
	for strings.HasPrefix(a.ID, prefix) || strings.HasPrefix(b.ID, prefix) {
		prefix = c.ID[:len(prefix)+1]
	}
	if v := read(must("get", prefix)); v.ID != c.ID {
		t.Errorf("get %s: message %s, want %s", prefix, v.ID, c.ID)
	}
	if len(prefix) > minIDPrefix {
		if _, err := runCLI(t, base, "get", prefix[:len(prefix)-1]); err == nil || !strings.Contains(err.Error(), "names several messages") {
			t.Errorf("get %s, a prefix of several ids: %v", prefix[:len(prefix)-1], err)
		}
	}

	waitStatus(a.ID, "DELIVERY_FAILED")
	waitStatus(b.ID, "DELIVERY_FAILED")
	if out := must("get", a.ID, "--explain"); !strings.Contains(out, `"terminal"`) {
		t.Errorf("get --explain of a failed message: %s", out)
	}
	var page struct {
		Messages []view `json:"messages"`
		Next     string `json:"next_cursor"`
	}
	if err := json.Unmarshal([]byte(must("ls", "--correlation-id", "batch", "--limit", "1")), &page); err != nil ||
		len(page.Messages) != 1 || page.Messages[0].ID != b.ID || page.Next == "" {
		t.Fatalf("ls --limit 1: %+v %v; want %s and a cursor", page, err, b.ID)
	}
	if err := json.Unmarshal([]byte(must("ls", "--correlation-id", "batch", "--cursor", page.Next)), &page); err != nil ||
		len(page.Messages) != 1 || page.Messages[0].ID != a.ID {
		t.Errorf("ls --cursor: %+v %v; want %s", page, err, a.ID)
	}
	if out := must("dlq", "ls", "--route", "fail"); !strings.Contains(out, a.ID) || !strings.Contains(out, b.ID) {
		t.Errorf("dlq ls: %s", out)
	}
	if out := must("dlq", "replay", "--route", "fail", "--reason", "no such reason", "--rate", "5", "--yes"); !strings.Contains(out, `"replayed": 0`) {
		t.Errorf("dlq replay of nothing: %s", out)
	}
	if out := must("dlq", "replay", "--route", "fail", "--target", "no such target", "-y"); !strings.Contains(out, `"replayed": 0`) {
		t.Errorf("dlq replay of another target: %s", out)
	}
	if out := must("dlq", "replay", "--route", "fail", "--since", "2999-01-01T00:00:00Z", "--until", "3000-01-01T00:00:00Z", "-y"); !strings.Contains(out, `"replayed": 0`) {
		t.Errorf("dlq replay of those failed in 2999: %s", out)
	}
	if _, err := runCLI(t, base, "dlq", "replay", "--since", "yesterday", "-y"); err == nil || !strings.Contains(err.Error(), `--since "yesterday"`) {
		t.Errorf("dlq replay --since yesterday: %v, want an error naming --since", err)
	}
	// The answer is the message as read after the replay: the dispatcher
	// may have claimed it, and failed it again, already; its timeline
	// shows the replay.
	if v := read(must("replay", a.ID)); v.Status != "QUEUED" && v.Status != "SENT_TO_NS" && v.Status != "DELIVERY_FAILED" {
		t.Errorf("replay: %s, want QUEUED (or SENT_TO_NS or DELIVERY_FAILED, claimed since)", v.Status)
	}
	if out := must("get", a.ID); !strings.Contains(out, "replayed by user") {
		t.Errorf("get after replay: no replay in the timeline: %s", out)
	}
	if out := must("dlq", "purge", "--route", "fail", "--before", "2000-01-01T00:00:00Z", "--yes"); !strings.Contains(out, `"purged": 0`) {
		t.Errorf("dlq purge --before 2000: %s", out)
	}
	if _, err := runCLI(t, base, "dlq", "purge", "--route", "fail"); err == nil || !strings.Contains(err.Error(), "refusing to delete the dead letters of route fail without --yes") {
		t.Errorf("dlq purge without --yes nor a terminal: %v", err)
	}
	if _, err := runCLI(t, base, "dlq", "replay"); err == nil || !strings.Contains(err.Error(), "refusing to replay every dead letter without --yes") {
		t.Errorf("dlq replay without --yes nor a terminal: %v", err)
	}
	if out := must("dlq", "purge", "--route", "fail", "--yes"); !strings.Contains(out, `"purged": `) || strings.Contains(out, `"purged": 0`) {
		t.Errorf("dlq purge: %s", out)
	}

	waitStatus(c.ID, "TO_RETRY")
	if v := read(must("cancel", c.ID)); v.Status != "CANCELLED" {
		t.Errorf("cancel: %s, want CANCELLED", v.Status)
	}

	// Errors: the API's code, on the line main prints.
	for _, tc := range []struct {
		args   []string
		status int
		code   string
		line   string
	}{
		{[]string{"cancel", c.ID}, http.StatusConflict, client.CodeNotCancellable, "herald: POST /v1/messages/" + c.ID + "/cancel: 409 not_cancellable: "},
		{[]string{"get", b.ID}, http.StatusNotFound, client.CodeNotFound, "herald: GET /v1/messages/" + b.ID + ": 404 not_found: "},
		{[]string{"send", "--route", "nope", "--text", "x"}, http.StatusBadRequest, client.CodeUnknownRoute, "herald: POST /v1/messages: 400 unknown_route: route: "},
		{[]string{"ls", "--status", "BOGUS"}, http.StatusBadRequest, client.CodeInvalidField, "herald: GET /v1/messages?status=BOGUS: 400 invalid_field: status: "},
	} {
		out, err := runCLI(t, base, tc.args...)
		var e *client.Error
		if !errors.As(err, &e) || e.Status != tc.status || e.Code != tc.code {
			t.Errorf("herald %s: %v, want a %d %s", strings.Join(tc.args, " "), err, tc.status, tc.code)
			continue
		}
		if line := errorLine(err); !strings.HasPrefix(line, tc.line) {
			t.Errorf("herald %s: error line %q, want it to start %q", strings.Join(tc.args, " "), line, tc.line)
		}
		if out != "" {
			t.Errorf("herald %s printed %q with its error", strings.Join(tc.args, " "), out)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"send", "--route", "fail", "--payload", "!!"}, "--payload: not valid base64"},
		{[]string{"send", "--route", "fail", "--hex", "zz"}, "--hex: "},
		{[]string{"send", "--route", "fail", "--text", "x", "--expires-at", "tomorrow"}, "--expires-at: "},
	} {
		if _, err := runCLI(t, base, tc.args...); err == nil || !strings.HasPrefix(errorLine(err), "herald: "+tc.want) {
			t.Errorf("herald %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	// A key the server does not know, and a server URL the client refuses.
	run := func(args ...string) error {
		cmd := rootCommand()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(args)
		return cmd.Execute()
	}
	if err := run("ls", "--server", base, "--key", "wrong"); !client.IsUnauthorized(err) || client.ErrorCode(err) != client.CodeUnauthorized {
		t.Errorf("ls with a wrong key: %v, want 401 unauthorized", err)
	}
	if err := run("ls", "--server", "http://host name", "--key", "k1"); err == nil || !strings.HasPrefix(errorLine(err), "herald client: URL") {
		t.Errorf("ls with a server URL that is not one: %v", err)
	}
	t.Setenv("HERALD_SERVER", strings.TrimPrefix(base, "http://"))
	if err := run("ls", "--key", "k1"); err != nil {
		t.Errorf("ls with HERALD_SERVER=%s, without a scheme: %v", strings.TrimPrefix(base, "http://"), err)
	}
}
