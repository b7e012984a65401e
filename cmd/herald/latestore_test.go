package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldmq/herald/internal/redistest"
	"github.com/heraldmq/herald/sim/webhooksink"
)

// TestRedisStartedLater starts `herald serve` on a Redis that is down,
// starts Redis 10 s later, and checks that herald stayed up, answering
// /healthz 200 and sends and /readyz 503, and that it serves (a send
// delivered) once it connects, without a restart.
func TestRedisStartedLater(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	rdb := redistest.Start(t)
	rdb.Stop(t) // its port is known; it starts later
	sink := webhooksink.New(webhooksink.Config{})
	sinkSrv := httptest.NewServer(sink)
	defer sinkSrv.Close()
	addr := freeAddr(t)
	srv := startProc(t, t.TempDir(), nodeConfig(addr, rdb.URL(), sinkSrv.URL, 8, "5s"))
	srv.base = "http://" + addr

	up := time.Now().Add(10 * time.Second)
	var sawHealthz bool
	for time.Now().Before(up) {
		if code, err := srv.call("GET", "/healthz", nil, nil); err == nil && code == http.StatusOK {
			sawHealthz = true
			if code, _ := srv.call("GET", "/readyz", nil, nil); code != http.StatusServiceUnavailable {
				t.Errorf("/readyz without the store: %d, want 503", code)
			}
			var out struct{ Error struct{ Code string } }
			if code, _ := srv.call("POST", "/v1/messages", map[string]any{"route": "hooks", "text": "early"}, &out); code != http.StatusServiceUnavailable || out.Error.Code != "store_unavailable" {
				t.Errorf("a send without the store: %d %q, want 503 store_unavailable", code, out.Error.Code)
			}
		}
		if srv.cmd.ProcessState != nil {
			t.Fatalf("herald exited without its store:\n%s", srv.log)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !sawHealthz {
		t.Fatalf("herald did not serve /healthz without its store")
	}
	rdb.Start(t)
	srv.waitReady(srv.base) // within 30 s: its retries back off to 30 s at most
	var m struct{ ID string }
	if code, err := srv.call("POST", "/v1/messages", map[string]any{"route": "hooks", "text": "after"}, &m); code != http.StatusAccepted {
		t.Fatalf("send once Redis is up: %d %v", code, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var got struct{ Status string }
		srv.call("GET", "/v1/messages/"+m.ID, nil, &got)
		if got.Status == "DELIVERY_SUCCESSFUL" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the send is %s after 15 s", got.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
