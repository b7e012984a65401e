package herald_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/telegram"
	"github.com/heraldmq/herald/clock"
	"github.com/heraldmq/herald/config"
	"github.com/heraldmq/herald/internal/httpsend"
	tgsim "github.com/heraldmq/herald/sim/telegram"
)

// The simulator's chats in these tests.
const (
	tgAlice   int64 = 1001 // private
	tgDave    int64 = 1004 // private
	tgBob     int64 = 1002 // blocked the bot
	tgGroup   int64 = -4001
	tgToken         = "4242:e2e-secret"
	tgAliceID       = "1001"
)

// tgRig is an engine with one telegram route, "chat", whose carrier talks
// over real HTTP to a Bot API simulator behind a recorder: the recorder
// notes each sendMessage call's chat and the engine's (fake) time, and a
// test's hook may answer a call itself instead of the simulator. The
// simulator keeps Telegram's flood limit, one message a second per chat,
// on the engine's clock; the carrier is wired as herald serve wires it:
// each chunk bound by the route's accept timeout, the chunks of a text
// spaced by the route's spacing, waited on the engine's clock.
type tgRig struct {
	*rig
	sim   *tgsim.Sim
	pacer *pacer

	mu    sync.Mutex
	calls []tgCall
	hook  func(n int, w http.ResponseWriter, r *http.Request) bool // n counts from 1; true: answered
}

type tgCall struct {
	at   time.Time
	chat string
}

// pacer is the carrier's clock: the engine's, noting each wait the carrier
// starts (its spacing between chunks), which the rig's settle moves the
// clock past.
type pacer struct {
	clock.Clock
	waits chan time.Duration
}

func (p *pacer) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := p.Clock.AfterFunc(d, f)
	p.waits <- d
	return t
}

// newTelegramRig builds the rig. The route's policy is what the config
// gives a telegram route (profile channel, spacing 1 s per chat, a circuit),
// changed by adjust.
func newTelegramRig(t *testing.T, token string, adjust func(*herald.Route)) *tgRig {
	t.Helper()
	return newTelegramRigWith(t, token, adjust, func(*herald.Config) {})
}

// newTelegramRigWith is newTelegramRig with the engine's config changed by
// adjustCfg (a wrapped store).
func newTelegramRigWith(t *testing.T, token string, adjust func(*herald.Route), adjustCfg func(*herald.Config)) *tgRig {
	t.Helper()
	tr := &tgRig{}
	tr.sim = tgsim.New(tgsim.Config{Token: tgToken, FloodLimit: 1, Now: func() time.Time { return tr.clock.Now() }, Chats: []tgsim.Chat{
		{ID: tgAlice}, {ID: tgDave}, {ID: tgBob, Status: tgsim.StatusBlocked}, {ID: tgGroup, Status: tgsim.StatusKicked},
	}})
	srv := httptest.NewServer(http.HandlerFunc(tr.serve))
	t.Cleanup(srv.Close)
	client := httpsend.NewClient()
	t.Cleanup(client.CloseIdleConnections)
	p, err := config.Route{Name: "chat", Carrier: config.CarrierTelegram}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	route := herald.Route{Name: "chat", Policy: p}
	if adjust != nil {
		adjust(&route)
	}
	tr.rig = newRigWith(t, func(cfg *herald.Config) {
		tr.pacer = &pacer{Clock: cfg.Clock, waits: make(chan time.Duration, 16)}
		c, err := telegram.New(telegram.Config{Token: token, BaseURL: srv.URL, Client: client,
			ChunkTimeout: route.Policy.Timeouts.Accept, Spacing: route.Policy.Admission.Spacing, Clock: tr.pacer})
		if err != nil {
			t.Fatal(err)
		}
		route.Carrier = c
		cfg.Routes = []herald.Route{route}
		adjustCfg(cfg)
	}, nil)
	return tr
}

