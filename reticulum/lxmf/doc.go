// Package lxmf implements LXMF 1.x messages over Reticulum, as the reference
// implementation (LXMF 1.x) defines them: packing, signing, hashing and
// unpacking messages, stamps (proof of work a recipient or propagation node
// may require), the app data LXMF destinations announce, and single-attempt
// send primitives for the three delivery methods (opportunistic, direct,
// propagated) plus receiving on an lxmf.delivery destination.
//
// The send primitives make one attempt and report a [Result]; retrying,
// waiting for paths between attempts and choosing a method are the caller's
// business. The Begin methods return a [Delivery] once the attempt is on
// the wire, which then concludes with its proof (a proof that comes after
// an opportunistic packet's receipt timed out is still seen: Proved); the
// Send methods wait for it.
//
// What a proof means, per method:
//   - Opportunistic: the recipient's node decrypted the packet and signed its
//     hash (an implicit proof). The reference proves before it checks the
//     message, so a message it then drops (bad signature, missing stamp when
//     it enforces stamps, duplicate) is still "delivered".
//   - Direct: the link packet's explicit proof, or for a message larger than
//     LinkPacketMaxContent the resource proof (SHA-256 of the data and the
//     resource hash). Same caveat: the proof precedes the message checks. A
//     receiver that declines the resource sends a cancel (Rejected).
//   - Propagated: the propagation node proved the upload (Accepted), i.e. it
//     took the message for storage; the recipient fetches it later. A node
//     that refuses the propagation stamp sends msgpack [0xf5] over the link
//     and tears the link down (Rejected). For uploads sent as a resource the
//     node proves the resource before checking stamps, so a refusal shows
//     only as the link being torn down after Accepted.
//
// The message id (Message.Hash) covers destination, source, timestamp,
// title, content and fields but not the stamp: it is stable across attempts
// once Router.Prepare has run.
package lxmf
