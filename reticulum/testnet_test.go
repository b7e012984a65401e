package reticulum

import (
	"sync"
	"testing"
	"time"
)

// tap records the packets that reach a pipe end.
type tap struct {
	mu   sync.Mutex
	pkts []*Packet
}

func newTap(end *PipeEnd) *tap {
	tp := &tap{}
	end.Start(func(raw []byte) {
		p, err := ParsePacket(raw)
		if err != nil {
			return
		}
		tp.mu.Lock()
		tp.pkts = append(tp.pkts, p)
		tp.mu.Unlock()
	})
	return tp
}

// withContext returns the first recorded packet with context ctx, or nil.
func (tp *tap) withContext(ctx uint8) *Packet {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for _, p := range tp.pkts {
		if p.Context == ctx {
			return p
		}
	}
	return nil
}

// fakeClock is a Clock whose time only moves with Advance, which also fires
// its tickers.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*fakeTicker
}

type fakeTicker struct{ c chan time.Time }

func (f *fakeTicker) C() <-chan time.Time { return f.c }
func (f *fakeTicker) Stop()               {}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(time.Duration) Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTicker{c: make(chan time.Time)}
	c.tickers = append(c.tickers, t)
	return t
}

// Advance moves time on and runs one housekeeping tick of every node,
// returning once each tick was taken.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now, ts := c.now, append([]*fakeTicker{}, c.tickers...)
	c.mu.Unlock()
	for _, t := range ts {
		t.c <- now
	}
}

// testNode starts a node on ifc with the given clock.
func testNode(t *testing.T, ifc Interface, clock Clock) *Node {
	t.Helper()
	n, err := NewNode(Config{Interfaces: []Interface{ifc}, Clock: clock, StorePath: ""})
	if err != nil {
		t.Fatal(err)
	}
	n.Start()
	t.Cleanup(func() { n.Close() })
	return n
}

// eventually polls cond for up to 5 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