// settle waits until the engine is idle, moving the clock on past each
// wait of the carrier's between chunks as it starts.
func (tr *tgRig) settle() {
	tr.t.Helper()
	deadline := time.Now().Add(patience)
	for !tr.eng.Idle() {
		select {
		case d := <-tr.pacer.waits:
			tr.clock.Advance(d)
			continue
		default:
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("the engine is not idle after %v", patience)
		}
		time.Sleep(time.Millisecond)
	}
}

// advance moves the clock by d once the engine is idle, and waits until it
// is idle again (see settle).
func (tr *tgRig) advance(d time.Duration) {
	tr.t.Helper()
	tr.settle()
	tr.clock.Advance(d)
	tr.settle()
}

func (tr *tgRig) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ChatID json.RawMessage `json:"chat_id"`
	}
	_ = json.Unmarshal(body, &req)
	tr.mu.Lock()
	tr.calls = append(tr.calls, tgCall{at: tr.clock.Now(), chat: strings.Trim(string(req.ChatID), `"`)})
	n, hook := len(tr.calls), tr.hook
	tr.mu.Unlock()
	if hook != nil && hook(n, w, r) {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	tr.sim.ServeHTTP(w, r)
}

// setHook sets the hook that may answer calls instead of the simulator.
func (tr *tgRig) setHook(h func(n int, w http.ResponseWriter, r *http.Request) bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.hook = h
}

// sendCalls returns the sendMessage calls so far, in order.
func (tr *tgRig) sendCalls() []tgCall {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]tgCall(nil), tr.calls...)
}

// callsTo returns the times of the calls to chat.
func (tr *tgRig) callsTo(chat string) []time.Time {
	var out []time.Time
	for _, c := range tr.sendCalls() {
		if c.chat == chat {
			out = append(out, c.at)
		}
	}
	return out
}

// longText is a plain text of 11,130 characters in three chunks of
// paragraphs.
func longText(t *testing.T) (string, []telegram.Chunk) {
	t.Helper()
	text := strings.Repeat(strings.Repeat("слово ", 120)+"конец.\n\n", 15)
	chunks := telegram.Split(text, false)
	if len(chunks) != 3 {
		t.Fatalf("the text is %d chunks, want 3", len(chunks))
	}
	return text, chunks
}

// TestTelegramRetryAfterChunkTwoOfThreeSendsOnlyTheThird: the third call,
// for the third chunk of a long text, answers 502; the message waits to
// retry with the first two chunks' ids, and the retry sends the third chunk
// only, so the chat shows each chunk once, in order.
func TestTelegramRetryAfterChunkTwoOfThreeSendsOnlyTheThird(t *testing.T) {
	tr := newTelegramRig(t, tgToken, nil)
	tr.setHook(func(n int, _ http.ResponseWriter, _ *http.Request) bool {
		if n == 3 {
			tr.sim.SetChatFaults(tgAlice, tgsim.Faults{Next502: 1}) // the simulator answers this call 502
		}
		return false
	})
	text, chunks := longText(t)
	tr.start()
	m := tr.send(herald.SendRequest{Route: "chat", Target: tgAliceID, Text: text})
	if m.Lane != tgAliceID {
		t.Errorf("lane %q, want the chat %s", m.Lane, tgAliceID)
	}
	tr.settle()
	got := tr.get(m.ID)
	if got.Status != herald.StatusToRetry || got.ExternalID != "1,2" || got.Attempt != 1 || !strings.Contains(got.LastError, "chunk 3 of 3: sendMessage: 502 Bad Gateway") {
		t.Fatalf("after the 502 on chunk 3: %s, external id %q, attempt %d, last error %q; want TO_RETRY with the ids 1,2",
			got.Status, got.ExternalID, got.Attempt, got.LastError)
	}
	if n := len(tr.sim.Messages(tgAlice)); n != 2 {
		t.Fatalf("the chat shows %d messages after the 502, want 2", n)
	}

	tr.advance(5 * time.Second) // the channel profile's first retry
	got = tr.get(m.ID)
	if got.Status != herald.StatusDeliverySuccessful || got.ExternalID != "1,2,3" || got.Attempt != 2 {
		t.Fatalf("after the retry: %s, external id %q, attempt %d; want DELIVERY_SUCCESSFUL, 1,2,3, attempt 2", got.Status, got.ExternalID, got.Attempt)
	}
	shown := tr.sim.Messages(tgAlice)
	if len(shown) != 3 {
		t.Fatalf("the chat shows %d messages, want the 3 chunks once each", len(shown))
	}
	for i, sm := range shown {
		if sm.MessageID != int64(i+1) || sm.Text != strings.TrimSpace(chunks[i].Visible) {
			t.Errorf("message %d (id %d) shows %.40q…, want chunk %d", i+1, sm.MessageID, sm.Text, i+1)
		}
	}
	if n := len(tr.sendCalls()); n != 4 {
		t.Errorf("%d sendMessage calls, want 4 (3 chunks and the failed one)", n)
	}
}

