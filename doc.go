// Package herald is a durable delivery engine for outbound messages.
//
// A message sent to herald is written to a Store before anything else happens,
// then driven by the Engine through its lifecycle (see Status) by a Carrier:
// handed to the carrier, accepted, transmitted, confirmed. Every stage has a
// deadline, failures are retried per the route's Policy, and what cannot be
// delivered ends DELIVERY_FAILED (a dead letter) instead of being lost.
//
// The package is the core: it imports no store and no carrier. Stores live in
// store/..., carriers in carrier/..., and cmd/herald wires them together.
package herald
