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
// when a valid proof of the packet arrives, failed at its deadline.
type Receipt struct {
	// PacketHash is the full hash of the sent packet, which the proof signs.
	PacketHash [FullHashLen]byte

	hash     [FullHashLen]byte
	verify   func(sig, msg []byte) bool
	deadline time.Time

	once   sync.Once
	mu     sync.Mutex
	status ReceiptStatus
	at     time.Time
	done   chan struct{}
	now    func() time.Time
}

func newReceipt(p *Packet, verify func(sig, msg []byte) bool, now func() time.Time, timeout time.Duration) *Receipt {
	h := p.Hash()
	return &Receipt{PacketHash: h, hash: h, verify: verify, deadline: now().Add(timeout), done: make(chan struct{}), now: now}
}

func (r *Receipt) conclude(s ReceiptStatus) {
	r.once.Do(func() {
		r.mu.Lock()
		r.status, r.at = s, r.now()
		r.mu.Unlock()
		close(r.done)
	})
}

// Done is closed when the receipt concludes.
func (r *Receipt) Done() <-chan struct{} { return r.done }

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
