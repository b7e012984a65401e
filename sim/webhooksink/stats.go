package webhooksink

import (
	"maps"
	"slices"
	"time"
)

// Stats counts what the sink received.
type Stats struct {
	Requests   int `json:"requests"`   // finished requests
	Delivered  int `json:"delivered"`  // requests answered 2xx
	Unique     int `json:"unique"`     // ids delivered at least once
	Duplicates int `json:"duplicates"` // deliveries beyond the first of each id
}

// Record is one finished request.
type Record struct {
	ID     string    `json:"id"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Status int       `json:"status"`
}

// Stats returns the counts so far.
func (s *Sink) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Requests: len(s.records), Unique: len(s.delivered)}
	for _, n := range s.delivered {
		st.Delivered += n
	}
	st.Duplicates = st.Delivered - st.Unique
	return st
}

// Delivered returns, per id, how many of its requests were answered 2xx.
func (s *Sink) Delivered() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.delivered)
}

// Records returns every finished request in the order they finished.
func (s *Sink) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records)
}

// Overlaps returns, sorted, the ids that had two requests in flight at the
// same time: a message sent again before its previous send finished.
func (s *Sink) Overlaps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.overlaps))
}
