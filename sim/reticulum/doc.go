// Package reticulum is a Reticulum network in one process, for herald's
// LXMF carrier, its tests, the demo and `herald sim reticulum`: a
// transport node with a TCP server interface (HDLC framing, as the
// reference's rnsd serves clients) that records paths from announces and
// rebroadcasts them, forwards packets, links and proofs between its
// clients and its local peers, and answers path requests from its path
// table; LXMF recipients (that announce and prove what they receive,
// decline resources, go offline, or come online late) and LXMF
// propagation nodes (that take uploads whose stamps are valid, or refuse
// them), each a Reticulum node of its own behind an in-memory interface.
//
// It is written from the reference's protocol (RNS 1.x Transport, LXMF
// 1.x) on top of package reticulum, whose packets, announces, links,
// resources and LXMF messages are checked against the reference's
// known-answer vectors; the transport node's forwarding was checked
// against reference clients (see the README). It is not a full transport:
// one transport node, no announce rate limits, retransmissions, path
// request forwarding or interface modes.
package reticulum
