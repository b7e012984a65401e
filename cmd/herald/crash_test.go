package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heraldmq/herald/sim/webhooksink"
)

// serverProc is a `herald serve` child process.
type serverProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	key  string
	log  *lockedBuffer
}

func startProc(t *testing.T, dir, configYAML string) *serverProc {
	t.Helper()
	cfgPath := filepath.Join(dir, "herald.yaml")
	if err := os.WriteFile(cfgPath, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &serverProc{t: t, key: "crash-key", log: &lockedBuffer{}}
	s.cmd = exec.Command(self, "serve", "--config", cfgPath)
	s.cmd.Env = append(os.Environ(), "HERALD_RUN_MAIN=1", "HERALD_TEST_KEY=crash-key")
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.kill() })
	return s
}

func (s *serverProc) waitReady(base string) {
	s.t.Helper()
	s.base = base
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("server not ready; its log:\n%s", s.log.String())
}

func (s *serverProc) kill() {
	if s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
	}
}

func (s *serverProc) call(method, path string, body any, out any) (int, error) {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil {
		err = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode, err
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestCrashLosesNothing sends 2,000 messages to a slow sink, kills the server
// with SIGKILL midway, restarts it, and checks that every acknowledged message
// ends in exactly one terminal state and reached the sink at least once.
func TestCrashLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	const total = 2000
	sink := webhooksink.New(webhooksink.Config{Delay: 20 * time.Millisecond})
	sinkSrv := httptest.NewServer(sink)
	defer sinkSrv.Close()

	dir := t.TempDir()
	addr := freeAddr(t)
	config := nodeConfig(addr, "sqlite:"+filepath.Join(dir, "herald.db"), sinkSrv.URL, 8, "2s")

	srv := startProc(t, dir, config)
	srv.waitReady("http://" + addr)

	// Send everything; the server acknowledges each once it is durable.
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	next := make(chan int, total)
	for i := range total {
		next <- i
	}
	close(next)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var view struct{ ID string }
				code, err := srv.call("POST", "/v1/messages", map[string]any{"route": "hooks", "text": fmt.Sprintf("m%d", i)}, &view)
				if err != nil || code != http.StatusAccepted {
					t.Errorf("send %d: %d %v", i, code, err)
					return
				}
				mu.Lock()
				acked = append(acked, view.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(acked) != total {
		t.Fatalf("%d of %d sends acknowledged", len(acked), total)
	}

	// Kill it midway through the deliveries.
	deadline := time.Now().Add(30 * time.Second)
	for sink.Stats().Delivered < total/3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	before := sink.Stats().Delivered
	srv.kill()
	if before >= total {
		t.Fatalf("the sink had every message before the kill (%d); slow it down", before)
	}
	t.Logf("killed after %d of %d deliveries", before, total)

	srv = startProc(t, dir, config)
	srv.waitReady("http://" + addr)
	byStatus := waitAllEnded(t, srv, total, 90*time.Second)
	if byStatus["DELIVERY_SUCCESSFUL"] != total {
		t.Fatalf("after restart: %v, want all %d DELIVERY_SUCCESSFUL", byStatus, total)
	}
	checkDelivered(t, srv, sink, acked)
	st := sink.Stats()
	t.Logf("crash: %d messages, %d deliveries, %d duplicates (sent again after the kill)", total, st.Delivered, st.Duplicates)
}

// lockedBuffer is a bytes.Buffer a process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
