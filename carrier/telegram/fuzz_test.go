package telegram

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heraldmq/herald"
	tgsim "github.com/heraldmq/herald/sim/telegram"
)

// FuzzMarkdown: the converter never panics, writes balanced HTML whose text
// is the visible text, and splits any text into chunks within the limit
// whose sources give the text back.
func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{
		"*bold* _italic_ `code` [link](https://x.org)",
		"```go\nfunc main() {}\n```",
		"*a _b* c_ `d", "[*x*](u) [y](a(b)c) [z](", "\\*\\_\\`\\[",
		"**__x__**", "_*`*_`*_", "```\n```\n```", "a\n\n*b\nc* <&>\"",
		"привет *мир* 👋 _😀_", "\xff*\xfe*", "[a](b`c`)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		d := parseMarkdown(src)
		checkHTML(t, src, d.render(0, len(d.vis)))
		const limit = 16
		var joined, vis strings.Builder
		for i, c := range split(src, true, limit, 512) {
			if c.Units > limit {
				t.Fatalf("chunk %d: %d units over %d", i, c.Units, limit)
			}
			joined.WriteString(c.Source)
			vis.WriteString(c.Visible)
			if utf8.ValidString(src) && !utf8.ValidString(c.Visible) {
				t.Fatalf("chunk %d cuts a character: %q", i, c.Visible)
			}
			balanced(t, c.Text)
		}
		if joined.String() != src {
			t.Fatalf("sources joined %q, want %q", joined.String(), src)
		}
		if vis.String() != d.vis {
			t.Fatalf("visible texts joined %q, want %q", vis.String(), d.vis)
		}
	})
}

// balanced fails the test when html's tags do not nest.
func balanced(t *testing.T, html string) {
	t.Helper()
	var stack []string
	for _, m := range tagPattern.FindAllStringSubmatch(html, -1) {
		if strings.HasPrefix(m[0], "</") {
			if len(stack) == 0 || stack[len(stack)-1] != m[1] {
				t.Fatalf("unbalanced %s in %q", m[0], html)
			}
			stack = stack[:len(stack)-1]
		} else {
			stack = append(stack, m[1])
		}
	}
	if len(stack) > 0 {
		t.Fatalf("unclosed %v in %q", stack, html)
	}
}

// FuzzParseResponse: any answer is classified without a panic; one that is
// not the Bot API's envelope is a transient error, and an accepted one has
// an id.
func FuzzParseResponse(f *testing.F) {
	f.Add(200, `{"ok":true,"result":{"message_id":7,"chat":{"id":1,"type":"private"},"date":1,"text":"hi"}}`)
	f.Add(400, `{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}`)
	f.Add(403, `{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}`)
	f.Add(401, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
	f.Add(429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 5","parameters":{"retry_after":5}}`)
	f.Add(400, `{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1001234567890}}`)
	f.Add(502, tgsim.BadGatewayPage)
	f.Add(200, `{"ok":true,"result":true}`)
	f.Add(200, `{"ok":"yes"}`)
	f.Add(429, `{"ok":false,"parameters":{"retry_after":99999999999999999999}}`)
	f.Add(0, "")
	f.Add(238, `{"oK":false,"desCription":"Bot wAs BloCked"}`) // Go reads JSON names without case: an envelope
	c, err := New(Config{Token: "1:fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, body string) {
		id, err := c.parseResponse(status, "", []byte(body))
		if err == nil && id == "" {
			t.Fatalf("accepted without an id: %d %q", status, body)
		}
		if err != nil && id != "" {
			t.Fatalf("an id %q with an error %v", id, err)
		}
		var env struct {
			OK *bool `json:"ok"`
		}
		if json.Unmarshal([]byte(body), &env) != nil || env.OK == nil { // not the envelope
			var pe *herald.PermanentError
			if err == nil || errors.As(err, &pe) {
				t.Fatalf("%d %q, not the envelope, is not a transient error: %v", status, body, err)
			}
		}
		if err != nil && status == http.StatusOK && strings.Contains(err.Error(), "1:fuzz") {
			t.Fatalf("the token in an error: %v", err)
		}
	})
}
