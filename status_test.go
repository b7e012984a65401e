package herald

import "testing"

// TestTransitionTable checks every pair of statuses against the lifecycle:
// the allowed ones listed here, everything else forbidden.
func TestTransitionTable(t *testing.T) {
	allowed := map[[2]Status]bool{
		{StatusQueued, StatusSentToNS}:                  true,
		{StatusQueued, StatusCancelled}:                 true,
		{StatusQueued, StatusDeliveryFailed}:            true,
		{StatusSentToNS, StatusDeliveredToNS}:           true,
		{StatusSentToNS, StatusDeliverySuccessful}:      true,
		{StatusSentToNS, StatusToRetry}:                 true,
		{StatusSentToNS, StatusDeliveryFailed}:          true,
		{StatusDeliveredToNS, StatusSentToDevice}:       true,
		{StatusDeliveredToNS, StatusDeliverySuccessful}: true,
		{StatusDeliveredToNS, StatusToRetry}:            true,
		{StatusDeliveredToNS, StatusDeliveryFailed}:     true,
		{StatusSentToDevice, StatusDeliverySuccessful}:  true,
		{StatusSentToDevice, StatusToRetry}:             true,
		{StatusSentToDevice, StatusDeliveryFailed}:      true,
		{StatusToRetry, StatusQueued}:                   true,
		{StatusToRetry, StatusCancelled}:                true,
		{StatusToRetry, StatusDeliveryFailed}:           true,
		// A late answer of the last attempt adopted by a waiting message.
		{StatusQueued, StatusDeliveredToNS}:       true,
		{StatusQueued, StatusDeliverySuccessful}:  true,
		{StatusToRetry, StatusDeliveredToNS}:      true,
		{StatusToRetry, StatusDeliverySuccessful}: true,
		// Operator replay: the only way out of a terminal status.
		{StatusDeliveryFailed, StatusQueued}: true,
		{StatusCancelled, StatusQueued}:      true,
	}
	for _, from := range Statuses {
		for _, to := range Statuses {
			want := allowed[[2]Status{from, to}]
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
}

// TestTerminalStatusesIgnoreLateEvents: once terminal, no carrier event
// (any status but the operator's replay to QUEUED) can move a message.
func TestTerminalStatusesIgnoreLateEvents(t *testing.T) {
	for _, from := range []Status{StatusDeliverySuccessful, StatusDeliveryFailed, StatusCancelled} {
		if !from.Terminal() {
			t.Errorf("%s should be terminal", from)
		}
		for _, to := range Statuses {
			if to == StatusQueued {
				continue
			}
			if CanTransition(from, to) {
				t.Errorf("late event moved terminal %s to %s", from, to)
			}
		}
	}
	if CanTransition(StatusDeliverySuccessful, StatusQueued) {
		t.Error("a delivered message must not be replayable")
	}
	for _, s := range []Status{StatusQueued, StatusSentToNS, StatusDeliveredToNS, StatusSentToDevice, StatusToRetry} {
		if s.Terminal() {
			t.Errorf("%s should not be terminal", s)
		}
	}
}

func TestParseStatus(t *testing.T) {
	for _, s := range Statuses {
		if got, err := ParseStatus(string(s)); err != nil || got != s {
			t.Errorf("ParseStatus(%s) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseStatus("queued"); err == nil {
		t.Error("ParseStatus accepted a lower-case status")
	}
}
