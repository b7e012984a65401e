package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldmq/herald/client"
	simr "github.com/heraldmq/herald/sim/reticulum"
)

// demoLateAfter is when the demo's late LXMF recipient comes online: its
// message waits for its path until then.
const demoLateAfter = 3 * time.Second

// demoMesh is the demo's Reticulum network: a transport node with two
// LXMF recipients (one coming online late) and a propagation node, and
// the directory of herald's identity on it.
type demoMesh struct {
	sim         *simr.Sim
	alice, late *simr.Peer
	pn          *simr.PropagationNode
	dir         string
}

// startDemoMesh starts the network; it runs, and its late recipient comes
// online, until ctx ends.
func startDemoMesh(ctx context.Context) (*demoMesh, error) {
	s, err := simr.Start(simr.Config{Listen: "127.0.0.1:0", Seed: demoSeed})
	if err != nil {
		return nil, err
	}
	m := &demoMesh{sim: s}
	defer func() {
		if m.dir == "" {
			s.Close()
		}
	}()
	if m.alice, err = s.AddPeer(simr.PeerConfig{Name: "alice"}); err != nil {
		return nil, err
	}
	if m.late, err = s.AddPeer(simr.PeerConfig{Name: "late", Offline: true}); err != nil {
		return nil, err
	}
	if m.pn, err = s.AddPropagationNode(simr.PropagationNodeConfig{Name: "pn", StampCost: 8}); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "herald-demo-lxmf-")
	if err != nil {
		return nil, err
	}
	m.dir = dir
	timer := time.AfterFunc(demoLateAfter, func() { m.late.Online() })
	go func() {
		<-ctx.Done()
		timer.Stop()
		s.Close()
		os.RemoveAll(dir)
	}()
	return m, nil
}

// routes are the demo's lxmf routes: mesh (direct) and mesh-pn
// (propagated), on one identity.
func (m *demoMesh) routes() string {
	id := filepath.Join(m.dir, "identity")
	return fmt.Sprintf(`  - name: mesh
    carrier: lxmf
    reticulum: {tcp: "%[1]s"}
    identity_file: %[2]s
    display_name: herald demo
  - name: mesh-pn
    carrier: lxmf
    reticulum: {tcp: "%[1]s"}
    identity_file: %[2]s
    display_name: herald demo
    method: propagated
    propagation_node: %[3]s
`, m.sim.Addr(), id, m.pn.Address())
}

// sends are the demo's LXMF messages: to alice directly, as a packet and
// as a resource (3,000 bytes), through the propagation node, and to the
// recipient that comes online late.
func (m *demoMesh) sends() []demoSend {
	alice, late := m.alice.Address().String(), m.late.Address().String()
	return []demoSend{
		{route: "mesh", target: alice, text: "Pump 3 stopped at 14:02", params: map[string]string{"title": "Alarm"}},
		{route: "mesh", target: alice, text: strings.Repeat("log line of the pump controller\n", 94), params: map[string]string{"title": "Log"}},
		{route: "mesh-pn", target: alice, text: "Kept for you at the propagation node", params: map[string]string{"title": "Stored"}},
		{route: "mesh", target: late, text: "Sent once you came online", params: map[string]string{"title": "Late"}},
	}
}

// print says what the network did and what became of the LXMF messages.
func (m *demoMesh) print(ctx context.Context, out io.Writer, api *client.Client, ids []string) error {
	st := m.sim.Stats()
	fmt.Fprintf(out, "\nLXMF: alice received %d messages, the late recipient %d (online after %v), the propagation node took %d; the transport node answered %d of %d path requests and forwarded %d packets\n",
		len(m.alice.Received()), len(m.late.Received()), demoLateAfter, len(m.pn.Uploads()), st.PathAnswers, st.PathRequests, st.Forwarded)
	for i, id := range ids {
		v, err := api.Get(ctx, id)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("  #%-3d to %s…  %s, attempt %d", i+1, v.Target[:8], v.Status, v.Attempt)
		if v.Result != nil {
			line += fmt.Sprintf(" (%s, %s; LXMF hash %s…)", v.Result["method"], v.Result["representation"], v.ExternalID[:12])
		}
		fmt.Fprintln(out, line)
	}
	return nil
}
