package reticulum

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// twoNodes connects two nodes back to back; b hosts a destination that
// proves packets and accepts links, and has announced it to a.
func twoNodes(t *testing.T, clock Clock, h LinkHandlers) (a, b *Node, d *Destination, got chan []byte) {
	t.Helper()
	ia, ib := NewPipe("a", "b")
	a, b = testNode(t, ia, clock), testNode(t, ib, clock)
	id, _ := NewIdentity()
	d, err := b.RegisterDestination(id, "herald", "test")
	if err != nil {
		t.Fatal(err)
	}
	got = make(chan []byte, 4)
	d.SetProveAll(true)
	d.OnPacket(func(data []byte, _ *Packet) { got <- data })
	d.AcceptLinks(func(l *Link) { l.SetHandlers(h) })
	d.SetAppData(func() []byte { return []byte("app") })
	if err := d.Announce(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.WaitForPath(ctx, d.Hash()); err != nil {
		t.Fatal(err)
	}
	return a, b, d, got
}

func TestSinglePacketAndProof(t *testing.T) {
	a, _, d, got := twoNodes(t, SystemClock{}, LinkHandlers{})
	if hops, _ := a.HopsTo(d.Hash()); hops != 1 {
		t.Errorf("hops %d, want 1", hops)
	}
	if _, app, err := a.Recall(d.Hash()); err != nil || string(app) != "app" {
		t.Errorf("recall: %q %v", app, err)
	}
	r, err := a.SendPacket(d.Hash(), []byte("hello"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Wait(ctxT(t)); s != ReceiptDelivered {
		t.Fatalf("receipt %v", s)
	}
	if string(<-got) != "hello" {
		t.Fatal("wrong data")
	}
	unknown := DestinationHash(nil, "nobody")
	if _, err := a.SendPacket(unknown, []byte("x"), 0); err != ErrNoPath {
		t.Errorf("unknown destination: %v, want ErrNoPath", err)
	}
}

func TestReceiptTimesOutWithoutProof(t *testing.T) {
	clock := newFakeClock()
	a, _, d, _ := twoNodes(t, clock, LinkHandlers{})
	d.SetProveAll(false)
	r, err := a.SendPacket(d.Hash(), []byte("hello"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second)
	if r.Status() != ReceiptSent {
		t.Fatal("concluded early")
	}
	clock.Advance(6 * time.Second)
	if s := r.Wait(ctxT(t)); s != ReceiptFailed {
		t.Fatalf("receipt %v, want failed", s)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLinkPacketResourceAndClose(t *testing.T) {
	var mu sync.Mutex
	var packets, resources [][]byte
	var remote *Identity
	closed := make(chan CloseReason, 1)
	h := LinkHandlers{
		Packet: func(l *Link, data []byte, p *Packet) {
			mu.Lock()
			packets = append(packets, data)
			mu.Unlock()
			l.Prove(p)
		},
		Resource:   func(_ *Link, data []byte) { mu.Lock(); resources = append(resources, data); mu.Unlock() },
		Identified: func(_ *Link, id *Identity) { mu.Lock(); remote = id; mu.Unlock() },
		Closed:     func(_ *Link, r CloseReason) { closed <- r },
	}
	a, _, d, _ := twoNodes(t, SystemClock{}, h)
	l, err := a.OpenLink(ctxT(t), d.Hash(), LinkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Send([]byte("over the link"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Wait(ctxT(t)); s != ReceiptDelivered {
		t.Fatalf("link receipt %v", s)
	}
	me, _ := NewIdentity()
	if err := l.Identify(me); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 40000/16) // several hashmap segments
	res, err := l.SendResource(big)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Wait(ctxT(t)); s != ResourceComplete {
		t.Fatalf("resource %v", s)
	}
	// The receiver proves a resource before handing it over, as the
	// reference does.
	eventually(t, "the resource handed over", func() bool { mu.Lock(); defer mu.Unlock(); return len(resources) == 1 })
	mu.Lock()
	if len(packets) != 1 || string(packets[0]) != "over the link" || len(resources) != 1 || !bytes.Equal(resources[0], big) {
		t.Errorf("got %d packets, %d resources", len(packets), len(resources))
	}
	if remote == nil || remote.Hash() != me.Hash() {
		t.Error("identify not seen")
	}
	mu.Unlock()
	l.Close()
	select {
	case r := <-closed:
		if r != CloseInitiatorClosed {
			t.Errorf("close reason %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("peer did not see the teardown")
	}
}

func TestResourceRejected(t *testing.T) {
	a, _, d, _ := twoNodes(t, SystemClock{}, LinkHandlers{ResourceFilter: func(*Link, int) bool { return false }})
	l, err := a.OpenLink(ctxT(t), d.Hash(), LinkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.SendResource(make([]byte, 3000))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Wait(ctxT(t)); s != ResourceRejected {
		t.Fatalf("resource %v, want rejected", s)
	}
}

func TestLinkInactivityAndEstablishmentTimeouts(t *testing.T) {
	clock := newFakeClock()
	a, b, d, _ := twoNodes(t, clock, LinkHandlers{})
	l, err := a.OpenLink(ctxT(t), d.Hash(), LinkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	l.SetInactivityTimeout(3 * time.Minute)
	clock.Advance(2 * time.Minute)
	if l.Status() == LinkClosed {
		t.Fatal("closed before the inactivity timeout")
	}
	clock.Advance(90 * time.Second)
	<-l.Closed()
	if l.CloseReason() != CloseInitiatorClosed {
		t.Errorf("reason %v", l.CloseReason())
	}

	// A destination that no longer answers: the link request times out.
	d.Deregister()
	done := make(chan error, 1)
	go func() {
		_, err := a.OpenLink(context.Background(), d.Hash(), LinkHandlers{})
		done <- err
	}()
	eventually(t, "a pending link", func() bool { a.mu.Lock(); defer a.mu.Unlock(); return len(a.links) == 1 })
	clock.Advance(13 * time.Second)
	if err := <-done; err != ErrLinkFailed {
		t.Fatalf("open: %v, want ErrLinkFailed", err)
	}
	_ = b
}

func TestStoreSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.json")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := NewIdentity()
	dest := DestinationHash(id, "lxmf", "delivery")
	now := time.Now()
	s.SetPath(dest, PathEntry{NextHop: dest, Hops: 3, Interface: "tcp:x", Updated: now, Expires: now.Add(time.Hour)})
	s.Remember(dest, id.PublicKey(), []byte{0x91, 0xc0}, bytes.Repeat([]byte{7}, 32), now)
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := s2.Path(dest, now)
	k, ok2 := s2.Known(dest)
	if !ok || !ok2 || p.Hops != 3 || p.Interface != "tcp:x" || !bytes.Equal(k.PublicKey, id.PublicKey()) || !bytes.Equal(k.AppData, []byte{0x91, 0xc0}) || len(k.Ratchet) != 32 {
		t.Fatalf("reloaded %+v %+v", p, k)
	}
	if _, ok := s2.Path(dest, now.Add(2*time.Hour)); ok {
		t.Error("expired path still returned")
	}
}

func TestPathRequestAnsweredByDestination(t *testing.T) {
	ia, ib := NewPipe("a", "b")
	a, b := testNode(t, ia, SystemClock{}), testNode(t, ib, SystemClock{})
	id, _ := NewIdentity()
	d, err := b.RegisterDestination(id, "herald", "quiet")
	if err != nil {
		t.Fatal(err)
	}
	responses := make(chan bool, 1)
	a.OnAnnounce(func(an *Announce) { responses <- an.PathResponse })
	if a.HasPath(d.Hash()) {
		t.Fatal("path known before any announce")
	}
	if err := a.RequestPath(d.Hash()); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitForPath(ctxT(t), d.Hash()); err != nil {
		t.Fatal(err)
	}
	if !<-responses {
		t.Error("answer was not a path response")
	}
}

func TestKeepaliveAndStaleTeardown(t *testing.T) {
	clock := newFakeClock()
	ia, ib := NewPipe("a", "b")
	a, b := testNode(t, ia, clock), testNode(t, ib, clock)
	id, _ := NewIdentity()
	d, _ := b.RegisterDestination(id, "herald", "ka")
	d.AcceptLinks(nil)
	d.Announce()
	if err := a.WaitForPath(ctxT(t), d.Hash()); err != nil {
		t.Fatal(err)
	}
	l, err := a.OpenLink(ctxT(t), d.Hash(), LinkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	var peer *Link
	eventually(t, "the responder's link", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		peer = b.links[l.ID()]
		return peer != nil && peer.Status() == LinkActive
	})
	// The RTT is tiny, so the keep-alive interval is the minimum, 5 s.
	for i := 0; i < 6; i++ {
		clock.Advance(5 * time.Second)
		time.Sleep(20 * time.Millisecond) // let the keep-alive and its answer cross
	}
	if l.Status() != LinkActive || peer.Status() != LinkActive {
		t.Fatalf("link not kept alive: %v / %v", l.Status(), peer.Status())
	}
	// The responder goes silent: the initiator's link goes stale, then times out.
	ib.SetDown(true)
	for i := 0; i < 8 && l.Status() != LinkClosed; i++ {
		clock.Advance(5 * time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	if l.Status() != LinkClosed || l.CloseReason() != CloseTimeout {
		t.Fatalf("status %v reason %v, want closed by timeout", l.Status(), l.CloseReason())
	}
}
