package herald

// pace decides how far the dispatcher claims ahead of its free send slots:
// far enough that the slots never wait for a claim, and no further, since a
// message claimed too early waits SENT_TO_NS for a slot. It grows when the
// slots ran out of claimed messages during a claim, and shrinks back when
// they did not; once a claim finds fewer due messages than it asked for,
// empty slots say nothing of the claims' pace, and it starts over from the
// least (but for a claim that leaves a lane the node keeps near its
// bound, which may have cut the claim short: see Engine.keptAtBound). It
// is guarded by the Engine's dispatchMu.
type pace struct {
	ahead   int  // messages to hold claimed beyond the free slots
	starved bool // a free slot found no claimed message since the last claim
}

// noteStarved records that a free send slot found no claimed message.
func (p *pace) noteStarved() { p.starved = true }

// ranOut records that a claim found fewer due messages than it asked for.
func (p *pace) ranOut() { p.ahead, p.starved = 0, false }

// next returns how far ahead to claim now, at least least and at most most,
// and starts watching for starvation again.
func (p *pace) next(least, most int) int {
	switch {
	case p.starved:
		p.ahead = max(2*p.ahead, 1)
	default:
		p.ahead -= p.ahead / 8
	}
	p.starved = false
	p.ahead = max(least, min(p.ahead, most))
	return p.ahead
}