// TestTelegramLongTextKeepsThePaceOfItsChat sends a text of three chunks
// to a chat that takes one message a second (the simulator's flood limit,
// on the engine's clock), through a route whose accept timeout is 1 s,
// and answers chunk 2 slowly (750 ms), after a spacing that took real time
// too (500 ms): the chunks go 1 s apart on the engine's clock, so none
// draws a 429, and chunk 2's slow answer is within its own bound, though
// not within what the accept timeout would leave of the whole text's: the
// text is delivered at its first attempt, each chunk shown once.
func TestTelegramLongTextKeepsThePaceOfItsChat(t *testing.T) {
	const accept = time.Second
	tr := newTelegramRig(t, tgToken, func(r *herald.Route) { r.Policy.Timeouts.Accept = accept })
	tr.setHook(func(n int, _ http.ResponseWriter, _ *http.Request) bool {
		switch n {
		case 2:
			tr.sim.SetDelay(3 * accept / 4) // chunk 2 is shown, its answer comes late
		case 3:
			tr.sim.SetDelay(0)
		}
		return false
	})
	text, chunks := longText(t)
	tr.start()
	m := tr.send(herald.SendRequest{Route: "chat", Target: tgAliceID, Text: text})
	// The spacings between chunks pass in steps, for the claim keeper to
	// keep the message's claim (its accept timeout is as long as a
	// spacing); the first takes real time too.
	waits := 0
	for deadline := time.Now().Add(patience); ; {
		select {
		case d := <-tr.pacer.waits:
			if d != time.Second {
				t.Fatalf("the carrier waits %v between chunks, want the chat's spacing, 1s", d)
			}
			if waits++; waits == 1 {
				time.Sleep(accept / 2)
			}
			stepPastDeadlines(t, tr.rig, m.ID, d, false)
			continue
		case <-time.After(10 * time.Millisecond):
		}
		if st := tr.get(m.ID).Status; st.Terminal() || st == herald.StatusToRetry {
			break // the first attempt ended
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first attempt did not end within %v", patience)
		}
	}
	tr.settle()
	if waits != len(chunks)-1 {
		t.Errorf("the carrier waited %d times between chunks, want %d", waits, len(chunks)-1)
	}
	got := tr.get(m.ID)
	if got.Status != herald.StatusDeliverySuccessful || got.Attempt != 1 || got.ExternalID != "1,2,3" {
		t.Fatalf("ended %s at attempt %d, external id %q (%q); want DELIVERY_SUCCESSFUL at attempt 1 with 1,2,3",
			got.Status, got.Attempt, got.ExternalID, got.LastError)
	}
	shown := tr.sim.Messages(tgAlice)
	if len(shown) != len(chunks) {
		t.Fatalf("the chat shows %d messages, want the %d chunks once each", len(shown), len(chunks))
	}
	for i, sm := range shown {
		if sm.Text != strings.TrimSpace(chunks[i].Visible) {
			t.Errorf("message %d shows %.40q…, want chunk %d", i+1, sm.Text, i+1)
		}
	}
	for _, c := range tr.sim.Calls() {
		if c.Status == http.StatusTooManyRequests {
			t.Errorf("call %d answered 429 (%s): the chunks did not keep the chat's pace", c.Seq, c.Fault)
		}
	}
	calls := tr.callsTo(tgAliceID)
	for i := 1; i < len(calls); i++ {
		if gap := calls[i].Sub(calls[i-1]); gap < time.Second {
			t.Errorf("chunk %d came %v after chunk %d, want the chat's spacing, 1s", i+1, gap, i)
		}
	}
	if len(calls) != len(chunks) {
		t.Errorf("%d sendMessage calls, want %d", len(calls), len(chunks))
	}
}

