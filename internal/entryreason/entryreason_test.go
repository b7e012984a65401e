package entryreason

import (
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// TestRoundTrip: a reason with a call, or with none, reads back as it was
// encoded; a reason stored before calls were kept reads as itself.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		reason string
		call   herald.Call
	}{
		{"created", herald.Call{}},
		{"send failed", herald.Call{Answer: "503", Error: "webhook: POST http://x: 503 Service Unavailable\n|body", Duration: 1234 * time.Millisecond}},
		{"accepted by carrier", herald.Call{Answer: "204", Duration: 7 * time.Millisecond}},
		{"send failed", herald.Call{Error: "dial tcp: connection refused"}},
		{"", herald.Call{Answer: "UNAVAILABLE"}},
	} {
		reason, call := Decode(Encode(tc.reason, tc.call))
		if reason != tc.reason || call != tc.call {
			t.Errorf("%q %+v: read back %q %+v", tc.reason, tc.call, reason, call)
		}
	}
	if reason, call := Decode("send failed; 3 of 3 attempts used"); reason != "send failed; 3 of 3 attempts used" || !call.IsZero() {
		t.Errorf("an old entry: %q %+v", reason, call)
	}
}
