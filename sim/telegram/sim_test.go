package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

const token = "4242:test-secret"

// Chats of the tests.
const (
	alice   int64 = 1001           // private
	bob     int64 = 1002           // private, blocked
	group   int64 = -4001          // group, the bot was kicked
	news    int64 = -1001234567890 // channel @news
	support int64 = -1009876543210 // supergroup
)

func testConfig() Config {
	return Config{
		Token: token,
		Chats: []Chat{
			{ID: alice, FirstName: "Alice"},
			{ID: bob, Status: StatusBlocked},
			{ID: group, Status: StatusKicked},
			{ID: news, Type: ChatChannel, Username: "news", Title: "News"},
			{ID: support, Status: StatusKicked},
		},
	}
}

// start serves a simulator over real HTTP.
func start(t *testing.T, cfg Config) (*Sim, *httptest.Server) {
	t.Helper()
	s := New(cfg)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// reply is a decoded answer.
type reply struct {
	status int
	header http.Header
	body   string
	env    struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  *struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
}

// do calls method with params encoded as enc ("query", "form",
// "multipart" or "json"; JSON keeps Go types, so an int64 chat_id is a
// number).
func do(t *testing.T, base, tok, method, enc string, params map[string]any) reply {
	t.Helper()
	u := base + "/bot" + tok + "/" + method
	var req *http.Request
	var err error
	switch enc {
	case "query":
		q := url.Values{}
		for k, v := range params {
			q.Set(k, fmt.Sprint(v))
		}
		req, err = http.NewRequest(http.MethodGet, u+"?"+q.Encode(), nil)
	case "form":
		q := url.Values{}
		for k, v := range params {
			q.Set(k, fmt.Sprint(v))
		}
		req, err = http.NewRequest(http.MethodPost, u, strings.NewReader(q.Encode()))
		if req != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	case "multipart":
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for k, v := range params {
			_ = mw.WriteField(k, fmt.Sprint(v))
		}
		_ = mw.Close()
		req, err = http.NewRequest(http.MethodPost, u, &b)
		if req != nil {
			req.Header.Set("Content-Type", mw.FormDataContentType())
		}
	case "json":
		b, _ := json.Marshal(params)
		req, err = http.NewRequest(http.MethodPost, u, bytes.NewReader(b))
		if req != nil {
			req.Header.Set("Content-Type", "application/json")
		}
	default:
		t.Fatalf("encoding %q", enc)
	}
	if err != nil {
		t.Fatal(err)
	}
	return send(t, req)
}

func send(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: string(body)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(body, &r.env); err != nil {
			t.Fatalf("answer %q: %v", body, err)
		}
	}
	return r
}

// sendText sends text to chat as JSON and returns the answer.
func sendText(t *testing.T, base string, chat any, text string, extra ...any) reply {
	t.Helper()
	p := map[string]any{"chat_id": chat, "text": text}
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i].(string)] = extra[i+1]
	}
	return do(t, base, token, "sendMessage", "json", p)
}

// message decodes a successful sendMessage.
type message struct {
	MessageID int64 `json:"message_id"`
	From      *User `json:"from"`
	Chat      struct {
		ID        int64  `json:"id"`
		Type      string `json:"type"`
		Title     string `json:"title"`
		Username  string `json:"username"`
		FirstName string `json:"first_name"`
	} `json:"chat"`
	SenderChat     *json.RawMessage `json:"sender_chat"`
	Date           int64            `json:"date"`
	Text           string           `json:"text"`
	Entities       []Entity         `json:"entities"`
	ReplyToMessage *message         `json:"reply_to_message"`
}

