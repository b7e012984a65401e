package httpsend

import (
	"testing"
	"time"
)

// FuzzParseRetryAfter feeds ParseRetryAfter any header value: it must not
// panic, and a wait it returns is never negative nor absurdly long.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "1", "120", "-5", "1e9", "99999999999999999999", "Wed, 21 Oct 2015 07:28:00 GMT",
		"Mon, 02 Jan 2030 15:04:05 GMT", "soon", " 7 ", "3.5"} {
		f.Add(s)
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := ParseRetryAfter(v, now)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, negative", v, d)
		}
	})
}
