package lxmf

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/heraldmq/herald/reticulum"
	"github.com/vmihailenco/msgpack/v5"
)

func startNode(t *testing.T, ifc reticulum.Interface) *reticulum.Node {
	t.Helper()
	n, err := reticulum.NewNode(reticulum.Config{Interfaces: []reticulum.Interface{ifc}})
	if err != nil {
		t.Fatal(err)
	}
	n.Start()
	t.Cleanup(func() { n.Close() })
	return n
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// routers returns a sender router on node a and a receiver router on node
// b (stamp cost 4) that a has a path to.
func routers(t *testing.T) (a *Router, b *Router, nb *reticulum.Node, got chan *Received) {
	t.Helper()
	ia, ib := reticulum.NewPipe("a", "b")
	na, nb := startNode(t, ia), startNode(t, ib)
	ida, _ := reticulum.NewIdentity()
	idb, _ := reticulum.NewIdentity()
	got = make(chan *Received, 8)
	a, err := NewRouter(na, RouterConfig{Identity: ida, DisplayName: "A"})
	if err != nil {
		t.Fatal(err)
	}
	b, err = NewRouter(nb, RouterConfig{Identity: idb, DisplayName: "B", StampCost: 4, OnMessage: func(m *Received) { got <- m }})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Announce(); err != nil {
		t.Fatal(err)
	}
	if err := b.Announce(); err != nil {
		t.Fatal(err)
	}
	if err := na.WaitForPath(ctxT(t), b.Hash()); err != nil {
		t.Fatal(err)
	}
	if err := nb.WaitForPath(ctxT(t), a.Hash()); err != nil {
		t.Fatal(err)
	}
	return a, b, nb, got
}

func TestRouterSendsAndReceives(t *testing.T) {
	a, b, _, got := routers(t)
	cases := []struct {
		name    string
		send    func(context.Context, *Message) Result
		content []byte
		method  int
		repr    string
	}{
		{"opportunistic", a.SendOpportunistic, []byte("hi"), MethodOpportunistic, "packet"},
		{"direct packet", a.SendDirect, []byte("hello over a link"), MethodDirect, "packet"},
		{"direct resource", a.SendDirect, bytes.Repeat([]byte("z"), 3000), MethodDirect, "resource"},
	}
	for _, c := range cases {
		m := a.NewMessage(b.Hash(), []byte(c.name), c.content, map[int]any{FieldRenderer: 2})
		res := c.send(ctxT(t), m)
		if res.Outcome != Delivered || res.Representation != c.repr {
			t.Fatalf("%s: %+v", c.name, res)
		}
		r := <-got
		if r.Hash != m.Hash || !bytes.Equal(r.Content, c.content) || r.Method != c.method || !r.SignatureValid || !r.StampValid || r.Source != a.Hash() {
			t.Errorf("%s: received %+v", c.name, r)
		}
		if v, _ := asInt(r.Fields[FieldRenderer]); v != 2 {
			t.Errorf("%s: fields %v", c.name, r.Fields)
		}
	}
	big := a.NewMessage(b.Hash(), nil, bytes.Repeat([]byte("z"), 1000), nil)
	if res := a.SendOpportunistic(ctxT(t), big); res.Outcome != Failed {
		t.Errorf("oversized opportunistic: %v", res.Outcome)
	}
	unknown, _ := reticulum.NewIdentity()
	m := a.NewMessage(reticulum.DestinationHash(unknown, "lxmf", "delivery"), nil, []byte("x"), nil)
	for _, send := range []func(context.Context, *Message) Result{a.SendOpportunistic, a.SendDirect} {
		if res := send(ctxT(t), m); res.Outcome != NoPath {
			t.Errorf("unknown destination: %v", res.Outcome)
		}
	}
}

// fakePropagationNode hosts lxmf.propagation on n: it proves uploads whose
// stamps meet cost when accept is true, else rejects them as the reference
// does (msgpack [0xf5], then teardown).
func fakePropagationNode(t *testing.T, n *reticulum.Node, cost int, accept bool, got chan []byte) reticulum.Hash {
	t.Helper()
	id, _ := reticulum.NewIdentity()
	d, err := n.RegisterDestination(id, "lxmf", "propagation")
	if err != nil {
		t.Fatal(err)
	}
	app, _ := msgpack.Marshal([]any{false, 1767225600, true, 256, 10240, []any{cost, 0, 18}, map[int]any{}})
	d.SetAppData(func() []byte { return app })
	d.AcceptLinks(func(l *reticulum.Link) {
		l.SetHandlers(reticulum.LinkHandlers{Packet: func(l *reticulum.Link, data []byte, p *reticulum.Packet) {
			var c []any
			if err := msgpack.Unmarshal(data, &c); err != nil || len(c) != 2 {
				return
			}
			msgs, _ := c[1].([]any)
			if len(msgs) != 1 {
				return
			}
			tr, _ := msgs[0].([]byte)
			if _, _, ok := ValidatePropagationStamp(tr, cost); ok && accept {
				got <- tr
				l.Prove(p)
				return
			}
			sig, _ := msgpack.Marshal([]any{PeerErrorInvalidStamp})
			l.Send(sig, 0)
			l.Close()
		}})
	})
	if err := d.Announce(); err != nil {
		t.Fatal(err)
	}
	return d.Hash()
}

func TestRouterPropagated(t *testing.T) {
	a, b, nb, got := routers(t)
	uploads := make(chan []byte, 2)
	pn := fakePropagationNode(t, nb, 3, true, uploads)
	if err := a.node.WaitForPath(ctxT(t), pn); err != nil {
		t.Fatal(err)
	}
	m := a.NewMessage(b.Hash(), []byte("t"), []byte("via the node"), nil)
	if res := a.SendPropagated(ctxT(t), pn, m); res.Outcome != Accepted {
		t.Fatalf("propagated: %+v", res)
	}
	tr := <-uploads
	// The upload decrypts to the recipient's message.
	pt, err := b.cfg.Identity.Decrypt(tr[DestinationLength : len(tr)-StampSize])
	if err != nil || !bytes.Equal(pt, m.Packed[DestinationLength:]) {
		t.Fatalf("upload does not decrypt to the message: %v", err)
	}
	select {
	case r := <-got:
		t.Fatalf("propagated message delivered directly: %v", r)
	default:
	}

	rejecting := fakePropagationNode(t, nb, 3, false, uploads)
	if err := a.node.WaitForPath(ctxT(t), rejecting); err != nil {
		t.Fatal(err)
	}
	m2 := a.NewMessage(b.Hash(), []byte("t"), []byte("refused"), nil)
	if res := a.SendPropagated(ctxT(t), rejecting, m2); res.Outcome != Rejected {
		t.Fatalf("rejected propagation: %+v", res)
	}
}

// TestBeginReturnsOnTheWire: a Begin method returns once the attempt is
// sent; its Delivery then concludes with the proof. An opportunistic
// message may go without a path when its recipient's identity is known
// (the pathless try); a direct resource's parts go out before its proof.
func TestBeginReturnsOnTheWire(t *testing.T) {
	a, b, _, got := routers(t)
	a.node.Store().DropPath(b.Hash())
	m := a.NewMessage(b.Hash(), nil, []byte("pathless"), nil)
	if d, res := a.BeginOpportunistic(ctxT(t), m, false); d != nil || res.Outcome != NoPath {
		t.Fatalf("without a path, not pathless: %v %+v", d, res)
	}
	d, res := a.BeginOpportunistic(ctxT(t), m, true)
	if d == nil {
		t.Fatalf("pathless: %+v", res)
	}
	if r := d.Wait(ctxT(t)); r.Outcome != Delivered {
		t.Fatalf("pathless: %+v", r)
	}
	<-d.Proved()
	if r := <-got; r.Hash != m.Hash {
		t.Fatalf("received %x, want %x", r.Hash, m.Hash)
	}
	if err := b.Announce(); err != nil {
		t.Fatal(err)
	}
	if err := a.node.WaitForPath(ctxT(t), b.Hash()); err != nil {
		t.Fatal(err)
	}
	big := a.NewMessage(b.Hash(), nil, bytes.Repeat([]byte("r"), 3000), nil)
	d, res = a.BeginDirect(ctxT(t), big)
	if d == nil || d.Representation != "resource" {
		t.Fatalf("direct resource: %v %+v", d, res)
	}
	select {
	case <-d.Sent():
	case <-time.After(5 * time.Second):
		t.Fatal("resource parts not sent")
	}
	if r := d.Wait(ctxT(t)); r.Outcome != Delivered {
		t.Fatalf("direct resource: %+v", r)
	}
	<-d.Proved()
	if r := <-got; r.Hash != big.Hash {
		t.Fatal("resource not received")
	}
}
