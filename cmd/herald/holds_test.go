package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald/sim/webhooksink"
)

// holdsConfig is a herald on the SQLite database of dir with the route
// hooks and, when later, the route later, both to the sink at sinkURL.
func holdsConfig(addr, dir, sinkURL string, later bool) string {
	cfg := fmt.Sprintf(`listen: %s
store: sqlite:%s
api_keys:
  - {key_env: HERALD_TEST_KEY, tenant: test, role: admin}
egress: {allow: [127.0.0.1]}
routes:
  - {name: hooks, carrier: webhook, url: %s/in, profile: channel}
`, addr, filepath.Join(dir, "herald.db"), sinkURL)
	if later {
		cfg += fmt.Sprintf("  - {name: later, carrier: webhook, url: %s/in, profile: channel}\n", sinkURL)
	}
	return cfg
}

// holdsNode is a herald node of the holds tests: its directory, address
// and webhook sink stay the same across its restarts.
type holdsNode struct {
	t                  *testing.T
	dir, addr, sinkURL string
}

// newHoldsNode makes a node's directory, address and sink (closed when the
// test ends).
func newHoldsNode(t *testing.T) *holdsNode {
	sink := httptest.NewServer(webhooksink.New(webhooksink.Config{}))
	t.Cleanup(sink.Close)
	return &holdsNode{t: t, dir: t.TempDir(), addr: freeAddr(t), sinkURL: sink.URL}
}

// start runs `herald serve` on the node with holdsConfig (with the route
// later when later) and waits until it is ready.
func (n *holdsNode) start(later bool) *serverProc {
	srv := startProc(n.t, n.dir, holdsConfig(n.addr, n.dir, n.sinkURL, later))
	srv.waitReady("http://" + n.addr)
	return srv
}

