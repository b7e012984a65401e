package reticulum

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"
)

// TestLateProofIsSeenAfterTheReceiptFailed: a proof that comes after its
// receipt's deadline leaves the receipt failed but closes Proved, within
// LateProofWindow; one that comes later still is not seen.
func TestLateProofIsSeenAfterTheReceiptFailed(t *testing.T) {
	clock := newFakeClock()
	a, b, d, _ := twoNodes(t, clock, LinkHandlers{})
	d.SetProveAll(false)
	received := make(chan *Packet, 2)
	d.OnPacket(func(_ []byte, p *Packet) { received <- p })
	prove := func(p *Packet) {
		t.Helper()
		proof, err := proofPacket(d.Identity().Sign, p, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.send(proof, nil); err != nil {
			t.Fatal(err)
		}
	}
	r1, err := a.SendPacket(d.Hash(), []byte("one"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p1 := <-received
	clock.Advance(11 * time.Second)
	if s := r1.Wait(ctxT(t)); s != ReceiptFailed {
		t.Fatalf("receipt %v, want failed", s)
	}
	prove(p1)
	select {
	case <-r1.Proved():
	case <-time.After(5 * time.Second):
		t.Fatal("a late proof was not seen")
	}
	if r1.Status() != ReceiptFailed {
		t.Errorf("a late proof changed the receipt to %v", r1.Status())
	}

	r2, err := a.SendPacket(d.Hash(), []byte("two"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p2 := <-received
	clock.Advance(11 * time.Second)
	clock.Advance(LateProofWindow)
	prove(p2)
	time.Sleep(50 * time.Millisecond)
	select {
	case <-r2.Proved():
		t.Fatal("a proof after the late window was seen")
	default:
	}
}

// TestPacketWithoutAPathGoesOnEveryInterface: a destination whose
// identity is known but whose path was dropped still gets a packet, sent
// on every interface, and proves it.
func TestPacketWithoutAPathGoesOnEveryInterface(t *testing.T) {
	a, _, d, got := twoNodes(t, SystemClock{}, LinkHandlers{})
	a.Store().DropPath(d.Hash())
	if a.HasPath(d.Hash()) {
		t.Fatal("path not dropped")
	}
	r, err := a.SendPacket(d.Hash(), []byte("pathless"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Wait(ctxT(t)); s != ReceiptDelivered || string(<-got) != "pathless" {
		t.Fatalf("receipt %v", s)
	}
}

// TestResourceSentBeforeItsProof: Sent closes once every part went out,
// which is no later than the receiver's proof; a declined resource's
// Sent closes when it concludes.
func TestResourceSentBeforeItsProof(t *testing.T) {
	var reject atomic.Bool
	h := LinkHandlers{ResourceFilter: func(*Link, int) bool { return !reject.Load() }}
	a, _, d, _ := twoNodes(t, SystemClock{}, h)
	l, err := a.OpenLink(ctxT(t), d.Hash(), LinkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.SendResource(bytes.Repeat([]byte("x"), 3000))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-res.Sent():
	case <-time.After(5 * time.Second):
		t.Fatal("parts not sent")
	}
	if s := res.Wait(ctxT(t)); s != ResourceComplete {
		t.Fatalf("resource %v", s)
	}
	reject.Store(true)
	res2, err := l.SendResource(bytes.Repeat([]byte("y"), 3000))
	if err != nil {
		t.Fatal(err)
	}
	if s := res2.Wait(ctxT(t)); s != ResourceRejected {
		t.Fatalf("resource %v, want rejected", s)
	}
	select {
	case <-res2.Sent():
	default:
		t.Error("Sent of a concluded resource is open")
	}
}
