package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heraldmq/herald/sim/webhooksink"
)

// TestDiskFull runs `herald serve` on a SQLite file in a 32 MB tmpfs,
// fills the disk and checks that sends are answered 503 store_unavailable
// with Retry-After, never 500, that /readyz is 503 and /v1/health
// critical; that once room is made sends are taken again and /readyz is
// 200, without a restart; and that every send answered 202 is kept.
// It needs root (to mount the tmpfs) and skips otherwise.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	disk := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", disk).Run() })
	sink := httptest.NewServer(webhooksink.New(webhooksink.Config{}))
	defer sink.Close()
	addr := freeAddr(t)
	srv := startProc(t, t.TempDir(), nodeConfig(addr, "sqlite:"+filepath.Join(disk, "herald.db"), sink.URL, 8, "5s"))
	srv.waitReady("http://" + addr)

	var acked []string
	send := func() (int, string) {
		var out struct {
			ID    string
			Error struct{ Code string }
		}
		code, err := srv.call("POST", "/v1/messages", map[string]any{"route": "hooks",
			"payload": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 64<<10))}, &out)
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		if code == http.StatusAccepted {
			acked = append(acked, out.ID)
		}
		return code, out.Error.Code
	}
	send()
	filler := filepath.Join(disk, "filler")
	fill(t, filler)

	full := false
	for range 200 {
		code, errCode := send()
		if code == http.StatusServiceUnavailable && errCode == "store_unavailable" {
			full = true
			break
		}
		if code != http.StatusAccepted {
			t.Fatalf("send on a full disk: %d %s, want 202 or 503 store_unavailable", code, errCode)
		}
	}
	if !full {
		t.Fatalf("no send refused on a full disk")
	}
	if code, _ := srv.call("GET", "/readyz", nil, nil); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz on a full disk: %d, want 503", code)
	}
	var health struct {
		Status   string
		Warnings []string
	}
	if code, _ := srv.call("GET", "/v1/health", nil, &health); code != 200 || health.Status != "critical" {
		t.Errorf("/v1/health on a full disk: %d %+v, want critical", code, health)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, errCode := send()
		if code == http.StatusAccepted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sends still refused after room was made: %d %s\n%s", code, errCode, srv.log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, _ := srv.call("GET", "/readyz", nil, nil); code != http.StatusOK {
		t.Errorf("/readyz after room was made: %d, want 200", code)
	}
	for _, id := range acked {
		if code, err := srv.call("GET", "/v1/messages/"+id, nil, nil); code != http.StatusOK {
			t.Errorf("acknowledged message %s: %d %v", id, code, err)
		}
	}
	srv.kill() // its log is complete
	if n := strings.Count(srv.log.String(), "refuses writes for want of room"); n != 1 {
		t.Errorf("the full disk logged %d times, want once", n)
	}
	t.Logf("%d sends acknowledged, all kept", len(acked))
}

// fill writes path until the disk has no room left.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
