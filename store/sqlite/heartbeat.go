package sqlite

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// nodeBeats holds the nodes' heartbeats (Store.Heartbeat) in memory: one
// process at a time writes the database (lock_unix.go), so a node of a
// process before this one has no heartbeat here, and the lanes it kept are
// taken over by the first claim of a live node that finds them. (The kept
// routes' lanes, whose owner is in memory too, lose their flights from
// before at the first recount: see recount.)
type nodeBeats struct {
	mu    sync.Mutex
	until map[string]int64 // node -> the end of its heartbeat, unix ms
	// orphans are the writer's orphans (keptLanes.orphans) as of its last
	// commit, for the reads of the lanes.
	orphans atomic.Pointer[map[string]bool]
}

// beatsKept is how long a heartbeat that lapsed is remembered.
const beatsKept = 24 * time.Hour

// beat records node as alive until until (unix ms), and forgets the nodes
// whose heartbeat lapsed long before.
func (b *nodeBeats) beat(node string, now, until int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.until == nil {
		b.until = make(map[string]int64)
	}
	b.until[node] = until
	for n, u := range b.until {
		if u < now-beatsKept.Milliseconds() {
			delete(b.until, n)
		}
	}
}

// alive reports whether node's heartbeat lasts at now (unix ms); no node
// (the flights of claims made without a ClaimAhead) is always alive.
func (b *nodeBeats) alive(node string, now int64) bool {
	if node == "" {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.until[node] > now
}

// Heartbeat records that node is alive for ttl from now.
func (s *Store) Heartbeat(_ context.Context, node string, now time.Time, ttl time.Duration) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return wrap("heartbeat", errClosed)
	}
	s.beats.beat(node, unixms.From(now), unixms.From(now.Add(ttl)))
	return nil
}

// takeOver makes the messages in flight of lane l, whose node's heartbeat
// lapsed, orphans, which hold no slot of the lane (the lapsed node's calls
// ended with it) and whose end frees none. It returns how many became
// orphans.
func (tx *wtx) takeOver(l herald.LaneRef) (int, error) {
	rows, err := tx.st.laneFlightIDs.Query(l.Route, l.Lane)
	ids, err := collect(rows, err, func(sc rowScanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if tx.kept.orphan(id, l) {
			n++
		}
	}
	return n, nil
}

// publishOrphans makes the orphans, when they changed, those the reads
// see. The writer calls it after each commit.
func (tx *wtx) publishOrphans() {
	if !tx.kept.orphaned {
		return
	}
	ids := make(map[string]bool, len(tx.kept.orphans))
	for id := range tx.kept.orphans {
		ids[id] = true
	}
	tx.beats.orphans.Store(&ids)
	tx.kept.orphaned = false
}

// holding returns ids, the messages in flight of a lane, without the
// orphans (takeOver), which hold none of its slots.
func (b *nodeBeats) holding(ids []string) []string {
	orphans := b.orphans.Load()
	if orphans == nil || len(*orphans) == 0 {
		return ids
	}
	return slices.DeleteFunc(ids, func(id string) bool { return (*orphans)[id] })
}
