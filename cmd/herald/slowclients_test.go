package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald/sim/webhooksink"
)

// slowKinds are the ways the slow clients of TestSlowClientsAreCutOff
// hold a connection, each with how soon the server must have ended it.
var slowKinds = []struct {
	name string
	// open writes what the client sends before it stalls.
	open func(c net.Conn, key string) error
	// within bounds the time from the stall to the server's close.
	within time.Duration
	// answer is the status the server must answer first, 0 for none.
	answer int
}{
	{"partial headers", func(c net.Conn, _ string) error {
		_, err := io.WriteString(c, "POST /v1/messages HTTP/1.1\r\nHost: herald\r\nContent-Type: appl")
		return err
	}, slowHeaderTimeout + 2*time.Second, 0},
	{"unauthenticated partial body", func(c net.Conn, _ string) error {
		_, err := io.WriteString(c, "POST /v1/messages HTTP/1.1\r\nHost: herald\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"route\":\"hooks\",")
		return err
	}, slowReadTimeout - time.Second, http.StatusUnauthorized}, // answered from its headers: well before a body read could time out
	{"authenticated partial body", func(c net.Conn, key string) error {
		_, err := io.WriteString(c, "POST /v1/messages HTTP/1.1\r\nHost: herald\r\nAuthorization: Bearer "+key+"\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{\"route\":\"hooks\",")
		return err
	}, slowReadTimeout + 2*time.Second, 0},
	{"idle keep-alive", func(c net.Conn, _ string) error {
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}, slowIdleTimeout + 2*time.Second, 0},
}

// The server's limits in TestSlowClientsAreCutOff, shortened from the
// defaults (10 s, 30 s, 120 s) so that each slow connection is cut off,
// and opened again, several times within the test.
const (
	slowHeaderTimeout = 3 * time.Second
	slowReadTimeout   = 5 * time.Second
	slowIdleTimeout   = 5 * time.Second
)

// TestSlowClientsAreCutOff holds 2,000 slow connections to a real
// `herald serve` for 20 s (500 each of partial headers, unauthenticated and
// authenticated partial bodies, and idle keep-alive connections; each
// opened again as soon as the server ends it) and checks that the server
// ends each within its timeout (the unauthenticated one at once, 401,
// its body unread: well before the read timeout, whatever the load of a
// CI machine running the race detector), that /healthz and an authenticated send answer within
// 1 s throughout, that its resident set stays bounded, and that its open
// files and resident set come back to their level before once the clients
// are gone.
func TestSlowClientsAreCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	if raceBuild {
		// The race detector slows the server 5 to 10 times on 2 cores: its
		// timings would measure the detector. .ci/run runs this test in a
		// plain build as well.
		t.Skip("timings measured in a build without the race detector")
	}
	const perKind, hold = 500, 20 * time.Second
	raiseFDLimit(t, 3*4*perKind)
	sink := httptest.NewServer(webhooksink.New(webhooksink.Config{}))
	defer sink.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := nodeConfig(addr, "sqlite:"+filepath.Join(dir, "herald.db"), sink.URL, 8, "5s") + fmt.Sprintf(`http:
  read_header_timeout: %s
  read_timeout: %s
  idle_timeout: %s
`, slowHeaderTimeout, slowReadTimeout, slowIdleTimeout)
	srv := startProc(t, dir, cfg)
	srv.waitReady("http://" + addr)
	pid := srv.cmd.Process.Pid
	probe := &prober{srv: srv}
	for range 20 { // warm up: the baseline is a server that has served
		probe.once(t)
	}
	time.Sleep(500 * time.Millisecond)
	fdsBefore, rssBefore, goBefore := openFDs(t, pid), procStatus(t, pid, "VmRSS"), goMemory(t, srv)
	t.Logf("before: %d open files, RSS %d MB, Go heap and stacks %d MB", fdsBefore, rssBefore>>10, goBefore>>20)

	stop := time.Now().Add(hold)
	var wg sync.WaitGroup
	var fails atomic.Int64
	var failMu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		if fails.Add(1) <= 10 {
			failMu.Lock()
			failures = append(failures, fmt.Sprintf(format, args...))
			failMu.Unlock()
		}
	}
	var cutOff [4]atomic.Int64
	for k, kind := range slowKinds {
		for range perKind {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					if err := holdSlow(addr, srv.key, k, stop); err != nil {
						fail("%s: %v", kind.name, err)
						time.Sleep(100 * time.Millisecond)
						continue
					}
					cutOff[k].Add(1)
					time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
				}
			}()
		}
	}
	var peakFDs int
	for time.Now().Before(stop) {
		probe.once(t)
		peakFDs = max(peakFDs, openFDs(t, pid))
		time.Sleep(200 * time.Millisecond)
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if n := fails.Load(); n > 0 {
		t.Errorf("%d slow connections were not ended as they should be", n)
	}
	for k, kind := range slowKinds {
		t.Logf("%s: ended by the server %d times", kind.name, cutOff[k].Load())
	}
	peakRSS := procStatus(t, pid, "VmHWM")
	t.Logf("during: %d probes, slowest %v; peak %d open files, peak RSS %d MB", probe.n, probe.slowest, peakFDs, peakRSS>>10)
	if probe.slowest > time.Second {
		t.Errorf("a probe took %v, want under 1s", probe.slowest)
	}
	const boundKB = 200 << 10
	if peakRSS > boundKB {
		t.Errorf("peak RSS %d MB, want under %d MB", peakRSS>>10, boundKB>>10)
	}

	// Once the clients are gone, the server's files and memory come back:
	// its resident set, and in a race build (whose shadow memory stays)
	// the Go heap and stacks in use.
	deadline := time.Now().Add(20 * time.Second)
	var fds, rss, goMem int
	back := func() bool {
		fds, rss, goMem = openFDs(t, pid), procStatus(t, pid, "VmRSS"), goMemory(t, srv)
		return fds <= fdsBefore+5 && goMem <= goBefore+24<<20 && (raceBuild || rss <= rssBefore+24<<10)
	}
	for !back() && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("after: %d open files, RSS %d MB, Go heap and stacks %d MB", fds, rss>>10, goMem>>20)
	if fds > fdsBefore+5 {
		t.Errorf("%d open files after the clients left, %d before", fds, fdsBefore)
	}
	if goMem > goBefore+24<<20 {
		t.Errorf("Go heap and stacks %d MB after the clients left, %d MB before", goMem>>20, goBefore>>20)
	}
	if !raceBuild && rss > rssBefore+24<<10 {
		t.Errorf("RSS %d MB after the clients left, %d MB before", rss>>10, rssBefore>>10)
	}
	probe.once(t)
}

