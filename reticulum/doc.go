// Package reticulum is a client of the Reticulum network stack (RNS 1.x), as
// the reference implementation (RNS 1.x) defines its wire protocol.
//
// It covers what a messaging client needs: identities and their key files,
// destination hashes, packets and their hashes, HDLC framing over TCP to a
// transport node (rnsd), announces, a persisted path table and store of known
// identities, path requests, single packets encrypted to a destination with
// their delivery proofs, links (request, proof, keys, keep-alive, teardown),
// and resources over a link.
//
// A [Node] is the entry point: it owns one or more [Interface]s (usually one
// [TCPClient] to an rnsd TCPServerInterface), the local [Destination]s that
// receive packets and links, and everything learned from the network. The
// node is not a transport node: it never forwards other nodes' packets.
//
// The package imports nothing from the application that uses it.
package reticulum
