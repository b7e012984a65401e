package httpsend

import (
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestSecretPathsRedacted: a URL's path, query and credentials never
// appear in an error: Slack's and Discord's webhook URLs hold their secret
// in the path.
func TestSecretPathsRedacted(t *testing.T) {
	const secret = "T000/B000/XXXXsecretXXXX"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "https://elsewhere.example/"+secret)
		w.WriteHeader(http.StatusFound)
	}))
	defer srv.Close()
	for _, raw := range []string{srv.URL + "/services/" + secret, "http://127.0.0.1:1/services/" + secret + "?token=" + secret} {
		req, _ := http.NewRequest("POST", raw, nil)
		_, err := Do(NewClient(), req, time.Now)
		if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "/…") {
			t.Errorf("%s: error %v, want it without the path", raw, err)
		}
	}
	if _, err := ParseURL("ftp://user:pw@host/" + secret); err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "pw") {
		t.Errorf("ParseURL: %v", err)
	}
	if got := RedactString("https://hooks.slack.com/services/" + secret); got != "https://hooks.slack.com/…" {
		t.Errorf("RedactString: %q", got)
	}
	if got := RedactString("https://example.com/"); got != "https://example.com" {
		t.Errorf("RedactString of a bare host: %q", got)
	}
}
