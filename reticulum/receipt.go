package reticulum

import (
	"context"
	"sync"
	"time"
)

// ReceiptStatus is the state of a sent packet's delivery.
type ReceiptStatus int

// Receipt states.
const (
	ReceiptSent      ReceiptStatus = iota // waiting for a proof
	ReceiptDelivered                      // a valid proof came back
	ReceiptFailed                         // no proof before the timeout, or the link closed
)

func (s ReceiptStatus) String() string {
	switch s {
	case ReceiptSent:
		return "sent"
	case ReceiptDelivered:
		return "delivered"
	}
	return "failed"
}

// Receipt tracks the proof of one sent packet. It concludes once: delivered
// when a valid proof of the packet arrives, failed at its deadline. A
// proof of a packet sent to a destination (not over a link) that arrives
// after the deadline, within LateProofWindow, is still seen: Proved closes
// while the receipt stays failed.
type Receipt struct {
	// PacketHash is the full hash of the sent packet, which the proof signs.
	PacketHash [FullHashLen]byte

	hash     [FullHashLen]byte
	verify   func(sig, msg []byte) bool
	deadline time.Time

	once      sync.Once
	proveOnce sync.Once
	mu        sync.Mutex
	status    ReceiptStatus
	at        time.Time
	done      chan struct{}
	proved    chan struct{}
	now       func() time.Time
}

// LateProofWindow is how long after its deadline a failed receipt of a
// packet sent to a destination still takes its proof (Receipt.Proved):
// the reference forgets it at once, but a sender that retries wants to
// know that an earlier copy arrived after all.
const LateProofWindow = 10 * time.Minute

func newReceipt(p *Packet, verify func(sig, msg []byte) bool, now func() time.Time, timeout time.Duration) *Receipt {
	h := p.Hash()
	return &Receipt{PacketHash: h, hash: h, verify: verify, deadline: now().Add(timeout),
		done: make(chan struct{}), proved: make(chan struct{}), now: now}
}

func (r *Receipt) conclude(s ReceiptStatus) {
	r.once.Do(func() {
		r.mu.Lock()
		r.status, r.at = s, r.now()
		r.mu.Unlock()
		close(r.done)
	})
	if s == ReceiptDelivered {
		r.markProved()
	}
}

// markProved records that a valid proof arrived, in time or late.
func (r *Receipt) markProved() { r.proveOnce.Do(func() { close(r.proved) }) }

// Done is closed when the receipt concludes.
func (r *Receipt) Done() <-chan struct{} { return r.done }

// Proved is closed when a valid proof of the packet arrives: before the
// deadline (the receipt is then delivered), or, for a packet sent to a
// destination, up to LateProofWindow after it (the receipt stays failed).
func (r *Receipt) Proved() <-chan struct{} { return r.proved }

// Status returns the current state.
func (r *Receipt) Status() ReceiptStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// Deadline is when the receipt fails if no proof has come.
func (r *Receipt) Deadline() time.Time { return r.deadline }

// Wait blocks until the receipt concludes or ctx ends, and returns the state
// (ReceiptSent if ctx ended first).
func (r *Receipt) Wait(ctx context.Context) ReceiptStatus {
	select {
	case <-r.done:
	case <-ctx.Done():
	}
	return r.Status()
}
