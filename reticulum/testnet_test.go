package reticulum

import (
	"sync"
	"testing"
	"time"
)

// memIface is an in-memory interface: Send hands packets to peer (if any)
// asynchronously and records them.
type memIface struct {
	name string
	mu   sync.Mutex
	recv func([]byte)
	peer *memIface
	sent [][]byte
	down bool
	q    chan []byte
}

func newMemPair() (*memIface, *memIface) {
	a := &memIface{name: "mem-a", q: make(chan []byte, 1024)}
	b := &memIface{name: "mem-b", q: make(chan []byte, 1024)}
	a.peer, b.peer = b, a
	return a, b
}

func (m *memIface) Name() string { return m.name }

func (m *memIface) Start(recv func([]byte)) {
	m.mu.Lock()
	m.recv = recv
	m.mu.Unlock()
	go func() {
		for raw := range m.q {
			recv(raw)
		}
	}()
}

func (m *memIface) Send(raw []byte) error {
	m.mu.Lock()
	if m.down {
		m.mu.Unlock()
		return ErrInterfaceDown
	}
	m.sent = append(m.sent, append([]byte{}, raw...))
	peer := m.peer
	m.mu.Unlock()
	if peer != nil {
		peer.deliver(append([]byte{}, raw...))
	}
	return nil
}

func (m *memIface) deliver(raw []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.down {
		m.q <- raw
	}
}

func (m *memIface) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.down {
		m.down = true
		close(m.q)
	}
	return nil
}

// sentPackets returns the packets sent so far, parsed.
func (m *memIface) sentPackets(t *testing.T) []*Packet {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Packet
	for _, raw := range m.sent {
		p, err := ParsePacket(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
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
