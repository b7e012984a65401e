package reticulum

import (
	"context"
	"strings"
	"testing"
	"time"

	rns "github.com/heraldmq/herald/reticulum"
	"github.com/heraldmq/herald/reticulum/lxmf"
)

const patience = 10 * time.Second

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	return ctx
}

func startSim(t *testing.T) *Sim {
	t.Helper()
	s, err := Start(Config{Listen: "127.0.0.1:0", Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// client is a Reticulum node with an LXMF router on a TCP client
// interface to the simulator, as herald's carrier is.
type client struct {
	node   *rns.Node
	router *lxmf.Router
	got    chan *lxmf.Received
}

func newClient(t *testing.T, s *Sim) *client {
	t.Helper()
	tc := rns.NewTCPClient(s.Addr())
	tc.MinBackoff = 10 * time.Millisecond
	n, err := rns.NewNode(rns.Config{Interfaces: []rns.Interface{tc}})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := rns.NewIdentity()
	c := &client{node: n, got: make(chan *lxmf.Received, 8)}
	if c.router, err = lxmf.NewRouter(n, lxmf.RouterConfig{Identity: id, DisplayName: "client", OnMessage: func(m *lxmf.Received) { c.got <- m }}); err != nil {
		t.Fatal(err)
	}
	n.Start() // announces on connection
	t.Cleanup(func() { n.Close() })
	eventually(t, "the client's announce at the transport node", func() bool { return s.HasPath(c.router.Hash()) })
	return c
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pathTo requests a path from the transport node and waits for it.
func (c *client) pathTo(t *testing.T, dest rns.Hash) {
	t.Helper()
	if err := c.node.RequestPath(dest); err != nil {
		t.Fatal(err)
	}
	if err := c.node.WaitForPath(ctxT(t), dest); err != nil {
		t.Fatalf("no path to %s: %v", dest, err)
	}
}

// TestClientDeliversThroughTheTransportNode: a TCP client learns a peer's
// path two hops away (through the transport node) and delivers to it by
// every method: opportunistic, direct as a packet and as a resource, and
// propagated through a propagation node; each arrives once, proved.
func TestClientDeliversThroughTheTransportNode(t *testing.T) {
	s := startSim(t)
	peer, err := s.AddPeer(PeerConfig{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	pn, err := s.AddPropagationNode(PropagationNodeConfig{Name: "pn", StampCost: 4})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.pathTo(t, peer.Address())
	c.pathTo(t, pn.Address())
	if hops, _ := c.node.HopsTo(peer.Address()); hops != 2 {
		t.Errorf("hops to the peer %d, want 2 (through the transport node)", hops)
	}
	sends := []struct {
		content string
		send    func(context.Context, *lxmf.Message) lxmf.Result
		want    lxmf.Outcome
		repr    string
	}{
		{"opportunistic", c.router.SendOpportunistic, lxmf.Delivered, "packet"},
		{"direct", c.router.SendDirect, lxmf.Delivered, "packet"},
		{strings.Repeat("r", 3000), c.router.SendDirect, lxmf.Delivered, "resource"},
		{"propagated", func(ctx context.Context, m *lxmf.Message) lxmf.Result {
			return c.router.SendPropagated(ctx, pn.Address(), m)
		}, lxmf.Accepted, "packet"},
	}
	for _, sc := range sends {
		m := c.router.NewMessage(peer.Address(), []byte("t"), []byte(sc.content), nil)
		if res := sc.send(ctxT(t), m); res.Outcome != sc.want || res.Representation != sc.repr {
			t.Fatalf("%.20s: %+v, want %s as a %s", sc.content, res, sc.want, sc.repr)
		}
	}
	got := peer.Received()
	if len(got) != 3 || got[0].Method != "opportunistic" || got[1].Method != "direct" || got[2].Size != 3000 {
		t.Fatalf("the peer received %+v", got)
	}
	if ups := pn.Uploads(); len(ups) != 1 || ups[0].Destination != peer.Address().String() {
		t.Fatalf("the propagation node took %+v", ups)
	}
	if st := s.Stats(); st.PathAnswers < 2 || st.Forwarded == 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestPeersRejectAndComeOnlineLate: a peer that declines resources is a
// rejection; a propagation node that refuses the stamp too; a peer that
// is offline has no path (the transport node does not answer for it)
// until it comes online and announces, which reaches the client.
func TestPeersRejectAndComeOnlineLate(t *testing.T) {
	s := startSim(t)
	rejecting, err := s.AddPeer(PeerConfig{Name: "bob", Reject: true})
	if err != nil {
		t.Fatal(err)
	}
	refusing, err := s.AddPropagationNode(PropagationNodeConfig{Name: "strict", StampCost: 4, Reject: true})
	if err != nil {
		t.Fatal(err)
	}
	late, err := s.AddPeer(PeerConfig{Name: "carol", Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.pathTo(t, rejecting.Address())
	c.pathTo(t, refusing.Address())
	big := c.router.NewMessage(rejecting.Address(), nil, []byte(strings.Repeat("x", 3000)), nil)
	if res := c.router.SendDirect(ctxT(t), big); res.Outcome != lxmf.Rejected {
		t.Fatalf("a declined resource: %+v, want rejected", res)
	}
	m := c.router.NewMessage(rejecting.Address(), nil, []byte("small"), nil)
	if res := c.router.SendPropagated(ctxT(t), refusing.Address(), m); res.Outcome != lxmf.Rejected || refusing.Refused() != 1 {
		t.Fatalf("a refused upload: %+v (refused %d), want rejected", res, refusing.Refused())
	}

	if err := c.node.RequestPath(late.Address()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if c.node.HasPath(late.Address()) {
		t.Fatal("a path to a peer that never announced")
	}
	if err := late.Online(); err != nil {
		t.Fatal(err)
	}
	if err := c.node.WaitForPath(ctxT(t), late.Address()); err != nil {
		t.Fatal("the late peer's announce did not reach the client")
	}
	m = c.router.NewMessage(late.Address(), nil, []byte("at last"), nil)
	if res := c.router.SendDirect(ctxT(t), m); res.Outcome != lxmf.Delivered {
		t.Fatalf("to the late peer: %+v", res)
	}
}

// TestPeerSendsToTheClient: a peer's message reaches a TCP client, by
// either method, through the transport node, and is proved.
func TestPeerSendsToTheClient(t *testing.T) {
	s := startSim(t)
	peer, err := s.AddPeer(PeerConfig{Name: "dave"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.pathTo(t, peer.Address()) // its announce: the key that checks the messages' signatures
	eventually(t, "the client's path at the peer", func() bool { return peer.node.HasPath(c.router.Hash()) })
	for _, method := range []int{lxmf.MethodOpportunistic, lxmf.MethodDirect} {
		if err := peer.Send(ctxT(t), c.router.Hash(), "hi", "from the mesh", method); err != nil {
			t.Fatalf("method %d: %v", method, err)
		}
		select {
		case m := <-c.got:
			if string(m.Content) != "from the mesh" || m.Source != peer.Address() || !m.SignatureValid {
				t.Errorf("received %+v", m)
			}
		case <-time.After(patience):
			t.Fatal("nothing received")
		}
	}
}

// TestOfflinePeerIsSilent: a peer that went offline keeps its (stale)
// path at the transport node, so the path request is answered, but
// nothing it is sent is proved.
func TestOfflinePeerIsSilent(t *testing.T) {
	s := startSim(t)
	peer, err := s.AddPeer(PeerConfig{Name: "erin"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.pathTo(t, peer.Address())
	peer.Offline()
	m := c.router.NewMessage(peer.Address(), nil, []byte("anyone?"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if res := c.router.SendOpportunistic(ctx, m); res.Outcome == lxmf.Delivered {
		t.Fatal("an offline peer proved a message")
	}
	if len(peer.Received()) != 0 {
		t.Fatal("an offline peer received a message")
	}
}
