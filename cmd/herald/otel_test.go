package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald/config"
)

// TestServeExportsTraces: with an otel section, herald serve exports the
// spans of a send over OTLP/HTTP to the endpoint's /v1/traces (flushed at
// shutdown), in the trace of the traceparent the send came with, and the
// webhook endpoint gets that trace's traceparent.
func TestServeExportsTraces(t *testing.T) {
	var mu sync.Mutex
	var exports [][]byte
	var paths []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		exports, paths = append(exports, b), append(paths, r.URL.Path+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
	}))
	defer collector.Close()
	parents := make(chan string, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parents <- r.Header.Get("traceparent")
	}))
	defer hook.Close()

	f, err := config.Parse([]byte("listen: 127.0.0.1:0\nstore: sqlite:" + filepath.Join(t.TempDir(), "herald.db") + "\n" +
		"api_keys: [{key: k1, tenant: acme}]\n" +
		"routes: [{name: hooks, carrier: webhook, url: \"" + hook.URL + "\"}]\n" +
		"otel: {endpoint: \"" + collector.URL + "\", service_name: herald-test}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := startServer(context.Background(), f, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/v1/messages", strings.NewReader(`{"route":"hooks","text":"hi"}`))
	req.Header.Set("Authorization", "Bearer k1")
	req.Header.Set("traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var view struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&view)
	resp.Body.Close()
	select {
	case p := <-parents:
		if !strings.HasPrefix(p, "00-"+trace+"-") {
			t.Errorf("endpoint got traceparent %q, want one in trace %s", p, trace)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the webhook endpoint got nothing")
	}
	if err := s.shutdown(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	all := bytes.Join(exports, nil)
	traceID, _ := hex.DecodeString(trace)
	for what, b := range map[string][]byte{"the trace id": traceID, "the message id": []byte(view.ID),
		"the service name": []byte("herald-test"), "the API span": []byte("POST /v1/messages"), "the send span": []byte("herald.send")} {
		if !bytes.Contains(all, b) {
			t.Errorf("the exports (%d, to %q) hold no %s", len(exports), paths, what)
		}
	}
	for _, p := range paths {
		if p != "/v1/traces application/x-protobuf" {
			t.Errorf("export to %q, want /v1/traces in protobuf", p)
		}
	}
}
