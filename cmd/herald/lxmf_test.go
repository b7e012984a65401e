package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	simr "github.com/heraldmq/herald/sim/reticulum"
)

// lxmfConfig is a herald serving one lxmf route, mesh, on the Reticulum
// transport node at tcp, whose messages may wait 10 minutes for a path.
func lxmfConfig(addr, dir, tcp string) string {
	return fmt.Sprintf(`listen: %s
store: sqlite:%s
api_keys:
  - {key_env: HERALD_TEST_KEY, tenant: test}
routes:
  - name: mesh
    carrier: lxmf
    reticulum: {tcp: "%s"}
    identity_file: %s
    display_name: herald
    wait_for_path: 10m
`, addr, filepath.Join(dir, "herald.db"), tcp, filepath.Join(dir, "lxmf", "identity"))
}

// TestLXMFKilledWithMessagesPendingDeliversEachOnce: herald, a real
// `herald serve`, holds 50 messages for a recipient that has never been
// online (they wait for its path: wait_for_path) when it is killed with
// SIGKILL; the recipient comes online while herald is down; herald
// started again finds its path and delivers all 50, each once.
func TestLXMFKilledWithMessagesPendingDeliversEachOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	const total = 50
	s, err := simr.Start(simr.Config{Listen: "127.0.0.1:0", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	silent, err := s.AddPeer(simr.PeerConfig{Name: "silent", Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	dir, addr := t.TempDir(), freeAddr(t)
	srv := startProc(t, dir, lxmfConfig(addr, dir, s.Addr()))
	srv.key = "crash-key"
	srv.waitReady("http://" + addr)

	var ids []string
	for i := range total {
		var m herald.MessageView
		code, err := srv.call("POST", "/v1/messages", map[string]any{"route": "mesh", "target": silent.Address().String(),
			"text": fmt.Sprintf("message %d", i), "params": map[string]string{"title": "pending"}}, &m)
		if err != nil || code != 202 {
			t.Fatalf("send %d: %d %v", i, code, err)
		}
		ids = append(ids, m.ID)
	}
	var bad map[string]any
	if code, _ := srv.call("POST", "/v1/messages", map[string]any{"route": "mesh", "target": "not-an-address", "text": "x"}, &bad); code != 400 ||
		!strings.Contains(fmt.Sprint(bad), "target") {
		t.Errorf("a bad target: %d %v, want 400 naming target", code, bad)
	}
	waitFor(t, "the first message waiting for its path", func() bool {
		var x herald.Explanation
		srv.call("GET", "/v1/messages/"+ids[0]+"/explain", nil, &x)
		return x.Reason == "path_requested"
	})
	srv.kill()

	if err := silent.Online(); err != nil {
		t.Fatal(err)
	}
	srv = startProc(t, dir, lxmfConfig(addr, dir, s.Addr()))
	srv.key = "crash-key"
	srv.waitReady("http://" + addr)
	waitFor(t, "every message delivered", func() bool { return len(silent.Received()) == total })
	for _, id := range ids {
		var m herald.MessageView
		waitFor(t, "message "+id+" delivered", func() bool {
			srv.call("GET", "/v1/messages/"+id, nil, &m)
			return m.Status == herald.StatusDeliverySuccessful
		})
		if m.Attempt != 1 || m.Result["method"] != "direct" || len(m.ExternalID) != 64 {
			t.Errorf("%s: attempt %d, result %v, external id %q", id, m.Attempt, m.Result, m.ExternalID)
		}
	}
	if silent.Repeats() != 0 {
		t.Errorf("the recipient got %d repeats", silent.Repeats())
	}
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