// goMemory returns the bytes of Go heap and stacks srv has in use, from
// its /metrics.
func goMemory(t *testing.T, srv *serverProc) int {
	t.Helper()
	return int(metric(t, srv, "go_memstats_heap_inuse_bytes") + metric(t, srv, "go_memstats_stack_inuse_bytes"))
}

// holdSlow opens one slow connection of slowKinds[k], then waits until the
// server ends it, and checks how soon and with what answer.
func holdSlow(addr, key string, k int, stop time.Time) error {
	kind := slowKinds[k]
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer c.Close()
	if err := kind.open(c, key); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	stalled := time.Now()
	_ = c.SetReadDeadline(stalled.Add(kind.within + 5*time.Second))
	br := bufio.NewReader(c)
	if kind.answer != 0 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return fmt.Errorf("no answer: %w", err)
		}
		resp.Body.Close()
		if resp.StatusCode != kind.answer {
			return fmt.Errorf("answered %d, want %d", resp.StatusCode, kind.answer)
		}
	}
	_, err = io.Copy(io.Discard, br) // until the server closes
	if took := time.Since(stalled); err != nil || took > kind.within {
		return fmt.Errorf("ended after %v (want within %v): %v", took.Round(time.Millisecond), kind.within, err)
	}
	return nil
}

// prober checks that the server answers /healthz and an authenticated send
// promptly, and keeps the slowest answer.
type prober struct {
	srv     *serverProc
	n       int
	slowest time.Duration
}

func (p *prober) once(t *testing.T) {
	t.Helper()
	for _, call := range []func() (int, error){
		func() (int, error) { return p.srv.call("GET", "/healthz", nil, nil) },
		func() (int, error) {
			return p.srv.call("POST", "/v1/messages", map[string]any{"route": "hooks", "text": "probe"}, nil)
		},
	} {
		start := time.Now()
		code, err := call()
		took := time.Since(start)
		p.n++
		p.slowest = max(p.slowest, took)
		if err != nil || (code != http.StatusOK && code != http.StatusAccepted) {
			t.Errorf("probe: %d %v after %v", code, err, took)
		}
	}
}
