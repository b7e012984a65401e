// Package lxmf implements LXMF 1.x messages over Reticulum, as the reference
// implementation (LXMF 1.x) defines them: packing, signing, hashing and
// unpacking messages, stamps (proof of work a recipient or propagation node
// may require), the app data LXMF destinations announce, and single-attempt
// send primitives for the three delivery methods (opportunistic, direct,
// propagated) plus receiving on an lxmf.delivery destination.
//
// The send primitives make one attempt and report a [Result]; retrying,
// waiting for paths between attempts and choosing a method are the caller's
// business.
package lxmf