// cliAt runs the herald command line args against srv, with its key, and
// returns what it printed as JSON (-o json); stdin is empty (not a
// terminal).
func cliAt(t *testing.T, srv *serverProc, args ...string) (string, error) {
	t.Helper()
	cmd := rootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetArgs(append(args, "--server", srv.base, "--key", srv.key, "-o", "json"))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// statusOf returns the status of message id, and its explain's reason.
func statusOf(t *testing.T, srv *serverProc, id string) (status, reason string) {
	t.Helper()
	var m struct{ Status string }
	var x struct{ Reason, Detail string }
	if code, err := srv.call("GET", "/v1/messages/"+id, nil, &m); err != nil || code != http.StatusOK {
		t.Fatalf("get %s: %d %v", id, code, err)
	}
	if code, err := srv.call("GET", "/v1/messages/"+id+"/explain", nil, &x); err != nil || code != http.StatusOK {
		t.Fatalf("explain %s: %d %v", id, code, err)
	}
	return m.Status, x.Reason
}

// TestRouteRemovedKeepsItsBacklog: herald restarted with a route removed
// from its configuration keeps that route's 5 pending messages QUEUED,
// lists them as orphaned (API, CLI, a WARN naming the route and count);
// restarted with the route back, it delivers them. On the way, an
// operator's pause of the route holds them across both restarts, until
// `herald lanes resume`.
func TestRouteRemovedKeepsItsBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	node := newHoldsNode(t)

	srv := node.start(true)
	if out, err := cliAt(t, srv, "lanes", "pause", "--route", "later", "--reason", "migration"); err != nil || !strings.Contains(out, `"reason": "migration"`) {
		t.Fatalf("lanes pause: %v\n%s", err, out)
	}
	var ids []string
	for i := range 5 {
		var v struct{ ID string }
		if code, err := srv.call("POST", "/v1/messages", map[string]any{"route": "later", "text": fmt.Sprint(i)}, &v); err != nil || code != http.StatusAccepted {
			t.Fatalf("send: %d %v", code, err)
		}
		ids = append(ids, v.ID)
	}
	time.Sleep(300 * time.Millisecond)
	if st, reason := statusOf(t, srv, ids[0]); st != "QUEUED" || reason != "lane_paused" {
		t.Errorf("a paused route's message: %s, %s; want QUEUED, lane_paused", st, reason)
	}
	srv.kill()

	// Restarted without the route: held, listed, logged.
	srv = node.start(false)
	time.Sleep(300 * time.Millisecond)
	for _, id := range ids {
		if st, reason := statusOf(t, srv, id); st != "QUEUED" || reason != "route_missing" {
			t.Errorf("orphan %s: %s, %s; want QUEUED, route_missing", id, st, reason)
		}
	}
	var routes struct {
		Orphaned []struct {
			Route    string
			Messages int
		}
	}
	if code, err := srv.call("GET", "/v1/routes", nil, &routes); err != nil || code != http.StatusOK ||
		len(routes.Orphaned) != 1 || routes.Orphaned[0].Route != "later" || routes.Orphaned[0].Messages != 5 {
		t.Errorf("GET /v1/routes: %d %v %+v; want later with 5 orphaned", code, err, routes)
	}
	out, err := cliAt(t, srv, "routes", "--orphaned")
	if err != nil || !strings.Contains(out, `"route": "later"`) || !strings.Contains(out, `"messages": 5`) || strings.Contains(out, `"hooks"`) {
		t.Errorf("herald routes --orphaned: %v\n%s", err, out)
	}
	if log := srv.log.String(); !strings.Contains(log, "route missing from the configuration") || !strings.Contains(log, "route=later messages=5") {
		t.Errorf("no WARN naming the route and its count; the log:\n%s", log)
	}
	srv.kill()

	// Restarted with the route back: the pause still holds, then resumed,
	// they are delivered.
	srv = node.start(true)
	time.Sleep(300 * time.Millisecond)
	if st, reason := statusOf(t, srv, ids[0]); st != "QUEUED" || reason != "lane_paused" {
		t.Errorf("after two restarts, a paused route's message: %s, %s; want QUEUED, lane_paused", st, reason)
	}
	if out, err := cliAt(t, srv, "lanes", "resume", "--route", "later"); err != nil || !strings.Contains(out, `"resumed": true`) {
		t.Fatalf("lanes resume: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range ids {
		for {
			st, _ := statusOf(t, srv, id)
			if st == "DELIVERY_SUCCESSFUL" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %s of the route put back is %s, want DELIVERY_SUCCESSFUL", id, st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestFailOrphansCommand: `herald dlq fail-orphans` refuses without --yes
// and without a terminal, fails the orphans with it, and refuses a route
// in the configuration.
func TestFailOrphansCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	node := newHoldsNode(t)
	srv := node.start(true)
	if _, err := cliAt(t, srv, "lanes", "pause", "--route", "later", "--until", "1h"); err != nil {
		t.Fatal(err)
	}
	var v struct{ ID string }
	if code, err := srv.call("POST", "/v1/messages", map[string]any{"route": "later", "text": "x"}, &v); err != nil || code != http.StatusAccepted {
		t.Fatalf("send: %d %v", code, err)
	}
	srv.kill()
	srv = node.start(false)

	if out, err := cliAt(t, srv, "dlq", "fail-orphans", "--route", "later"); err == nil || !strings.Contains(err.Error(), "without --yes") {
		t.Errorf("fail-orphans without --yes nor a terminal: %v\n%s", err, out)
	}
	if st, _ := statusOf(t, srv, v.ID); st != "QUEUED" {
		t.Errorf("after a refusal the orphan is %s, want QUEUED", st)
	}
	if out, err := cliAt(t, srv, "dlq", "fail-orphans", "--route", "later", "--yes"); err != nil || !strings.Contains(out, `"failed": 1`) {
		t.Errorf("fail-orphans --yes: %v\n%s", err, out)
	}
	var m struct {
		Status    string
		LastError string `json:"last_error"`
	}
	if _, err := srv.call("GET", "/v1/messages/"+v.ID, nil, &m); err != nil || m.Status != "DELIVERY_FAILED" || m.LastError != "route later removed from the configuration" {
		t.Errorf("failed orphan: %+v %v", m, err)
	}
	if _, err := cliAt(t, srv, "dlq", "fail-orphans", "--route", "hooks", "--yes"); err == nil || !strings.Contains(err.Error(), "route_configured") {
		t.Errorf("fail-orphans of a configured route: %v, want route_configured", err)
	}
}
