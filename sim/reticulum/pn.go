package reticulum

import (
	"encoding/hex"
	"sync"
	"time"

	rns "github.com/heraldmq/herald/reticulum"
	"github.com/heraldmq/herald/reticulum/lxmf"
	"github.com/vmihailenco/msgpack/v5"
)

// PropagationNodeConfig configures an LXMF propagation node of the
// simulator.
type PropagationNodeConfig struct {
	// Name names the node (its identity is drawn from it and the seed) and
	// is announced in its metadata.
	Name string
	// StampCost is the propagation stamp cost it announces and requires
	// (the reference's default is 16, with a flexibility of 3).
	StampCost int
	// Reject refuses every upload as the reference refuses an invalid
	// stamp: msgpack [0xf5] over the link, then the link torn down.
	Reject bool
}

// Upload is a message a propagation node took.
type Upload struct {
	TransientID string    `json:"transient_id"` // SHA-256 of the encrypted message, hex
	Destination string    `json:"destination"`  // the recipient's address, hex
	StampValue  int       `json:"stamp_value"`
	At          time.Time `json:"at"`
}

// PropagationNode is an LXMF propagation node attached to the simulator's
// transport node: an lxmf.propagation destination that takes uploads over
// links, a message per packet or resource, as the reference's node takes
// a client's: it checks the propagation stamp, proves the upload when it
// is valid and refuses it otherwise.
type PropagationNode struct {
	cfg  PropagationNodeConfig
	node *rns.Node
	dest *rns.Destination

	mu      sync.Mutex
	uploads []Upload
	refused int
}

// Address is the node's lxmf.propagation hash, the propagation_node a
// route names.
func (n *PropagationNode) Address() rns.Hash { return n.dest.Hash() }

func (s *Sim) newPropagationNode(cfg PropagationNodeConfig) (*PropagationNode, error) {
	id, err := s.identity("pn:" + cfg.Name)
	if err != nil {
		return nil, err
	}
	mine, theirs := rns.NewPipe("sim:"+cfg.Name, "pn:"+cfg.Name)
	n := &PropagationNode{cfg: cfg}
	if n.node, err = rns.NewNode(rns.Config{Interfaces: []rns.Interface{mine}, Logger: s.log}); err != nil {
		return nil, err
	}
	if n.dest, err = n.node.RegisterDestination(id, "lxmf", "propagation"); err != nil {
		return nil, err
	}
	app, err := propagationAppData(cfg)
	if err != nil {
		return nil, err
	}
	n.dest.SetAppData(func() []byte { return app })
	n.dest.AcceptLinks(func(l *rns.Link) {
		l.SetHandlers(rns.LinkHandlers{
			Packet: func(l *rns.Link, data []byte, p *rns.Packet) {
				if n.take(data) {
					l.Prove(p)
					return
				}
				n.refuse(l)
			},
			Resource: func(l *rns.Link, data []byte) { // proved on arrival, as the reference's resources are
				if !n.take(data) {
					n.refuse(l)
				}
			},
		})
	})
	s.attachPipe(theirs, "pn:"+cfg.Name, 0)
	n.node.Start()
	return n, n.dest.Announce()
}

// propagationAppData is what the node announces, as the reference packs
// it: [legacy, timebase, enabled, per-transfer limit (kB), sync limit
// (kB), [stamp cost, flexibility, peering cost], {name}].
func propagationAppData(cfg PropagationNodeConfig) ([]byte, error) {
	return msgpack.Marshal([]any{false, time.Now().Unix(), true, 256, 10240,
		[]any{cfg.StampCost, 0, 18}, map[int]any{0x01: []byte(cfg.Name)}})
}

// take checks an upload (msgpack [time, [message || stamp]]) and keeps it
// when its stamp meets the cost and the node accepts uploads.
func (n *PropagationNode) take(data []byte) bool {
	var c []any
	if err := msgpack.Unmarshal(data, &c); err != nil || len(c) != 2 {
		return false
	}
	msgs, _ := c[1].([]any)
	if len(msgs) != 1 || n.cfg.Reject {
		return false
	}
	tr, _ := msgs[0].([]byte)
	id, value, ok := lxmf.ValidatePropagationStamp(tr, n.cfg.StampCost)
	if !ok {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.uploads = append(n.uploads, Upload{TransientID: hex.EncodeToString(id[:]),
		Destination: hex.EncodeToString(tr[:lxmf.DestinationLength]), StampValue: value, At: time.Now()})
	return true
}

// refuse sends the reference's invalid-stamp signal and tears the link
// down.
func (n *PropagationNode) refuse(l *rns.Link) {
	n.mu.Lock()
	n.refused++
	n.mu.Unlock()
	if sig, err := msgpack.Marshal([]any{lxmf.PeerErrorInvalidStamp}); err == nil {
		l.Send(sig, 0)
	}
	l.Close()
}

// Uploads returns the messages the node took, in order.
func (n *PropagationNode) Uploads() []Upload {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Upload(nil), n.uploads...)
}

// Refused counts the uploads it refused.
func (n *PropagationNode) Refused() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.refused
}

func (n *PropagationNode) close() { n.node.Close() }