// TestTelegram429PausesTheChatOnly: a 429 with retry_after 2 on a chat
// pauses that chat: its next call comes 2 s later on the engine's clock,
// another chat's message goes at once, and the message ends with attempt 1
// (the 429 spent none).
func TestTelegram429PausesTheChatOnly(t *testing.T) {
	tr := newTelegramRig(t, tgToken, nil)
	tr.sim.SetChatFaults(tgAlice, tgsim.Faults{Next429: 1, RetryAfter: 2})
	tr.start()
	first := tr.send(herald.SendRequest{Route: "chat", Target: tgAliceID, Text: "one"})
	tr.settle()
	got := tr.get(first.ID)
	if got.Status != herald.StatusToRetry || got.Attempt != 0 || !got.DueAt.Equal(t0.Add(2*time.Second)) ||
		!strings.Contains(got.LastError, "429 Too Many Requests: retry after 2") {
		t.Fatalf("after the 429: %s attempt %d due %v (%q); want TO_RETRY attempt 0 due +2s", got.Status, got.Attempt, got.DueAt, got.LastError)
	}
	second := tr.send(herald.SendRequest{Route: "chat", Target: tgAliceID, Text: "two"})
	other := tr.send(herald.SendRequest{Route: "chat", Target: "1004", Text: "elsewhere"})
	tr.settle()
	if got := tr.get(other.ID); got.Status != herald.StatusDeliverySuccessful {
		t.Errorf("another chat's message: %s, want delivered at once", got.Status)
	}
	x, err := tr.eng.Explain(context.Background(), "acme", second.ID)
	if err != nil || x.Reason != "lane_paused" || x.Until == nil || !x.Until.Equal(t0.Add(2*time.Second)) {
		t.Errorf("explain of the chat's next message = %+v, %v; want lane_paused until +2s", x, err)
	}
	tr.advance(time.Second)
	if n := len(tr.callsTo(tgAliceID)); n != 1 {
		t.Fatalf("%d calls to the chat within the pause, want the first only", n)
	}
	tr.advance(time.Second)
	tr.advance(time.Second) // the chat's spacing: its next message a second later
	calls := tr.callsTo(tgAliceID)
	if len(calls) != 3 {
		t.Fatalf("%d calls to the chat, want 3", len(calls))
	}
	for i, at := range calls[1:] {
		if at.Before(t0.Add(2 * time.Second)) {
			t.Errorf("call %d to the chat at +%v, before the 2 s retry_after ended", i+2, at.Sub(t0))
		}
	}
	for _, m := range []*herald.Message{first, second} {
		if got := tr.get(m.ID); got.Status != herald.StatusDeliverySuccessful || got.Attempt != 1 {
			t.Errorf("%s: %s at attempt %d, want DELIVERY_SUCCESSFUL at attempt 1", m.Text, got.Status, got.Attempt)
		}
	}
	if texts := tr.sim.Texts(tgAlice); strings.Join(texts, ",") != "one,two" {
		t.Errorf("the chat shows %v, want one, two", texts)
	}
}

