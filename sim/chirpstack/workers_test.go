package chirpstack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHTTPWorkers posts with several posters: events of different devices
// are in flight at once, each device's arrive in the order produced, and
// every one arrives.
func TestHTTPWorkers(t *testing.T) {
	const devices, perDevice = 4, 3
	var (
		mu       sync.Mutex
		byDevice = map[string][]string{}
		inFlight int
		overlap  = make(chan struct{}) // closed once two posts are in flight
		once     sync.Once
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			DeviceInfo struct{ DevEui string } `json:"deviceInfo"`
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("event %s: %v", body, err)
		}
		mu.Lock()
		byDevice[ev.DeviceInfo.DevEui] = append(byDevice[ev.DeviceInfo.DevEui], r.URL.Query().Get("event"))
		inFlight++
		if inFlight >= 2 {
			once.Do(func() { close(overlap) })
		}
		mu.Unlock()
		// The first post waits for a second one: that one can come only
		// from another poster.
		select {
		case <-overlap:
		case <-time.After(timeout):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)

	cfg := baseConfig()
	cfg.Devices = SequentialDevices(devices, 0x0102030405060a00, ClassC, 0)
	cfg.DisableRecords = true
	cfg.HTTP = &HTTPConfig{URL: srv.URL, Workers: devices}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := client(t, s)
	for range perDevice {
		for _, d := range cfg.Devices {
			enqueue(t, c, d.DevEUI, true, []byte{1})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-overlap:
	default:
		t.Error("no two events were posted at once")
	}
	if st := s.Stats(); st.Events != devices*perDevice*3 || st.EventsFailed != 0 {
		t.Errorf("stats %+v: want %d events, none failed", st, devices*perDevice*3)
	}
	want := strings.TrimSpace(strings.Repeat("txack up ack ", perDevice))
	mu.Lock()
	defer mu.Unlock()
	for _, d := range cfg.Devices {
		if got := strings.Join(byDevice[d.DevEUI], " "); got != want {
			t.Errorf("device %s: events %q; want %q, in order", d.DevEUI, got, want)
		}
	}
}

// TestHTTPWorkersNegative: a negative number of posters is refused.
func TestHTTPWorkersNegative(t *testing.T) {
	cfg := baseConfig()
	cfg.HTTP = &HTTPConfig{URL: "http://127.0.0.1:1/x", Workers: -1}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "workers") {
		t.Fatalf("New: %v; want an error about workers", err)
	}
}
