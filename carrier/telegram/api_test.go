package telegram

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	tgsim "github.com/heraldmq/herald/sim/telegram"
)

// Chats of the simulator the tests talk to.
const (
	alice   int64 = 1001           // private
	bob     int64 = 1002           // private, blocked the bot
	group   int64 = -4001          // group, the bot was kicked
	news    int64 = -1001234567890 // channel @news
	carol   int64 = 1003           // private, deactivated
	simTok        = "4242:test-secret"
	aliceID       = "1001"
)

func simConfig() tgsim.Config {
	return tgsim.Config{Token: simTok, Chats: []tgsim.Chat{
		{ID: alice, FirstName: "Alice"},
		{ID: bob, Status: tgsim.StatusBlocked},
		{ID: group, Status: tgsim.StatusKicked},
		{ID: news, Type: tgsim.ChatChannel, Username: "news"},
		{ID: carol, Status: tgsim.StatusDeactivated},
	}}
}

// startSim serves a simulator over real HTTP.
func startSim(t *testing.T, cfg tgsim.Config) (*tgsim.Sim, *httptest.Server) {
	t.Helper()
	s := tgsim.New(cfg)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// newCarrier returns a carrier for base with token, whose idle connections
// close when the test ends.
func newCarrier(t *testing.T, base, token string) *Carrier {
	t.Helper()
	c, err := New(Config{Token: token, BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.client.CloseIdleConnections)
	return c
}

// sends counts the sendMessage calls the simulator finished.
func sends(s *tgsim.Sim) int {
	n := 0
	for _, c := range s.Calls() {
		if c.Method == "sendmessage" {
			n++
		}
	}
	return n
}

// waitSends waits until the simulator finished n sendMessage calls (a call
// whose client went away is recorded once its handler returns).
func waitSends(t *testing.T, s *tgsim.Sim, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for sends(s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d sendMessage calls, want %d", sends(s), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// class names an error's class as the engine sees it.
func class(err error) string {
	var pe *herald.PermanentError
	var ra *herald.RetryAfterError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &pe):
		return "permanent"
	case errors.As(err, &ra):
		return "retry-after"
	}
	return "transient"
}

func msg(target, text string, params map[string]string) *herald.Message {
	return &herald.Message{ID: "m1", Target: target, Text: text, Params: params}
}

// TestSendDeliversToTheSimulator: a plain text, a markdown text (as HTML,
// entities parsed by the simulator), a channel by @username, silent, and a
// reply.
func TestSendDeliversToTheSimulator(t *testing.T) {
	s, srv := startSim(t, simConfig())
	c := newCarrier(t, srv.URL, simTok)
	ctx := context.Background()

	res, err := c.Send(ctx, msg(aliceID, "hello <world> & all", nil))
	if err != nil || res.ExternalID != "1" || res.Answer != "200" {
		t.Fatalf("plain: %+v, %v", res, err)
	}
	res, err = c.Send(ctx, msg(aliceID, "*bold* _it_ `c<d` [docs](https://core.telegram.org/bots)\n```go\nx := 1\n```",
		map[string]string{"parse_mode": "markdown", "disable_notification": "true", "reply_to": "1"}))
	if err != nil || res.ExternalID != "2" {
		t.Fatalf("markdown: %+v, %v", res, err)
	}
	got := s.Messages(alice)
	if len(got) != 2 || got[0].Text != "hello <world> & all" || got[0].ParseMode != "" {
		t.Fatalf("plain message shown as %+v", got)
	}
	m := got[1]
	if m.ParseMode != "HTML" || m.Text != "bold it c<d docs\nx := 1" || !m.DisableNotification || m.ReplyToMessageID != 1 {
		t.Errorf("markdown message shown as %+v", m)
	}
	var types []string
	for _, e := range m.Entities {
		types = append(types, e.Type)
	}
	if strings.Join(types, ",") != "bold,italic,code,text_link,pre" || m.Entities[3].URL != "https://core.telegram.org/bots" || m.Entities[4].Language != "go" {
		t.Errorf("entities %+v", m.Entities)
	}
	if res, err := c.Send(ctx, msg("@News", "to the channel", nil)); err != nil || res.ExternalID != "1" || len(s.Messages(news)) != 1 {
		t.Errorf("@News: %+v, %v; channel shows %d", res, err, len(s.Messages(news)))
	}
}

// TestMarkdownTableThroughTheSimulator: every text of the conversion table,
// sent as markdown, is accepted by the simulator's port of Telegram's HTML
// parser, which shows its visible text.
func TestMarkdownTableThroughTheSimulator(t *testing.T) {
	s, srv := startSim(t, simConfig())
	c := newCarrier(t, srv.URL, simTok)
	for i, tt := range markdownTable {
		if _, err := c.Send(context.Background(), msg(aliceID, tt.in, map[string]string{"parse_mode": "markdown"})); err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		shown := s.Messages(alice)
		if len(shown) != i+1 {
			t.Fatalf("%s: the chat shows %d messages", tt.name, len(shown))
		}
		if got, want := shown[i].Text, strings.Trim(parseMarkdown(tt.in).vis, " \n"); got != want {
			t.Errorf("%s: shown %q, want %q", tt.name, got, want)
		}
	}
}

// TestSendLongMarkdownInChunks: a long markdown text with a code block
// longer than a message arrives as chunks the simulator parses, each within
// the limit, in order, showing the whole text.
func TestSendLongMarkdownInChunks(t *testing.T) {
	s, srv := startSim(t, simConfig())
	c := newCarrier(t, srv.URL, simTok)
	text := strings.Repeat("A paragraph with *bold*, _italic_ and a [link](https://example.com/?a&b).\n\n", 60) +
		"```\n" + strings.Repeat("if x < y && y > z { return }\n", 250) + "```\n\n" + strings.Repeat("Закрытие 👋 ", 300)
	var ids []string
	res, err := c.SendResumable(context.Background(), msg(aliceID, text, map[string]string{"parse_mode": "markdown"}),
		func(id string) error { ids = append(ids, id); return nil })
	if err != nil {
		t.Fatal(err)
	}
	chunks := Split(text, true)
	shown := s.Messages(alice)
	if len(shown) != len(chunks) || len(chunks) < 4 {
		t.Fatalf("%d messages shown for %d chunks", len(shown), len(chunks))
	}
	var want []string
	for i, m := range shown {
		want = append(want, strconv.Itoa(i+1))
		if m.Text != strings.Trim(chunks[i].Visible, " \n") {
			t.Errorf("message %d shows %.80q…, want chunk %d's text", i+1, m.Text, i)
		}
		if units(m.Text) > MaxUnits {
			t.Errorf("message %d: %d units", i+1, units(m.Text))
		}
	}
	if res.ExternalID != strings.Join(want, ",") || len(ids) != len(chunks)-1 || ids[0] != "1" ||
		ids[len(ids)-1] != strings.Join(want[:len(want)-1], ",") {
		t.Errorf("external id %q, progress %v", res.ExternalID, ids)
	}
}

// TestResumeSendsOnlyTheChunksLeft: with the ids of the chunks delivered
// before in ExternalID, a send starts at the next chunk; a progress that
// fails stops the send with its error.
func TestResumeSendsOnlyTheChunksLeft(t *testing.T) {
	s, srv := startSim(t, simConfig())
	c := newCarrier(t, srv.URL, simTok)
	text := strings.Repeat(strings.Repeat("word ", 150)+"\n\n", 15) // 11,280 characters: 3 chunks
	chunks := Split(text, false)
	if len(chunks) != 3 {
		t.Fatalf("%d chunks, want 3", len(chunks))
	}
	m := msg(aliceID, text, nil)
	m.ExternalID = "41,42"
	var reported []string
	res, err := c.SendResumable(context.Background(), m, func(id string) error { reported = append(reported, id); return nil })
	if err != nil || res.ExternalID != "41,42,1" || len(reported) != 0 {
		t.Fatalf("resumed send: %+v, %v, progress %v; want 41,42,1 as the result, no progress after the last chunk", res, err, reported)
	}
	if got := s.Texts(alice); len(got) != 1 || got[0] != strings.TrimSpace(chunks[2].Visible) {
		t.Errorf("the chat shows %d messages, want only the third chunk", len(got))
	}

	gone := errors.New("lease lost")
	m.ExternalID = ""
	_, err = c.SendResumable(context.Background(), m, func(string) error { return gone })
	if !errors.Is(err, gone) || sends(s) != 2 {
		t.Errorf("progress failing: %v after %d calls; want its error after the first chunk", err, sends(s))
	}
}

// TestChunksKeepTheirOwnTimeAndTheChatsPace: the chunks of a text wait
// the spacing between them on the carrier's clock, each call is bound by
// the chunk timeout alone, a send ends rather than start a chunk its
// deadline cannot bound fully, and CallTimeout is the sum of the longest
// text's bounds and spacings.
func TestChunksKeepTheirOwnTimeAndTheChatsPace(t *testing.T) {
	s, srv := startSim(t, simConfig())
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	newPaced := func(chunkTimeout time.Duration) *Carrier {
		c, err := New(Config{Token: simTok, BaseURL: srv.URL, ChunkTimeout: chunkTimeout, Spacing: time.Second, Clock: fake})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.client.CloseIdleConnections)
		return c
	}
	if got, want := newPaced(20*time.Second).CallTimeout(), 256*20*time.Second+255*time.Second; got != want {
		t.Errorf("CallTimeout = %v, want %v: 256 chunks of 20 s, spaced by 1 s", got, want)
	}
	if got := newCarrier(t, srv.URL, simTok).CallTimeout(); got != 0 {
		t.Errorf("CallTimeout without a chunk timeout = %v, want 0: the accept timeout bounds the send", got)
	}
	if _, err := New(Config{Token: simTok, Spacing: -time.Second}); err == nil {
		t.Error("New took a negative spacing")
	}

	text := strings.Repeat(strings.Repeat("word ", 150)+"\n\n", 15) // 3 chunks
	c := newPaced(time.Minute)
	done := make(chan error, 1)
	var reported []string
	go func() {
		_, err := c.SendResumable(context.Background(), msg(aliceID, text, nil), func(id string) error { reported = append(reported, id); return nil })
		done <- err
	}()
	for k := 1; k <= 3; k++ {
		waitSends(t, s, k)
		if k == 3 {
			break
		}
		for fake.Waiters() == 0 { // the spacing after chunk k
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		if n := sends(s); n != k {
			t.Fatalf("%d chunks sent before the spacing after chunk %d passed, want %d", n, k, k)
		}
		fake.Advance(999 * time.Millisecond)
		time.Sleep(20 * time.Millisecond)
		if n := sends(s); n != k {
			t.Fatalf("%d chunks sent 999 ms into the spacing, want %d", n, k)
		}
		fake.Advance(time.Millisecond)
	}
	if err := <-done; err != nil || strings.Join(reported, ";") != "1;1,2" {
		t.Fatalf("paced send: %v, progress %v; want success, progress 1 then 1,2", err, reported)
	}

	// A deadline that leaves less than a chunk timeout after chunk 1 and
	// its spacing: chunk 1 is sent and reported, chunk 2 is not started.
	before := sends(s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reported = nil
	go func() {
		_, err := c.SendResumable(ctx, msg(aliceID, text, nil), func(id string) error { reported = append(reported, id); return nil })
		done <- err
	}()
	waitSends(t, s, before+1)
	for fake.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	fake.Advance(time.Second)
	err := <-done
	var perm *herald.PermanentError
	if err == nil || errors.As(err, &perm) || retryAfter(err) > 0 || !strings.Contains(err.Error(), "chunk 2 of 3") || sends(s) != before+1 ||
		len(reported) != 1 {
		t.Errorf("a send whose time runs out: %v after %d calls, progress %v; want a transient error before chunk 2, chunk 1 reported",
			err, sends(s)-before, reported)
	}
}

// retryAfter is the wait a "not now" error asks for, 0 for any other.
func retryAfter(err error) time.Duration {
	var ra *herald.RetryAfterError
	if errors.As(err, &ra) {
		return ra.After
	}
	return 0
}

// TestErrorClasses sends one message per error class to the simulator over
// real HTTP: the class the engine sees, the text it records, and the calls
// the send made (every class: exactly one).
func TestErrorClasses(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(s *tgsim.Sim)
		token  string
		target string
		send   func(ctx context.Context, c *Carrier, s *tgsim.Sim) error // nil: Send a plain text to target
		class  string
		text   string
	}{
		{name: "chat not found", target: "999", class: "permanent", text: "400 Bad Request: chat not found"},
		{name: "username not found", target: "@nobody_here", class: "permanent", text: "chat not found"},
		{name: "bot was blocked", target: "1002", class: "permanent", text: "403 Forbidden: bot was blocked by the user"},
		{name: "bot was kicked", target: "-4001", class: "permanent", text: "403 Forbidden: bot was kicked from the group chat"},
		{name: "user is deactivated (another 4xx)", target: "1003", class: "permanent", text: "403 Forbidden: user is deactivated"},
		{name: "wrong token", token: "4242:wrong", target: aliceID, class: "permanent", text: "401 Unauthorized"},
		{name: "can't parse entities", target: aliceID, class: "permanent", text: "can't parse entities",
			send: func(ctx context.Context, c *Carrier, _ *tgsim.Sim) error {
				_, err := c.sendMessage(ctx, request{ChatID: []byte(aliceID), Text: "<b>never closed", ParseMode: "HTML"})
				return err
			}},
		{name: "429 with retry_after", target: aliceID, class: "retry-after", text: "429 Too Many Requests: retry after 7",
			setup: func(s *tgsim.Sim) { s.SetChatFaults(alice, tgsim.Faults{Next429: 1, RetryAfter: 7}) }},
		{name: "502 page", target: aliceID, class: "transient", text: "502 Bad Gateway: not the Bot API's answer: <html>",
			setup: func(s *tgsim.Sim) { s.SetFaults(tgsim.Faults{Next502: 1}) }},
		{name: "slow answer, the client gives up", target: aliceID, class: "transient", text: "sendMessage: context canceled",
			setup: func(s *tgsim.Sim) { s.SetDelay(time.Minute) },
			send: func(ctx context.Context, c *Carrier, s *tgsim.Sim) error {
				// The carrier's time runs out once the simulator has the
				// message, which it delivers before its delay (whatever
				// the machine's load), as an accept timeout would. (Once
				// the request was only written, the connection could
				// close before the simulator read it.)
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				go func() {
					for ctx.Err() == nil && len(s.Texts(alice)) == 0 {
						time.Sleep(time.Millisecond)
					}
					cancel()
				}()
				_, err := c.Send(ctx, msg(aliceID, "slow", nil))
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv := startSim(t, simConfig())
			if tt.setup != nil {
				tt.setup(s)
			}
			token := simTok
			if tt.token != "" {
				token = tt.token
			}
			c := newCarrier(t, srv.URL, token)
			var err error
			if tt.send != nil {
				err = tt.send(context.Background(), c, s)
			} else {
				_, err = c.Send(context.Background(), msg(tt.target, "hello", nil))
			}
			if got := class(err); got != tt.class {
				t.Errorf("class %s (%v), want %s", got, err, tt.class)
			}
			if err == nil || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %v, want it to say %q", err, tt.text)
			}
			if err != nil && strings.Contains(err.Error(), token) {
				t.Errorf("the error shows the token: %v", err)
			}
			waitSends(t, s, 1)
			if n := sends(s); n != 1 {
				t.Errorf("%d calls, want exactly 1", n)
			}
			var ra *herald.RetryAfterError
			if tt.class == "retry-after" && (!errors.As(err, &ra) || ra.After != 7*time.Second) {
				t.Errorf("retry after %v, want 7s", err)
			}
		})
	}
}

// TestAnswersThatAreNotTheEnvelope: a network error and bodies a proxy or
// a broken front end could send are transient, quoted, never a panic; a
// migrated group and an error page that echoes the token are handled.
func TestAnswersThatAreNotTheEnvelope(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	c := newCarrier(t, closed, simTok)
	if _, err := c.Send(context.Background(), msg(aliceID, "hi", nil)); class(err) != "transient" || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("network error: %s %v", class(err), err)
	}

	tests := []struct {
		name, body, retryAfter string
		status                 int
		class, text            string
	}{
		{"HTML with 200", "<html><body>Welcome to our proxy</body></html>", "", 200, "transient", "200 OK: not the Bot API's answer: <html><body>Welcome"},
		{"empty 400", "", "", 400, "transient", "400 Bad Request: not the Bot API's answer (empty body)"},
		{"JSON without ok", `{"result":{"message_id":1}}`, "", 200, "transient", "not the Bot API's answer"},
		{"truncated JSON", `{"ok":true,"result":{"message_i`, "", 200, "transient", "not the Bot API's answer"},
		{"429 page with Retry-After", "<html>slow down</html>", "3", 429, "retry-after", "429 Too Many Requests"},
		{"429 envelope without retry_after", `{"ok":false,"error_code":429,"description":"Too Many Requests"}`, "", 429, "transient", "429 Too Many Requests"},
		{"500 envelope", `{"ok":false,"error_code":500,"description":"Internal Server Error"}`, "", 500, "transient", "500 Internal Server Error"},
		{"long body, truncated", strings.Repeat("x", 5000), "", 503, "transient", strings.Repeat("x", ErrorTextLen) + "…"},
		{"migrated group", `{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1001234}}`, "", 400, "permanent", "now the supergroup -1001234"},
		{"page echoing the token", "Cannot POST /bot" + simTok + "/sendMessage", "", 404, "transient", "/bot<token>/sendMessage"},
		{"ok without a message id", `{"ok":true,"result":true}`, "", 200, "ok", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c := newCarrier(t, srv.URL, simTok)
			res, err := c.Send(context.Background(), msg(aliceID, "hi", nil))
			if got := class(err); got != tt.class {
				t.Errorf("class %s (%v), want %s", got, err, tt.class)
			}
			if err != nil && !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %q, want it to say %q", err, tt.text)
			}
			if err != nil && strings.Contains(err.Error(), simTok) {
				t.Errorf("the error shows the token: %v", err)
			}
			if err == nil && res.ExternalID != "?" {
				t.Errorf("accepted without an id: external id %q, want ?", res.ExternalID)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
		})
	}
}