// TestTelegramErrorClasses sends one message per error class through the
// engine to the simulator over real HTTP and counts the calls it takes to
// end: a permanent error exactly one (DELIVERY_FAILED at once); a 5xx,
// a timeout, a network error and an answer that is not the Bot API's one
// then a retry that succeeds; a 429 one then a retry that spends no attempt.
// ("can't parse entities", which the carrier's own HTML never causes, is
// checked against the simulator in carrier/telegram.)
func TestTelegramErrorClasses(t *testing.T) {
	timeoutOnce := func(n int, _ http.ResponseWriter, r *http.Request) bool {
		if n == 1 {
			<-r.Context().Done() // answers after the carrier gave up
			return true
		}
		return false
	}
	tests := []struct {
		name     string
		token    string
		target   string
		setup    func(tr *tgRig)
		hook     func(n int, w http.ResponseWriter, r *http.Request) bool
		accept   time.Duration
		wait     time.Duration // clock moved after the first call
		calls    int
		status   herald.Status
		attempt  int
		errorSay string
	}{
		{name: "chat not found", target: "999", calls: 1, status: herald.StatusDeliveryFailed, attempt: 1, errorSay: "400 Bad Request: chat not found"},
		{name: "bot was blocked", target: "1002", calls: 1, status: herald.StatusDeliveryFailed, attempt: 1, errorSay: "bot was blocked by the user"},
		{name: "bot was kicked", target: "-4001", calls: 1, status: herald.StatusDeliveryFailed, attempt: 1, errorSay: "bot was kicked from the group chat"},
		{name: "401 wrong token", token: "4242:wrong", target: tgAliceID, calls: 1, status: herald.StatusDeliveryFailed, attempt: 1, errorSay: "401 Unauthorized"},
		{name: "429 retry_after", target: tgAliceID, wait: 3 * time.Second, calls: 2, status: herald.StatusDeliverySuccessful, attempt: 1,
			setup: func(tr *tgRig) { tr.sim.SetChatFaults(tgAlice, tgsim.Faults{Next429: 1, RetryAfter: 3}) }},
		{name: "502 page", target: tgAliceID, wait: 5 * time.Second, calls: 2, status: herald.StatusDeliverySuccessful, attempt: 2,
			setup: func(tr *tgRig) { tr.sim.SetFaults(tgsim.Faults{Next502: 1}) }},
		{name: "timeout", target: tgAliceID, wait: 5 * time.Second, calls: 2, status: herald.StatusDeliverySuccessful, attempt: 2,
			accept: time.Second, hook: timeoutOnce}, // ample time for the request to arrive
		{name: "network error", target: tgAliceID, wait: 5 * time.Second, calls: 2, status: herald.StatusDeliverySuccessful, attempt: 2,
			hook: func(n int, w http.ResponseWriter, _ *http.Request) bool {
				if n == 1 {
					conn, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						conn.Close() // the connection drops before an answer
					}
					return true
				}
				return false
			}},
		{name: "not the envelope", target: tgAliceID, wait: 5 * time.Second, calls: 2, status: herald.StatusDeliverySuccessful, attempt: 2,
			hook: func(n int, w http.ResponseWriter, _ *http.Request) bool {
				if n == 1 {
					w.Header().Set("Content-Type", "text/html")
					_, _ = io.WriteString(w, "<html><body>captive portal</body></html>")
					return true
				}
				return false
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := tgToken
			if tt.token != "" {
				token = tt.token
			}
			tr := newTelegramRig(t, token, func(r *herald.Route) {
				if tt.accept > 0 {
					r.Policy.Timeouts.Accept = tt.accept
				}
			})
			tr.setHook(tt.hook)
			if tt.setup != nil {
				tt.setup(tr)
			}
			tr.start()
			m := tr.send(herald.SendRequest{Route: "chat", Target: tt.target, Text: "hello"})
			tr.settle()
			if tt.wait > 0 {
				if got := tr.get(m.ID); got.Status != herald.StatusToRetry {
					t.Fatalf("after the first call: %s (%q), want TO_RETRY", got.Status, got.LastError)
				}
				tr.advance(tt.wait)
			}
			got := tr.get(m.ID)
			if got.Status != tt.status || got.Attempt != tt.attempt {
				t.Errorf("ended %s at attempt %d (%q), want %s at attempt %d", got.Status, got.Attempt, got.LastError, tt.status, tt.attempt)
			}
			if !strings.Contains(got.LastError, tt.errorSay) || strings.Contains(got.LastError, token) {
				t.Errorf("last error %q, want it to say %q (and not the token)", got.LastError, tt.errorSay)
			}
			if tt.status == herald.StatusDeliveryFailed && !strings.HasPrefix(got.Timeline[len(got.Timeline)-1].Reason, "permanent error") {
				t.Errorf("failed for %q, want a permanent error", got.Timeline[len(got.Timeline)-1].Reason)
			}
			if n := len(tr.sendCalls()); n != tt.calls {
				t.Errorf("%d sendMessage calls, want %d", n, tt.calls)
			}
		})
	}
}

