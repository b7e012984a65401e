package herald

import (
	"context"
	"time"
)

// A node tells the store it is alive every nodeBeat, each heartbeat lasting
// nodeTTL: the lanes it keeps (Admission.ClaimAhead) stay its own while it
// does, and once it has been dead for nodeTTL, another node takes them over
// (Store.Heartbeat) and sends their QUEUED messages without waiting for the
// deadlines of those it had in flight.
const (
	nodeBeat = time.Second
	nodeTTL  = 5 * time.Second
)

// keepsLanes reports whether the engine keeps the concurrency of any
// route's lanes itself (Admission.ClaimAhead), and so needs a heartbeat.
func (e *Engine) keepsLanes() bool {
	for _, a := range e.admission {
		if a.ClaimAhead > 0 {
			return true
		}
	}
	return false
}

// beat tells the store that this node is alive for nodeTTL.
func (e *Engine) beat(ctx context.Context) {
	if err := e.store.Heartbeat(ctx, e.node, e.clock.Now(), nodeTTL); err != nil && ctx.Err() == nil {
		e.problem("store_error", "heartbeat", "err", err)
	}
}

// heartbeatLoop beats every nodeBeat until ctx ends.
func (e *Engine) heartbeatLoop(ctx context.Context) {
	for e.sleep(ctx, nodeBeat) {
		e.beat(ctx)
	}
}
