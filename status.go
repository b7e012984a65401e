package herald

import "fmt"

// Status is where a message stands in its lifecycle.
type Status string

// The eight statuses. The last three are terminal.
const (
	// StatusQueued: stored and waiting to be dispatched.
	StatusQueued Status = "QUEUED"
	// StatusSentToNS: claimed and being handed to the carrier ("NS").
	StatusSentToNS Status = "SENT_TO_NS"
	// StatusDeliveredToNS: the carrier accepted the message (push and pull paths).
	StatusDeliveredToNS Status = "DELIVERED_TO_NS"
	// StatusSentToDevice: the carrier transmitted it (push path only).
	StatusSentToDevice Status = "SENT_TO_DEVICE"
	// StatusToRetry: a stage failed; waiting for its backoff to elapse.
	StatusToRetry Status = "TO_RETRY"
	// StatusDeliverySuccessful: delivered. Terminal.
	StatusDeliverySuccessful Status = "DELIVERY_SUCCESSFUL"
	// StatusDeliveryFailed: given up; a dead letter. Terminal.
	StatusDeliveryFailed Status = "DELIVERY_FAILED"
	// StatusCancelled: cancelled by a user or replaced by a newer message. Terminal.
	StatusCancelled Status = "CANCELLED"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{
	StatusQueued, StatusSentToNS, StatusDeliveredToNS, StatusSentToDevice,
	StatusToRetry, StatusDeliverySuccessful, StatusDeliveryFailed, StatusCancelled,
}

// ParseStatus returns the Status named s, or an error naming the valid ones.
func ParseStatus(s string) (Status, error) {
	for _, st := range Statuses {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown status %q: want one of %v", s, Statuses)
}

// Terminal reports whether no event can move a message out of s on its own.
func (s Status) Terminal() bool {
	return s == StatusDeliverySuccessful || s == StatusDeliveryFailed || s == StatusCancelled
}

// InFlight reports whether s is a carrier stage with a deadline.
func (s Status) InFlight() bool {
	return s == StatusSentToNS || s == StatusDeliveredToNS || s == StatusSentToDevice
}

// Waiting reports whether s is waiting to be dispatched (QUEUED or TO_RETRY).
func (s Status) Waiting() bool { return s == StatusQueued || s == StatusToRetry }

// transitions is the lifecycle table: from -> the statuses it may move to.
// The only way out of a terminal status is an operator's replay to QUEUED;
// DELIVERY_SUCCESSFUL has no way out at all. A message waiting for its
// next attempt (QUEUED, TO_RETRY) moves on to where a late answer of its
// last attempt takes it (late.go).
var transitions = map[Status][]Status{
	StatusQueued:             {StatusSentToNS, StatusCancelled, StatusDeliveryFailed, StatusDeliveredToNS, StatusDeliverySuccessful},
	StatusSentToNS:           {StatusDeliveredToNS, StatusDeliverySuccessful, StatusToRetry, StatusDeliveryFailed},
	StatusDeliveredToNS:      {StatusSentToDevice, StatusDeliverySuccessful, StatusToRetry, StatusDeliveryFailed},
	StatusSentToDevice:       {StatusDeliverySuccessful, StatusToRetry, StatusDeliveryFailed},
	StatusToRetry:            {StatusQueued, StatusCancelled, StatusDeliveryFailed, StatusDeliveredToNS, StatusDeliverySuccessful},
	StatusDeliveryFailed:     {StatusQueued},
	StatusCancelled:          {StatusQueued},
	StatusDeliverySuccessful: nil,
}

// CanTransition reports whether the lifecycle allows from -> to.
func CanTransition(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}