func mustSend(t *testing.T, r reply) message {
	t.Helper()
	if r.status != http.StatusOK || !r.env.OK {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	var m message
	if err := json.Unmarshal(r.env.Result, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestGetMe(t *testing.T) {
	_, srv := start(t, testConfig())
	for _, method := range []string{"getMe", "GETME", "getme"} {
		r := do(t, srv.URL, token, method, "query", nil)
		if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: status %d, %s", method, r.status, r.header.Get("Content-Type"))
		}
		want := `{"ok":true,"result":{"id":4242,"is_bot":true,"first_name":"herald sim","username":"herald_sim_bot",` +
			`"can_join_groups":true,"can_read_all_group_messages":false,"supports_inline_queries":false}}`
		if r.body != want {
			t.Errorf("%s:\n got %s\nwant %s", method, r.body, want)
		}
	}
}

func TestSendMessageEncodings(t *testing.T) {
	s, srv := start(t, testConfig())
	encs := []string{"query", "form", "multipart", "json"}
	for i, enc := range encs {
		text := "hello over " + enc
		r := do(t, srv.URL, token, "sendMessage", enc, map[string]any{
			"chat_id": alice, "text": text, "disable_notification": true,
		})
		m := mustSend(t, r)
		if m.MessageID != int64(i+1) || m.Chat.ID != alice || m.Chat.Type != "private" || m.Text != text ||
			m.Chat.FirstName != "Alice" || m.From == nil || !m.From.IsBot || m.Date == 0 || m.Entities != nil {
			t.Errorf("%s: %+v", enc, m)
		}
	}
	calls := s.Calls()
	if len(calls) != len(encs) {
		t.Fatalf("%d calls", len(calls))
	}
	for i, c := range calls {
		if c.Encoding != encs[i] || c.Method != "sendmessage" || c.Status != 200 || c.ChatID != alice ||
			c.MessageID != int64(i+1) || c.Params["chat_id"] != "1001" || c.Params["disable_notification"] != "true" {
			t.Errorf("call %d: %+v", i, c)
		}
	}
	for _, m := range s.Messages(alice) {
		if !m.DisableNotification {
			t.Errorf("message %d: disable_notification lost", m.MessageID)
		}
	}
	// A JSON chat_id may be a string too, and the URL query wins over the body.
	r := do(t, srv.URL, token, "sendMessage?text=from+the+query", "json", map[string]any{"chat_id": "1001", "text": "body"})
	if m := mustSend(t, r); m.Text != "from the query" {
		t.Errorf("text %q", m.Text)
	}
}

func TestLengthLimitInUTF16Units(t *testing.T) {
	_, srv := start(t, testConfig())
	tooLong := `{"ok":false,"error_code":400,"description":"Bad Request: message is too long"}`
	for _, c := range []struct {
		name string
		unit string // one character
		n    int    // characters
		ok   bool
	}{
		{"latin 4096", "a", 4096, true},
		{"latin 4097", "a", 4097, false},
		{"cyrillic 4096", "ж", 4096, true},
		{"cyrillic 4097", "ж", 4097, false},
		{"emoji 2048 = 4096 units", "😀", 2048, true},
		{"emoji 2049 = 4098 units", "😀", 2049, false},
		{"emoji 4096 = 8192 units", "😀", 4096, false},
	} {
		r := sendText(t, srv.URL, alice, strings.Repeat(c.unit, c.n))
		if c.ok {
			if m := mustSend(t, r); m.Text != strings.Repeat(c.unit, c.n) {
				t.Errorf("%s: text changed", c.name)
			}
		} else if r.status != 400 || r.body != tooLong {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
	}
	// The limit applies after entity parsing: tags and &amp; do not count.
	html := "<b>" + strings.Repeat("&amp;", 4096) + "</b>"
	if m := mustSend(t, sendText(t, srv.URL, alice, html, "parse_mode", "HTML")); len(m.Text) != 4096 ||
		!reflect.DeepEqual(m.Entities, []Entity{{Type: "bold", Offset: 0, Length: 4096}}) {
		t.Errorf("4096 &amp; in <b>: %d characters, %+v", len(m.Text), m.Entities)
	}
	if r := sendText(t, srv.URL, alice, "<b>"+strings.Repeat("x", 4097)+"</b>", "parse_mode", "HTML"); r.body != tooLong {
		t.Errorf("4097 in <b>: %s", r.body)
	}
	// Trailing spaces are trimmed before counting.
	mustSend(t, sendText(t, srv.URL, alice, strings.Repeat("a", 4096)+"   \n"))
}

func TestHTMLEntities(t *testing.T) {
	s, srv := start(t, testConfig())
	in := `😀 <b>bold <i>both</i></b> &lt;tag&gt; &amp; &quot;q&quot; &#1046;&#x416; ` +
		`<a href="https://example.com/x?a=1&amp;b=2">link</a> <code>c</code> ` +
		`<pre><code class="language-go">x := 1</code></pre><tg-spoiler>s</tg-spoiler> ` +
		`<span class="tg-spoiler">s2</span> <u>u</u><ins>i</ins> <s>s</s><del>d</del> <strong>B</strong><em>E</em>` +
		"\n<blockquote>quote</blockquote>😀<a href=\"tg://user?id=77\">me</a> Tom & Jerry > 1"
	m := mustSend(t, sendText(t, srv.URL, alice, in, "parse_mode", "HTML"))
	wantText := "😀 bold both <tag> & \"q\" ЖЖ link c x := 1s s2 ui sd BE\nquote😀me Tom & Jerry > 1"
	if m.Text != wantText {
		t.Fatalf("text\n got %q\nwant %q", m.Text, wantText)
	}
	want := []Entity{
		{Type: "bold", Offset: 3, Length: 9},
		{Type: "italic", Offset: 8, Length: 4},
		{Type: "text_link", Offset: 28, Length: 4, URL: "https://example.com/x?a=1&b=2"},
		{Type: "code", Offset: 33, Length: 1},
		{Type: "pre", Offset: 35, Length: 6, Language: "go"},
		{Type: "spoiler", Offset: 41, Length: 1},
		{Type: "spoiler", Offset: 43, Length: 2},
		{Type: "underline", Offset: 46, Length: 1},
		{Type: "underline", Offset: 47, Length: 1},
		{Type: "strikethrough", Offset: 49, Length: 1},
		{Type: "strikethrough", Offset: 50, Length: 1},
		{Type: "bold", Offset: 52, Length: 1},
		{Type: "italic", Offset: 53, Length: 1},
		{Type: "blockquote", Offset: 55, Length: 5},
		{Type: "text_mention", Offset: 62, Length: 2, User: &User{ID: 77}},
	}
	if !reflect.DeepEqual(m.Entities, want) {
		t.Errorf("entities\n got %+v\nwant %+v", m.Entities, want)
	}
	// Each entity covers, in UTF-16 code units, the text its tag enclosed.
	covered := []string{"bold both", "both", "link", "c", "x := 1", "s", "s2", "u", "i", "s", "d", "B", "E", "quote", "me"}
	units := utf16.Encode([]rune(m.Text))
	for k, e := range m.Entities {
		if k >= len(covered) || e.Offset+e.Length > len(units) {
			t.Fatalf("entity %d %+v", k, e)
		}
		if got := string(utf16.Decode(units[e.Offset : e.Offset+e.Length])); got != covered[k] {
			t.Errorf("entity %d (%s) covers %q, want %q", k, e.Type, got, covered[k])
		}
	}
	if got := s.Messages(alice); len(got) != 1 || got[0].Source != in || got[0].ParseMode != "HTML" || got[0].Text != wantText {
		t.Errorf("record %+v", got)
	}
}

func TestParseErrors(t *testing.T) {
	_, srv := start(t, testConfig())
	for _, c := range []struct{ mode, text, want string }{
		{"HTML", "<p>x</p>", `Unsupported start tag "p" at byte offset 0`},
		{"HTML", "1 < 2", `Unsupported start tag "" at byte offset 2`},
		{"HTML", "x<b", `Unclosed start tag at byte offset 1`},
		{"HTML", "a <b>x", `Can't find end tag corresponding to start tag "b"`},
		{"HTML", "<b>x</i>", `Unmatched end tag at byte offset 4, expected "</b>", found "</i>"`},
		{"HTML", "x</b>", `Unexpected end tag at byte offset 1`},
		{"HTML", `<span class="x">y</span>`, `Tag "span" must have class "tg-spoiler" at byte offset 0`},
		{"HTML", `<a href="x>y</a>`, `Unclosed start tag at byte offset 0`},
		{"HTML", "&#xD800;", `Text contains invalid Unicode characters after decoding HTML entities, check for unmatched surrogate code units`},
		{"MarkdownV2", "a.b", `Character '.' is reserved and must be escaped with the preceding '\'`},
		{"MarkdownV2", "*x", `Can't find end of Bold entity at byte offset 0`},
		{"MarkdownV2", "[a](http://x.y", `Can't find end of a URL at byte offset 4`},
		{"Markdown", "_x", `Can't find end of the entity starting at byte offset 0`},
	} {
		r := sendText(t, srv.URL, alice, c.text, "parse_mode", c.mode)
		want, _ := json.Marshal(map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: can't parse entities: " + c.want})
		if r.status != 400 || r.env.Description != "Bad Request: can't parse entities: "+c.want || r.env.ErrorCode != 400 || r.env.OK {
			t.Errorf("%s %q: %d %s, want %s", c.mode, c.text, r.status, r.body, want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	_, srv := start(t, testConfig())
	m := mustSend(t, sendText(t, srv.URL, alice, "*bold* _it_ __u__ ~s~ ||sp|| `c` [l](https://t.me/x) 1\\.5 😀*b*", "parse_mode", "MarkdownV2"))
	want := []Entity{
		{Type: "bold", Offset: 0, Length: 4}, {Type: "italic", Offset: 5, Length: 2},
		{Type: "underline", Offset: 8, Length: 1}, {Type: "strikethrough", Offset: 10, Length: 1},
		{Type: "spoiler", Offset: 12, Length: 2}, {Type: "code", Offset: 15, Length: 1},
		{Type: "text_link", Offset: 17, Length: 1, URL: "https://t.me/x"}, {Type: "bold", Offset: 25, Length: 1},
	}
	if m.Text != "bold it u s sp c l 1.5 😀b" || !reflect.DeepEqual(m.Entities, want) {
		t.Errorf("MarkdownV2: %q %+v", m.Text, m.Entities)
	}
	m = mustSend(t, sendText(t, srv.URL, alice, "*b* _i_ `c` ```go\nx\n``` a.b!", "parse_mode", "Markdown"))
	want = []Entity{{Type: "bold", Offset: 0, Length: 1}, {Type: "italic", Offset: 2, Length: 1},
		{Type: "code", Offset: 4, Length: 1}, {Type: "pre", Offset: 6, Length: 2, Language: "go"}}
	if m.Text != "b i c x\n a.b!" || !reflect.DeepEqual(m.Entities, want) {
		t.Errorf("Markdown: %q %+v", m.Text, m.Entities)
	}
}

func TestErrorEnvelopes(t *testing.T) {
	s, srv := start(t, testConfig())
	mustSend(t, sendText(t, srv.URL, alice, "first"))
	envelope := func(code int, d string) string {
		return fmt.Sprintf(`{"ok":false,"error_code":%d,"description":"%s"}`, code, strings.ReplaceAll(d, `"`, `\"`))
	}
	for _, c := range []struct {
		name   string
		r      func() reply
		status int
		desc   string
	}{
		{"unknown token", func() reply {
			return do(t, srv.URL, "4242:wrong", "sendMessage", "json", map[string]any{"chat_id": alice, "text": "x"})
		},
			401, "Unauthorized"},
		{"unknown method", func() reply { return do(t, srv.URL, token, "sendTelegram", "json", nil) }, 404, "Not Found: method not found"},
		{"empty text", func() reply { return sendText(t, srv.URL, alice, "") }, 400, "Bad Request: message text is empty"},
		{"empty chat_id", func() reply { return sendText(t, srv.URL, "", "x") }, 400, "Bad Request: chat_id is empty"},
		{"unknown chat", func() reply { return sendText(t, srv.URL, 999, "x") }, 400, "Bad Request: chat not found"},
		{"unknown username", func() reply { return sendText(t, srv.URL, "@nobody", "x") }, 400, "Bad Request: chat not found"},
		{"blocked", func() reply { return sendText(t, srv.URL, bob, "x") }, 403, "Forbidden: bot was blocked by the user"},
		{"kicked from group", func() reply { return sendText(t, srv.URL, group, "x") }, 403, "Forbidden: bot was kicked from the group chat"},
		{"kicked from supergroup", func() reply { return sendText(t, srv.URL, support, "x") }, 403, "Forbidden: bot was kicked from the supergroup chat"},
		{"blank text", func() reply { return sendText(t, srv.URL, alice, " \n ") }, 400, "Bad Request: text must be non-empty"},
		{"empty after parsing", func() reply { return sendText(t, srv.URL, alice, "<b></b>", "parse_mode", "HTML") }, 400, "Bad Request: text must be non-empty"},
		{"unsupported parse_mode", func() reply { return sendText(t, srv.URL, alice, "x", "parse_mode", "BBCode") }, 400, "Bad Request: unsupported parse_mode"},
		{"reply not found", func() reply { return sendText(t, srv.URL, alice, "x", "reply_to_message_id", 7) }, 400, "Bad Request: message to be replied not found"},
		{"reply_parameters not found", func() reply {
			return sendText(t, srv.URL, alice, "x", "reply_parameters", map[string]any{"message_id": 7})
		}, 400, "Bad Request: message to be replied not found"},
		{"text over 32 KiB", func() reply { return sendText(t, srv.URL, alice, strings.Repeat("x", 1<<15+1)) }, 400, "Bad Request: text is too long"},
	} {
		r := c.r()
		if r.status != c.status || r.body != envelope(c.status, c.desc) || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.status, envelope(c.status, c.desc))
		}
	}
	// A path that is not /bot<token>/<method> is 404 "Not Found".
	resp, err := http.Get(srv.URL + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || string(body) != envelope(404, "Not Found") {
		t.Errorf("other path: %d %s", resp.StatusCode, body)
	}
	// A body that cannot be parsed: a bare 400.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/bot"+token+"/sendMessage", strings.NewReader(`{"chat_id":`))
	req.Header.Set("Content-Type", "application/json")
	if r := send(t, req); r.status != 400 || r.body != "" {
		t.Errorf("malformed JSON: %d %q", r.status, r.body)
	}
	if n := len(s.Messages(alice)); n != 1 {
		t.Errorf("%d messages delivered, want 1", n)
	}
}

func TestTooManyRequests(t *testing.T) {
	cfg := testConfig()
	cfg.Faults = Faults{Next429: 2, RetryAfter: 7}
	s, srv := start(t, cfg)
	want := `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7","parameters":{"retry_after":7}}`
	for i := range 2 {
		r := sendText(t, srv.URL, alice, "chunk 1")
		if r.status != 429 || r.body != want || r.header.Get("Retry-After") != "7" || r.env.Parameters.RetryAfter != 7 {
			t.Fatalf("call %d: %d %s %v", i, r.status, r.body, r.header)
		}
	}
	mustSend(t, sendText(t, srv.URL, alice, "chunk 1"))

	// Per chat: only news gets the 429, with the default retry_after.
	s.SetChatFaults(news, Faults{Next429: 1})
	if m := mustSend(t, sendText(t, srv.URL, alice, "chunk 2")); m.MessageID != 2 {
		t.Errorf("alice message %d", m.MessageID)
	}
	r := sendText(t, srv.URL, "@NEWS", "post")
	if r.status != 429 || r.env.Parameters == nil || r.env.Parameters.RetryAfter != DefaultRetryAfter {
		t.Fatalf("news: %d %s", r.status, r.body)
	}
	m := mustSend(t, sendText(t, srv.URL, "@news", "post"))
	if m.Chat.ID != news || m.Chat.Type != "channel" || m.Chat.Username != "news" || m.Chat.Title != "News" ||
		m.From != nil || m.SenderChat == nil {
		t.Errorf("channel post %+v", m)
	}
	if got := s.Texts(alice); !reflect.DeepEqual(got, []string{"chunk 1", "chunk 2"}) {
		t.Errorf("alice saw %q", got)
	}
	faults := 0
	for _, c := range s.Calls() {
		if c.Fault == "429" {
			faults++
			if c.Status != 429 || c.MessageID != 0 {
				t.Errorf("faulted call %+v", c)
			}
		}
	}
	if faults != 3 {
		t.Errorf("%d faulted calls, want 3", faults)
	}
}

func TestRatesAreSeeded(t *testing.T) {
	run := func(seed int64) []int {
		cfg := testConfig()
		cfg.Seed = seed
		cfg.Faults = Faults{Rate429: 0.2, Rate502: 0.1}
		s := New(cfg)
		var out []int
		for i := range 300 {
			body := fmt.Sprintf(`{"chat_id":1001,"text":"m%d"}`, i)
			req := httptest.NewRequest(http.MethodPost, "/bot"+token+"/sendMessage", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			out = append(out, w.Code)
		}
		return out
	}
	a, b := run(3), run(3)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different outcomes")
	}
	count := map[int]int{}
	for _, c := range a {
		count[c]++
	}
	if count[429] < 35 || count[429] > 85 || count[502] < 12 || count[502] > 50 || count[200]+count[429]+count[502] != 300 {
		t.Errorf("outcomes %v, want about 60 × 429 and 30 × 502", count)
	}
	if reflect.DeepEqual(a, run(4)) {
		t.Error("another seed, same outcomes")
	}
}

func TestBadGateway(t *testing.T) {
	cfg := testConfig()
	cfg.Faults = Faults{Next502: 1}
	s, srv := start(t, cfg)
	r := sendText(t, srv.URL, alice, "x")
	if r.status != 502 || r.header.Get("Content-Type") != "text/html" || r.body != BadGatewayPage ||
		!strings.Contains(r.body, "<title>502 Bad Gateway</title>") || json.Valid([]byte(r.body)) {
		t.Fatalf("%d %q %q", r.status, r.header.Get("Content-Type"), r.body)
	}
	if len(s.Messages(alice)) != 0 {
		t.Error("a 502 delivered the message")
	}
	mustSend(t, sendText(t, srv.URL, alice, "x"))
}

func TestFloodLimit(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	cfg := testConfig()
	cfg.FloodLimit = 2
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, srv := start(t, cfg)
	mustSend(t, sendText(t, srv.URL, alice, "1"))
	mustSend(t, sendText(t, srv.URL, alice, "2"))
	r := sendText(t, srv.URL, alice, "3")
	if r.status != 429 || r.env.Parameters == nil || r.env.Parameters.RetryAfter != 1 ||
		r.env.Description != "Too Many Requests: retry after 1" {
		t.Fatalf("third in a second: %d %s", r.status, r.body)
	}
	if c := s.Calls(); c[len(c)-1].Fault != "flood" {
		t.Errorf("fault %q", c[len(c)-1].Fault)
	}
	mustSend(t, sendText(t, srv.URL, "@news", "other chat")) // the limit is per chat
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	if m := mustSend(t, sendText(t, srv.URL, alice, "3")); m.MessageID != 3 || m.Date != now.Unix() {
		t.Errorf("after a second: %+v", m)
	}
}

func TestMessageIDsPerChat(t *testing.T) {
	cfg := testConfig()
	cfg.AnyChat = true
	s, srv := start(t, cfg)
	other := int64(-100555)
	var ids []int64
	for i, chat := range []int64{alice, other, alice, other, alice} {
		m := mustSend(t, sendText(t, srv.URL, chat, fmt.Sprint("part ", i)))
		ids = append(ids, m.MessageID)
		if chat == other && m.Chat.Type != "group" {
			t.Errorf("chat %d type %q", other, m.Chat.Type)
		}
	}
	if !reflect.DeepEqual(ids, []int64{1, 1, 2, 2, 3}) {
		t.Errorf("ids %v", ids)
	}
	if got := s.Texts(alice); !reflect.DeepEqual(got, []string{"part 0", "part 2", "part 4"}) {
		t.Errorf("alice %q", got)
	}
	// Replies name a delivered message.
	m := mustSend(t, sendText(t, srv.URL, alice, "re", "reply_to_message_id", 2))
	if m.ReplyToMessage == nil || m.ReplyToMessage.MessageID != 2 || m.ReplyToMessage.Text != "part 2" {
		t.Errorf("reply %+v", m.ReplyToMessage)
	}
	m = mustSend(t, sendText(t, srv.URL, alice, "re", "reply_parameters", map[string]any{"message_id": 99, "allow_sending_without_reply": true}))
	if m.ReplyToMessage != nil || m.MessageID != 5 {
		t.Errorf("reply without message %+v", m)
	}
	// The records endpoint.
	resp, err := http.Get(srv.URL + "/sim/messages?chat_id=1001")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []Message
	err = json.NewDecoder(resp.Body).Decode(&msgs)
	resp.Body.Close()
	if err != nil || len(msgs) != 5 || msgs[3].ReplyToMessageID != 2 {
		t.Errorf("/sim/messages: %v %+v", err, msgs)
	}
}

func TestSlowAnswers(t *testing.T) {
	cfg := testConfig()
	cfg.Delay = 50 * time.Millisecond
	s, srv := start(t, cfg)
	begin := time.Now()
	mustSend(t, sendText(t, srv.URL, alice, "slow"))
	if d := time.Since(begin); d < cfg.Delay {
		t.Errorf("answered in %v, want ≥ %v", d, cfg.Delay)
	}
	// A client that gives up during the delay, here as soon as the message
	// is delivered: the message stays delivered, and the call says the
	// client went away.
	s.SetDelay(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.mu.Lock()
	s.delivered = func(Message) { cancel() }
	s.mu.Unlock()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/bot"+token+"/sendMessage?chat_id=1001&text=lost+answer", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the client got an answer")
	}
	srv.Close() // waits for the handler
	calls := s.Calls()
	last := calls[len(calls)-1]
	if !last.ClientGone || last.MessageID != 2 || last.Status != 200 {
		t.Errorf("call %+v", last)
	}
	if got := s.Texts(alice); !reflect.DeepEqual(got, []string{"slow", "lost answer"}) {
		t.Errorf("alice %q", got)
	}
}

func TestTrimming(t *testing.T) {
	_, srv := start(t, testConfig())
	m := mustSend(t, sendText(t, srv.URL, alice, "\n  <b>hi</b> there \n\n", "parse_mode", "HTML"))
	if m.Text != "hi there" || !reflect.DeepEqual(m.Entities, []Entity{{Type: "bold", Offset: 0, Length: 2}}) {
		t.Errorf("%q %+v", m.Text, m.Entities)
	}
	m = mustSend(t, sendText(t, srv.URL, alice, "<b>x  </b>  ", "parse_mode", "HTML"))
	if m.Text != "x" || !reflect.DeepEqual(m.Entities, []Entity{{Type: "bold", Offset: 0, Length: 1}}) {
		t.Errorf("%q %+v", m.Text, m.Entities)
	}
	m = mustSend(t, sendText(t, srv.URL, alice, "plain", "entities", `[{"type":"italic","offset":0,"length":5},{"type":"url","offset":0,"length":1}]`))
	if !reflect.DeepEqual(m.Entities, []Entity{{Type: "italic", Offset: 0, Length: 5}}) {
		t.Errorf("explicit entities %+v", m.Entities)
	}
}

func TestParseChatFlags(t *testing.T) {
	chats, anyChat, err := ParseChatFlags("any, 42, -1001234567890=@news:channel,-5:group", "42,7", "-5")
	if err != nil {
		t.Fatal(err)
	}
	want := []Chat{
		{ID: 42, Status: StatusBlocked},
		{ID: -1001234567890, Username: "news", Type: ChatChannel},
		{ID: -5, Type: ChatGroup, Status: StatusKicked},
		{ID: 7, Status: StatusBlocked},
	}
	if !anyChat || !reflect.DeepEqual(chats, want) {
		t.Errorf("%v %+v", anyChat, chats)
	}
	for _, bad := range [][3]string{{"x", "", ""}, {"1=news", "", ""}, {"1:room", "", ""}, {"1,1", "", ""}, {"", "0", ""}, {"", "1", "1"}} {
		if _, _, err := ParseChatFlags(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := (Config{Token: "nocolon"}).Validate(); err == nil {
		t.Error("token without ':' accepted")
	}
	if err := (Config{Faults: Faults{Rate429: 1.5}}).Validate(); err == nil {
		t.Error("rate 1.5 accepted")
	}
}
