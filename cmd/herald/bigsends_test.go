package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald/sim/webhooksink"
)

// TestLargeSendsBoundMemory sends 200 bodies of nearly 1 MiB at once to a
// real `herald serve` with the default http: limits and checks that each
// is answered 202 or 503 (overloaded, with Retry-After) and that the
// server's peak resident set stays under 240 MB: the bodies held at once
// are bounded by http.max_body_bytes_in_flight (64 MiB), and the accepted
// messages' copies on their way to the store and the sink (about 3 MB
// each, 64 of them) come on top of a 40 MB process. Unbounded, the 200
// bodies and their copies would take over 600 MB.
func TestLargeSendsBoundMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	if raceBuild {
		// The race detector's shadow memory (5 to 10 times) would be
		// measured, not herald's. .ci/run runs this test in a plain build.
		t.Skip("measures memory: run without -race")
	}
	const senders = 200
	raiseFDLimit(t, 4*senders)
	sink := httptest.NewServer(webhooksink.New(webhooksink.Config{}))
	defer sink.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	srv := startProc(t, dir, nodeConfig(addr, "sqlite:"+filepath.Join(dir, "herald.db"), sink.URL, 8, "5s"))
	srv.waitReady("http://" + addr)
	pid := srv.cmd.Process.Pid
	rssBefore := procStatus(t, pid, "VmRSS")

	payload := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xA5}, 780_000)) // the JSON just under 1 MiB
	body, _ := json.Marshal(map[string]any{"route": "hooks", "payload": payload})
	if len(body) > 1<<20 {
		t.Fatalf("body of %d bytes", len(body))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}, Timeout: time.Minute}
	var wg sync.WaitGroup
	codes := make([]int, senders)
	start := make(chan struct{})
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", srv.base+"/v1/messages", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+srv.key)
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("send %d: %v", i, err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
				t.Errorf("send %d: 503 without Retry-After", i)
			}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	peak := procStatus(t, pid, "VmHWM")
	t.Logf("%d sends of %d bytes in %v: answers %v; RSS %d MB before, peak %d MB", senders, len(body), time.Since(began).Round(time.Millisecond), count, rssBefore>>10, peak>>10)
	if count[http.StatusAccepted]+count[http.StatusServiceUnavailable] != senders {
		t.Errorf("answers %v, want 202 or 503 only", count)
	}
	if count[http.StatusAccepted] == 0 {
		t.Errorf("no send accepted")
	}
	const bound = 240 // MB
	if peak > bound<<10 {
		t.Errorf("peak RSS %d MB, want under %d MB", peak>>10, bound)
	}
}
