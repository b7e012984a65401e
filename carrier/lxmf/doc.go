// Package lxmf is herald's LXMF carrier: messages to LXMF addresses over a
// Reticulum network, through a transport node's TCP server interface
// (rnsd), by the route's method: opportunistic (one packet), direct (over
// a link: a packet, or a resource when larger) or propagated (uploaded to
// a propagation node).
//
// It is a push carrier. Each send is one attempt of the reference's
// outbound loop (LXMF's LXMRouter), with its numbers: a recipient without
// a path is asked for (PathRequestWait, 7 s, until the next attempt; the
// attempt counts, as the reference counts it, unless the route's
// wait_for_path lets the message wait without spending attempts); an
// opportunistic message's first attempt goes without a path
// (MaxPathlessTries) and its third drops a path that did not deliver.
// Between attempts that were not proved the route's profile waits 10 s
// (lxmf: 5 attempts). A send returns once the attempt is on the wire
// (DELIVERED_TO_NS); the recipient's proof, or for propagated the
// propagation node's acceptance, comes back as an event through the
// carrier's Listen and the engine's inbox, matched by the LXMF message
// hash (the external id, the same at every attempt since the message's
// timestamp is its creation time). A rejection fails the message for
// good; a proof that comes late, once the message was retried, is
// adopted. The DELIVERED_TO_NS stage lasts as long as the packet's
// receipt (SendResult.StageTimeout); after it, the reaper retries.
//
// Messages addressed to herald's own LXMF address become lxmf.message
// outcome events. Routes that name the same identity file share one
// Endpoint (node, identity, connection).
package lxmf
