package herald

import (
	"fmt"
	"strings"
	"time"
)

// explainEnd fills x, the explanation of a terminal message m, with why it
// ended and, for a message a replay can move (DELIVERY_FAILED, CANCELLED),
// whether a replay can help: the entry that ended it names the cause, and
// its error (or the message's last error) says what failed.
func (e *Engine) explainEnd(x *Explanation, m *Message) {
	var end TimelineEntry
	for i := len(m.Timeline) - 1; i >= 0; i-- {
		if m.Timeline[i].To == m.Status {
			end = m.Timeline[i]
			break
		}
	}
	errText := end.Error
	if errText == "" {
		errText = m.LastError
	}
	withErr := func(s string) string {
		if errText == "" {
			return s
		}
		return s + ": " + errText
	}
	helps := func(b bool, how string) {
		x.ReplayHelps = &b
		x.Detail += "; " + how
	}
	x.Reason = "terminal"
	switch m.Status {
	case StatusDeliverySuccessful:
		x.Detail = "the message was delivered (" + string(m.Status) + ")"
		return
	case StatusCancelled:
		switch end.Reason {
		case "coalesced":
			x.Detail = "cancelled and coalesced: a newer message with the same coalesce key replaced it while it waited"
			helps(false, "a replay would send what its newer message replaced")
		case "cancelled by user":
			x.Detail = "cancelled by an operator while it waited"
			helps(true, "a replay sends it again")
		default:
			x.Detail = "cancelled: " + end.Reason
			helps(!strings.Contains(end.Reason, "deleted"), "a replay sends it again, if what it was sent through still exists")
		}
		return
	}
	r := e.routes[m.Route]
	switch {
	case strings.HasPrefix(end.Reason, "permanent error"):
		x.Detail = withErr("permanent error")
		if end.Answer != "" {
			x.Detail += " (the carrier answered " + end.Answer + ")"
		}
		helps(false, "a replay will fail the same way unless the target or the carrier changes")
	case strings.Contains(end.Reason, "attempts used"):
		x.Detail = withErr(fmt.Sprintf("attempts used up (%d of %d); the last error", m.Attempt, m.MaxAttempts))
		helps(true, "a replay can help once the carrier is back")
	case end.Reason == "expired":
		x.Detail = withErr("expired")
		if window := m.ExpiresAt.Sub(startOf(m)).Truncate(time.Millisecond); r != nil && r.Policy.MaxAge > 0 && window == r.Policy.MaxAge.Truncate(time.Millisecond) {
			x.Detail = fmt.Sprintf("max age: its route's max_age of %s passed before it was delivered", r.Policy.MaxAge)
		}
		helps(true, "a replay gives it a new window as long as its first, and can help once the carrier takes it in time")
	case strings.HasPrefix(end.Reason, "route removed"):
		x.Detail = withErr(fmt.Sprintf("route removed: route %s was not in the configuration", m.Route))
		if r != nil {
			helps(true, "the route is configured again: a replay can help")
		} else {
			helps(false, "a replay can help only once the route is configured again")
		}
	case end.Reason == "carrier timeout":
		x.Detail = withErr("carrier timeout: the carrier did not confirm the delivery in time")
		helps(true, "a replay can help once the carrier or the recipient answers again")
	case end.Reason == "subscription deleted":
		x.Detail = "its room's subscription was deleted while it was sent"
		helps(false, "a replay cannot send it: its subscription is gone")
	default:
		x.Detail = withErr(fmt.Sprintf("the message ended %s (%s)", m.Status, end.Reason))
		helps(true, "a replay sends it again")
	}
}

// startOf returns when m's current window began: its creation, or its
// latest replay.
func startOf(m *Message) time.Time {
	start := m.CreatedAt
	for _, e := range m.Timeline {
		if e.To == StatusQueued && e.From.Terminal() {
			start = e.At
		}
	}
	return start
}
