// Package webhooksink is a webhook receiver for demos and tests: it answers
// with configurable failures and delays, and records every request so a test
// can count deliveries, duplicates and concurrent sends of one message.
package webhooksink

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// StatusClientClosed is recorded for a request whose client went away
// during the configured delay; such a request delivers nothing.
const StatusClientClosed = 499

// maxBody bounds the request bodies the sink reads.
const maxBody = 16 << 20

// Config sets how the sink answers.
type Config struct {
	// FailRate is the share of requests answered with FailStatus, 0..1.
	FailRate float64
	// FailStatus is the status of a failed answer; 0 means 503.
	FailStatus int
	// Delay is how long the sink waits before answering each request.
	Delay time.Duration
	// FailFirst fails the first N requests of each message id; later ones
	// succeed (unless FailRate fails them).
	FailFirst int
	// Seed seeds the FailRate draws.
	Seed int64
}

// Sink is an http.Handler that receives webhooks. POST (to any path) is a
// delivery, keyed by its Idempotency-Key header, else its webhook-id header;
// a request with neither is answered 400. GET /stats, /records, /delivered
// and /overlaps return the matching method's result as JSON. It is safe for
// concurrent use.
type Sink struct {
	cfg Config

	mu        sync.Mutex
	rng       *rand.Rand
	attempts  map[string]int // requests started per id
	inflight  map[string]int // requests being served per id
	overlaps  map[string]bool
	delivered map[string]int
	records   []Record
}

var _ http.Handler = (*Sink)(nil)

// New returns a sink that answers as cfg says.
func New(cfg Config) *Sink {
	if cfg.FailStatus == 0 {
		cfg.FailStatus = http.StatusServiceUnavailable
	}
	return &Sink{
		cfg:       cfg,
		rng:       rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Seed)^0x9e3779b97f4a7c15)),
		attempts:  map[string]int{},
		inflight:  map[string]int{},
		overlaps:  map[string]bool{},
		delivered: map[string]int{},
	}
}

// ServeHTTP receives a delivery or answers a GET for the sink's records.
func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		var v any
		switch r.URL.Path {
		case "/stats":
			v = s.Stats()
		case "/records":
			v = s.Records()
		case "/delivered":
			v = s.Delivered()
		case "/overlaps":
			v = s.Overlaps()
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.receive(w, r)
}

// receive serves one delivery and records it.
func (s *Sink) receive(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := r.Header.Get("Idempotency-Key")
	if id == "" {
		id = r.Header.Get("webhook-id")
	}
	n, fail := s.begin(id)
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBody))

	status := http.StatusOK
	switch {
	case id == "":
		status = http.StatusBadRequest
	case fail:
		status = s.cfg.FailStatus
	}
	if !s.wait(r) {
		status = StatusClientClosed
	} else if status == http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", id+"#"+strconv.Itoa(n))
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "request": n})
	} else {
		http.Error(w, "webhooksink: simulated "+http.StatusText(status), status)
	}
	s.end(Record{ID: id, Start: start, End: time.Now(), Status: status})
}

// begin registers the start of a request for id and decides whether it
// fails. It returns the request's number for id, from 1.
func (s *Sink) begin(id string) (n int, fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts[id]++
	s.inflight[id]++
	if s.inflight[id] > 1 && id != "" {
		s.overlaps[id] = true
	}
	n = s.attempts[id]
	fail = n <= s.cfg.FailFirst || (s.cfg.FailRate > 0 && s.rng.Float64() < s.cfg.FailRate)
	return n, fail
}

// wait sleeps for the configured delay; it reports false when the client
// went away first.
func (s *Sink) wait(r *http.Request) bool {
	if s.cfg.Delay <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(s.cfg.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// end records a finished request.
func (s *Sink) end(rec Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight[rec.ID]--
	if s.inflight[rec.ID] == 0 {
		delete(s.inflight, rec.ID)
	}
	if rec.Status/100 == 2 {
		s.delivered[rec.ID]++
	}
	s.records = append(s.records, rec)
}
