package httpsend

import (
	"net/http"
	"testing"
	"time"
)

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	cases := map[string]time.Duration{
		"":                      0,
		"0":                     0,
		"30":                    30 * time.Second,
		" 30 ":                  30 * time.Second,
		"-5":                    0,
		"1.5":                   0,
		"999999999999999999999": MaxRetryAfter,
		fixedNow.Add(time.Minute).Format(http.TimeFormat): time.Minute,
		"Mon, 99 Foo 2026": 0,
	}
	for v, want := range cases {
		if got := ParseRetryAfter(v, fixedNow); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}
