package herald_test

import (
	"testing"

	"github.com/heraldmq/herald"
)

// TestIsAcceptTimeout: the accept timeout's last error is told as such in
// its words and in the text versions before them stored.
func TestIsAcceptTimeout(t *testing.T) {
	for text, want := range map[string]bool{
		herald.AcceptTimeoutError:                          true,
		"carrier did not answer within the accept timeout": true,
		herald.AcceptTimeoutReason:                         false,
		"send failed: context deadline exceeded":           false,
	} {
		if got := herald.IsAcceptTimeout(text); got != want {
			t.Errorf("IsAcceptTimeout(%q) = %v, want %v", text, got, want)
		}
	}
}
