package reticulum

import (
	"encoding/json"
	"net/http"
)

// PeerView is a peer as the simulator's HTTP records show it.
type PeerView struct {
	Name     string     `json:"name"`
	Address  string     `json:"address"`
	Online   bool       `json:"online"`
	Reject   bool       `json:"reject"`
	Received []Received `json:"received"`
	Repeats  int        `json:"repeats"`
}

// PropagationNodeView is a propagation node as the HTTP records show it.
type PropagationNodeView struct {
	Name      string   `json:"name"`
	Address   string   `json:"address"`
	StampCost int      `json:"stamp_cost"`
	Reject    bool     `json:"reject"`
	Uploads   []Upload `json:"uploads"`
	Refused   int      `json:"refused"`
}

// Peers returns the peers, in the order they were added.
func (s *Sim) Peers() []*Peer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Peer(nil), s.peers...)
}

// PropagationNodes returns the propagation nodes, in the order they were
// added.
func (s *Sim) PropagationNodes() []*PropagationNode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*PropagationNode(nil), s.pns...)
}

// View returns what the peer is and received.
func (p *Peer) View() PeerView {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PeerView{Name: p.cfg.Name, Address: p.Address().String(), Online: p.online, Reject: p.cfg.Reject,
		Received: append([]Received{}, p.received...), Repeats: p.repeats}
}

// View returns what the node is and took.
func (n *PropagationNode) View() PropagationNodeView {
	n.mu.Lock()
	defer n.mu.Unlock()
	return PropagationNodeView{Name: n.cfg.Name, Address: n.Address().String(), StampCost: n.cfg.StampCost,
		Reject: n.cfg.Reject, Uploads: append([]Upload{}, n.uploads...), Refused: n.refused}
}

// Handler serves the simulator's records and controls: GET /sim/peers,
// /sim/propagation-nodes and /sim/stats; POST /sim/peers/{name}/online
// (bring it online and announce it) and /sim/peers/{name}/offline.
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sim/peers", func(w http.ResponseWriter, _ *http.Request) {
		views := []PeerView{}
		for _, p := range s.Peers() {
			views = append(views, p.View())
		}
		writeJSON(w, http.StatusOK, views)
	})
	mux.HandleFunc("GET /sim/propagation-nodes", func(w http.ResponseWriter, _ *http.Request) {
		views := []PropagationNodeView{}
		for _, n := range s.PropagationNodes() {
			views = append(views, n.View())
		}
		writeJSON(w, http.StatusOK, views)
	})
	mux.HandleFunc("GET /sim/stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Stats()) })
	mux.HandleFunc("POST /sim/peers/{name}/{state}", func(w http.ResponseWriter, r *http.Request) {
		var peer *Peer
		for _, p := range s.Peers() {
			if p.Name() == r.PathValue("name") {
				peer = p
			}
		}
		if peer == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no peer " + r.PathValue("name")})
			return
		}
		switch r.PathValue("state") {
		case "online":
			if err := peer.Online(); err != nil {
				writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
				return
			}
		case "offline":
			peer.Offline()
		default:
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "want online or offline"})
			return
		}
		writeJSON(w, http.StatusOK, peer.View())
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