// TestTelegramLaneIsTheChatUnlessNamed: a message's lane is its chat
// (usernames without case), unless the message or the route names one.
func TestTelegramLaneIsTheChatUnlessNamed(t *testing.T) {
	tr := newTelegramRig(t, tgToken, nil)
	for target, want := range map[string]string{"-1001234567890": "-1001234567890", "@Some_Channel": "@some_channel"} {
		if m := tr.send(herald.SendRequest{Route: "chat", Target: target, Text: "x"}); m.Lane != want {
			t.Errorf("target %s: lane %q, want %q", target, m.Lane, want)
		}
	}
	if m := tr.send(herald.SendRequest{Route: "chat", Target: "42", Text: "x", Lane: "mine"}); m.Lane != "mine" {
		t.Errorf("a message's own lane: %q", m.Lane)
	}
	withLane := newTelegramRig(t, tgToken, func(r *herald.Route) { r.Lane = "ops" })
	if m := withLane.send(herald.SendRequest{Route: "chat", Target: "42", Text: "x"}); m.Lane != "ops" {
		t.Errorf("the route's default lane: %q, want ops", m.Lane)
	}
	if _, _, err := tr.eng.Send(context.Background(), "acme", herald.SendRequest{Route: "chat", Target: "not-a-chat", Text: "x"}); err == nil ||
		!strings.Contains(err.Error(), "target") {
		t.Errorf("a bad target: %v, want an error naming target", err)
	}
}

// TestTelegramNextMessageWaitsForTheLastChunk: a 3-chunk text and then a
// short one to the same chat, against a Bot API that allows one message a
// second per chat: the short one is not sent while the chunks go (one
// message of a chat at a time), and goes a second after the last chunk
// (the chat's spacing, from the end of a message sent in parts), so that
// no call draws a 429.
func TestTelegramNextMessageWaitsForTheLastChunk(t *testing.T) {
	tr := newTelegramRig(t, tgToken, nil)
	text, chunks := longText(t)
	long := tr.send(herald.SendRequest{Route: "chat", Target: tgAliceID, Text: text})
	short := tr.send(herald.SendRequest{Route: "chat", Target: tgAliceID, Text: "and one more thing"})
	tr.start()
	tr.settle() // the chunks go, the clock moved past each spacing between them
	if got := tr.get(long.ID); got.Status != herald.StatusDeliverySuccessful {
		t.Fatalf("the long text: %s (%q)", got.Status, got.LastError)
	}
	if got := tr.get(short.ID); got.Status != herald.StatusQueued {
		t.Fatalf("the short text right after the last chunk: %s, want QUEUED until the chat's spacing has passed", got.Status)
	}
	tr.advance(time.Second)
	tr.settle()
	if got := tr.get(short.ID); got.Status != herald.StatusDeliverySuccessful || got.Attempt != 1 {
		t.Fatalf("the short text a second later: %s at attempt %d (%q), want DELIVERY_SUCCESSFUL at attempt 1", got.Status, got.Attempt, got.LastError)
	}
	calls := tr.callsTo(tgAliceID)
	if len(calls) != len(chunks)+1 {
		t.Fatalf("%d sendMessage calls to the chat, want %d", len(calls), len(chunks)+1)
	}
	for i := 1; i < len(calls); i++ {
		if gap := calls[i].Sub(calls[i-1]); gap < time.Second {
			t.Errorf("call %d came %v after call %d, want the chat's spacing, 1s", i+1, gap, i)
		}
	}
	for _, c := range tr.sim.Calls() {
		if c.Status == http.StatusTooManyRequests {
			t.Errorf("call %d answered 429 (%s)", c.Seq, c.Fault)
		}
	}
}