// TestValidate: the target must be a chat, the text there, the params known.
func TestValidate(t *testing.T) {
	c := newCarrier(t, "http://127.0.0.1:1", simTok)
	tests := []struct {
		name   string
		m      *herald.Message
		field  string // "" when valid
		substr string
	}{
		{"chat id", msg("42", "hi", nil), "", ""},
		{"group id", msg("-1001234567890", "hi", nil), "", ""},
		{"channel username", msg("@my_channel", "hi", nil), "", ""},
		{"all params", msg("42", "*hi*", map[string]string{"parse_mode": "markdown", "disable_notification": "false", "reply_to": "7"}), "", ""},
		{"parse_mode none", msg("42", "*hi*", map[string]string{"parse_mode": "none"}), "", ""},
		{"no target", msg("", "hi", nil), "target", "not a Telegram chat"},
		{"name without @", msg("my_channel", "hi", nil), "target", `"my_channel" is not a Telegram chat`},
		{"leading zero", msg("042", "hi", nil), "target", "not a Telegram chat"},
		{"zero", msg("0", "hi", nil), "target", "not a Telegram chat"},
		{"too big", msg("99999999999999999999", "hi", nil), "target", "not a Telegram chat"},
		{"short username", msg("@abc", "hi", nil), "target", "not a Telegram chat"},
		{"spaces", msg(" 42", "hi", nil), "target", "not a Telegram chat"},
		{"payload", &herald.Message{Target: "42", Payload: []byte{1}}, "payload", "takes a text"},
		{"blank text", msg("42", " \n\n\t ", nil), "text", "white space"},
		{"invalid UTF-8", msg("42", "a\xffb", nil), "text", "UTF-8"},
		{"HTML parse mode", msg("42", "hi", map[string]string{"parse_mode": "HTML"}), "params.parse_mode", "want markdown or none"},
		{"MarkdownV2", msg("42", "hi", map[string]string{"parse_mode": "MarkdownV2"}), "params.parse_mode", "want markdown or none"},
		{"disable_notification yes", msg("42", "hi", map[string]string{"disable_notification": "yes"}), "params.disable_notification", "true or false"},
		{"reply_to text", msg("42", "hi", map[string]string{"reply_to": "abc"}), "params.reply_to", "positive integer"},
		{"reply_to negative", msg("42", "hi", map[string]string{"reply_to": "-3"}), "params.reply_to", "positive integer"},
		{"unknown param", msg("42", "hi", map[string]string{"silent": "true"}), "params", `unknown parameter "silent"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Validate(tt.m)
			var inv *herald.InvalidError
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.field != "" && (!errors.As(err, &inv) || inv.Field != tt.field || !strings.Contains(inv.Message, tt.substr)):
				t.Errorf("Validate = %v, want an InvalidError on %s saying %q", err, tt.field, tt.substr)
			}
		})
	}
	if got := c.Lane(msg("@My_Channel", "x", nil)); got != "@my_channel" {
		t.Errorf("Lane(@My_Channel) = %q", got)
	}
	if got := c.Lane(msg("-100123", "x", nil)); got != "-100123" {
		t.Errorf("Lane(-100123) = %q", got)
	}
	for _, bad := range []Config{{}, {Token: "12/34"}, {Token: "1:x", BaseURL: "ftp://h"}, {Token: "1:x", BaseURL: "/relative"}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		} else if bad.Token != "" && strings.Contains(err.Error(), bad.Token) {
			t.Errorf("New's error shows the token: %v", err)
		}
	}
}
