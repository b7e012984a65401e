// Package telegram simulates the Telegram Bot API (https://api.telegram.org)
// for carrier tests: getMe and sendMessage on /bot<token>/<method>, with the
// real envelope ({"ok":true,"result":…} or {"ok":false,"error_code":N,
// "description":…,"parameters":{"retry_after":N}}), Telegram's validation
// and error texts, injected faults, and a record of every call and of the
// messages each chat was shown.
//
// # Sources
//
// Built from the Bot API documentation (https://core.telegram.org/bots/api:
// "Making requests", sendMessage, "Formatting options", Message,
// MessageEntity, ResponseParameters) and, where the documentation is silent
// on exact texts or edge cases, from the source of the Bot API server
// (github.com/tdlib/telegram-bot-api, telegram-bot-api/Client.cpp: error
// texts and their "Bad Request: " prefixes, the order of the checks, how
// parameters are read; ClientManager.cpp, HttpConnection.cpp, Query.cpp:
// the envelope, 401, 404, 429 with a Retry-After header) and of tdlib, which
// it runs (github.com/tdlib/td, td/telegram/MessageEntity.cpp: parse_html,
// parse_markdown_v2, parse_markdown and fix_formatted_text, ported here with
// their error texts). The nginx 502 page is the one client libraries' issue
// trackers quote from api.telegram.org (its nginx version is a guess), and
// the 401 text the one they quote for a wrong token.
//
// # What is simulated
//
//   - Paths /bot<token>/<method>, methods case-insensitive, GET or POST,
//     parameters in the URL query, application/x-www-form-urlencoded,
//     multipart/form-data or application/json (the URL query wins on a
//     name given twice). A body that cannot be parsed is answered with a
//     bare 400 and no body, as the Bot API server's HTTP reader does.
//   - An unknown token: 401 "Unauthorized". Any other path: 404 "Not Found";
//     an unknown method: 404 "Not Found: method not found".
//   - getMe: the bot (its id is the token's number before ':').
//   - sendMessage, checked in the server's order: "message text is empty";
//     "text is too long" (over 32768 bytes before parsing); "unsupported
//     parse_mode"; "can't parse entities: …" (HTML, MarkdownV2, Markdown);
//     "chat_id is empty"; "chat not found"; 403 "bot was kicked from the
//     group chat" (supergroup, channel chat) and "user is deactivated";
//     reply_to_message_id / reply_parameters ("message to be replied not
//     found" unless allow_sending_without_reply); then the per-chat faults
//     and the flood limit; "text must be non-empty" and "message is too
//     long" (over MaxTextLength UTF-16 code units after parsing and
//     trimming); 403 "bot was blocked by the user"; else the Message, with
//     message_id counting from 1 in each chat, date, chat {id, type, …},
//     from (the bot; sender_chat for a channel), text and entities
//     (offsets and lengths in UTF-16 code units), reply_to_message.
//
// # Faults
//
// Global faults (Config.Faults, SetFaults) hit sendMessage calls before
// anything is checked, as Telegram's front end would: the next N calls, or a
// seeded share of them, answer 429 "Too Many Requests: retry after N" with
// parameters.retry_after and a Retry-After header, or 502 Bad Gateway with
// nginx's HTML page. Per-chat faults (Chat.Faults, SetChatFaults) hit a
// chat's valid messages just before delivery. Config.FloodLimit answers 429
// when a chat got that many messages in the last second. Config.Delay
// (SetDelay) slows every answer; the message is delivered before the delay,
// so a client that gives up meanwhile leaves a delivered message it never
// heard of (Call.ClientGone), which is how a real duplicate arises. No
// faulted call delivers anything.
//
// # Simplified
//
//   - Chats exist only as configured (or, with AnyChat, for every integer
//     id); a chat's type comes from its id unless set. No updates,
//     webhooks, files, keyboards, topics or business connections; other
//     parameters are recorded and ignored.
//   - Every token but Config.Token answers 401 "Unauthorized", the answer
//     client libraries report for a wrong or revoked token; the open-source
//     server's "Unauthorized: invalid token specified" for a malformed one
//     is not simulated.
//   - Each chat's message_id counts from 1. In Telegram, private chats and
//     basic groups share the bot's one counter, so their ids increase
//     across chats; a carrier may rely only on ids increasing within a
//     chat, which both satisfy.
//   - The length limit counts UTF-16 code units, as entity offsets do and
//     as client libraries report; tdlib's own pre-check counts code points,
//     which is laxer, so what the simulator accepts passes that pre-check
//     (the limit Telegram's servers apply after it is not published).
//   - Telegram's further normalisation of entities (splitting and merging
//     nested ones, dropping ones that may not nest, detecting url, mention,
//     hashtag… entities in the text, removing control characters) is not
//     done; text_link URLs are normalised only roughly (a missing http://
//     and trailing "/" are added, links without a dotted host dropped).
//   - As in the real parser, a bare '&' or '>' in HTML is kept as text even
//     though the documentation asks for &amp; and &gt;; only a bare '<'
//     fails ("Unsupported start tag …" or "Unclosed start tag …").
//   - The flood limit is one number (messages per chat per second), not
//     Telegram's undocumented mix of per-chat, per-group-per-minute and
//     global limits; injected 429s carry Faults.RetryAfter, flood 429s the
//     seconds until the chat's window frees.
//
// GET /sim/calls and /sim/messages?chat_id=N return Calls and Messages as
// JSON, for `herald sim telegram`.
package telegram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultToken is the bot token of a Config without one.
const DefaultToken = "123456:herald-sim-token"

// DefaultRetryAfter is the retry_after, in seconds, of injected 429s when
// Faults.RetryAfter is 0.
const DefaultRetryAfter = 5

// Chat types, as Chat.Type and the Chat object name them.
const (
	ChatPrivate    = "private"
	ChatGroup      = "group"
	ChatSupergroup = "supergroup"
	ChatChannel    = "channel"
)

// ChatStatus is how a chat treats the bot.
type ChatStatus string

// Chat statuses.
const (
	StatusMember      ChatStatus = ""            // messages are delivered
	StatusBlocked     ChatStatus = "blocked"     // 403 Forbidden: bot was blocked by the user
	StatusKicked      ChatStatus = "kicked"      // 403 Forbidden: bot was kicked from the … chat
	StatusDeactivated ChatStatus = "deactivated" // 403 Forbidden: user is deactivated
)

// Chat is a chat the bot can send to.
type Chat struct {
	ID int64
	// Type is ChatPrivate, ChatGroup, ChatSupergroup or ChatChannel; empty
	// means private for a positive id, supergroup for an id of the -100…
	// form, group otherwise.
	Type string
	// Username makes the chat reachable as chat_id "@Username" (given
	// without the '@'; compared without case).
	Username string
	// Title (groups, supergroups, channels) or FirstName (private chats);
	// empty means "Chat <id>" or "User <id>".
	Title     string
	FirstName string
	Status    ChatStatus
	// Faults are this chat's injected failures.
	Faults Faults
}

// Faults injects failures. Counted faults (Next429, then Next502) are used
// up before the rates are drawn; each rate is a share 0..1 of the calls.
type Faults struct {
	Next429    int
	Rate429    float64
	Next502    int
	Rate502    float64
	RetryAfter int // seconds in an injected 429; 0 means DefaultRetryAfter
}

// Config sets up a simulator.
type Config struct {
	// Token is the only bot token accepted; empty means DefaultToken. It
	// has Telegram's form "<bot id>:<secret>".
	Token string
	// BotName and BotUsername describe the bot in getMe; empty means
	// "herald sim" and "herald_sim_bot".
	BotName     string
	BotUsername string
	// Chats are the known chats.
	Chats []Chat
	// AnyChat makes every integer chat_id a known chat, of the type its id
	// suggests, unless Chats lists it.
	AnyChat bool
	// Faults are global injected failures of sendMessage.
	Faults Faults
	// FloodLimit, when positive, answers 429 to a message for a chat that
	// already got FloodLimit messages in the last second.
	FloodLimit int
	// Delay is how long every answer takes.
	Delay time.Duration
	// Seed seeds the draws of the fault rates.
	Seed int64
	// Now is the clock of message dates and of the flood limit; nil means
	// time.Now.
	Now func() time.Time
}

// Validate reports what is wrong with the config.
func (c Config) Validate() error {
	if c.Token != "" {
		if _, err := botID(c.Token); err != nil {
			return err
		}
	}
	check := func(where string, f Faults) error {
		switch {
		case f.Next429 < 0 || f.Next502 < 0:
			return fmt.Errorf("%s: negative fault count", where)
		case f.Rate429 < 0 || f.Rate429 > 1 || f.Rate502 < 0 || f.Rate502 > 1:
			return fmt.Errorf("%s: fault rate outside 0..1", where)
		case f.Rate429+f.Rate502 > 1:
			return fmt.Errorf("%s: 429 and 502 rates add up to more than 1", where)
		case f.RetryAfter < 0:
			return fmt.Errorf("%s: negative retry-after", where)
		}
		return nil
	}
	if err := check("telegram faults", c.Faults); err != nil {
		return err
	}
	seen := map[int64]bool{}
	for _, ch := range c.Chats {
		where := fmt.Sprintf("telegram chat %d", ch.ID)
		if ch.ID == 0 {
			return fmt.Errorf("telegram chat: id 0")
		}
		if seen[ch.ID] {
			return fmt.Errorf("%s: listed twice", where)
		}
		seen[ch.ID] = true
		switch ch.Type {
		case "", ChatPrivate, ChatGroup, ChatSupergroup, ChatChannel:
		default:
			return fmt.Errorf("%s: unknown type %q", where, ch.Type)
		}
		switch ch.Status {
		case StatusMember, StatusBlocked, StatusKicked, StatusDeactivated:
		default:
			return fmt.Errorf("%s: unknown status %q", where, ch.Status)
		}
		if err := check(where, ch.Faults); err != nil {
			return err
		}
	}
	if c.FloodLimit < 0 {
		return fmt.Errorf("telegram: negative flood limit")
	}
	if c.Delay < 0 {
		return fmt.Errorf("telegram: negative delay")
	}
	return nil
}

// botID is the bot's id: the number before the token's ':'.
func botID(token string) (int64, error) {
	head, secret, ok := strings.Cut(token, ":")
	id, err := strconv.ParseInt(head, 10, 64)
	if !ok || err != nil || id <= 0 || secret == "" || strings.Contains(token, "/") {
		return 0, fmt.Errorf("telegram token %q: want <bot id>:<secret>, like 123456:ABC-DEF", token)
	}
	return id, nil
}

// Sim is the simulated Bot API, an http.Handler. It is safe for concurrent
// use.
type Sim struct {
	token string
	bot   User
	any   bool
	flood int
	now   func() time.Time

	mu        sync.Mutex
	delay     time.Duration
	rng       *rand.Rand
	faults    Faults
	chats     map[int64]*chatState
	usernames map[string]int64
	seq       int
	calls     []Call

	delivered func(Message) // a test's hook, called under mu at each delivery
}

var _ http.Handler = (*Sim)(nil)

// chatState is a chat and what it was shown.
type chatState struct {
	chat     Chat
	messages []Message
	recent   []time.Time // delivery times within the flood window
}

// New returns a simulator set up by cfg. It panics if cfg.Validate fails.
func New(cfg Config) *Sim {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.Token == "" {
		cfg.Token = DefaultToken
	}
	if cfg.BotName == "" {
		cfg.BotName = "herald sim"
	}
	if cfg.BotUsername == "" {
		cfg.BotUsername = "herald_sim_bot"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	id, _ := botID(cfg.Token)
	s := &Sim{
		token:     cfg.Token,
		bot:       User{ID: id, IsBot: true, FirstName: cfg.BotName, Username: cfg.BotUsername},
		any:       cfg.AnyChat,
		flood:     cfg.FloodLimit,
		now:       cfg.Now,
		delay:     cfg.Delay,
		rng:       rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Seed)^0x9e3779b97f4a7c15)),
		faults:    cfg.Faults,
		chats:     map[int64]*chatState{},
		usernames: map[string]int64{},
	}
	for _, ch := range cfg.Chats {
		s.addChat(ch)
	}
	return s
}

// Token returns the accepted bot token.
func (s *Sim) Token() string { return s.token }

// AddChat adds a chat, or replaces a known chat's settings (keeping its
// messages).
func (s *Sim) AddChat(ch Chat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addChat(ch)
}

func (s *Sim) addChat(ch Chat) {
	if ch.Type == "" {
		ch.Type = typeOf(ch.ID)
	}
	ch.Username = strings.TrimPrefix(ch.Username, "@")
	if st, ok := s.chats[ch.ID]; ok {
		if st.chat.Username != "" {
			delete(s.usernames, strings.ToLower(st.chat.Username))
		}
		st.chat = ch
	} else {
		s.chats[ch.ID] = &chatState{chat: ch}
	}
	if ch.Username != "" {
		s.usernames[strings.ToLower(ch.Username)] = ch.ID
	}
}

// typeOf is the type a chat id suggests: supergroup and channel ids are
// -100 followed by 10 or more digits, basic group ids other negative ones.
func typeOf(id int64) string {
	switch {
	case id > 0:
		return ChatPrivate
	case id <= -1_000_000_000_000:
		return ChatSupergroup
	default:
		return ChatGroup
	}
}

// SetFaults replaces the global faults (and their remaining counts).
func (s *Sim) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// SetChatFaults replaces the faults of a known chat; it reports false for an
// unknown one.
func (s *Sim) SetChatFaults(chatID int64, f Faults) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.chats[chatID]
	if ok {
		st.chat.Faults = f
	}
	return ok
}

// SetChatStatus sets how a known chat treats the bot; it reports false for
// an unknown chat.
func (s *Sim) SetChatStatus(chatID int64, status ChatStatus) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.chats[chatID]
	if ok {
		st.chat.Status = status
	}
	return ok
}

// SetDelay sets how long answers take from now on.
func (s *Sim) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Call is one finished request.
type Call struct {
	Seq        int               `json:"seq"` // order of arrival, from 1
	Start      time.Time         `json:"start"`
	End        time.Time         `json:"end"`
	HTTPMethod string            `json:"http_method"`
	Method     string            `json:"method"`   // lower-cased, as Telegram matches it
	Encoding   string            `json:"encoding"` // EncodingQuery, EncodingForm, EncodingMultipart or EncodingJSON
	Params     map[string]string `json:"params,omitempty"`
	// Status is the HTTP status; Description the envelope's description
	// (empty for a success, a 502 page or a bare 400).
	Status      int    `json:"status"`
	Description string `json:"description,omitempty"`
	RetryAfter  int    `json:"retry_after,omitempty"`
	// Fault is "429", "502" or "flood" for an injected failure.
	Fault     string `json:"fault,omitempty"`
	ChatID    int64  `json:"chat_id,omitempty"`
	MessageID int64  `json:"message_id,omitempty"` // of the delivered message
	// ClientGone is set when the client went away before the answer.
	ClientGone bool `json:"client_gone,omitempty"`
}

// Message is a message a chat was shown.
type Message struct {
	MessageID int64    `json:"message_id"`
	ChatID    int64    `json:"chat_id"`
	Date      int64    `json:"date"`
	Text      string   `json:"text"` // after parsing and trimming
	Entities  []Entity `json:"entities,omitempty"`
	// Source and ParseMode are the text and parse_mode parameters as sent.
	Source              string `json:"source"`
	ParseMode           string `json:"parse_mode,omitempty"`
	DisableNotification bool   `json:"disable_notification,omitempty"`
	ReplyToMessageID    int64  `json:"reply_to_message_id,omitempty"`
	Call                int    `json:"call"` // the Seq of the call that sent it
}

// Calls returns every finished call, in order of arrival.
func (s *Sim) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.calls)
	slices.SortFunc(out, func(a, b Call) int { return a.Seq - b.Seq })
	return out
}

// Messages returns the messages delivered to a chat, in order.
func (s *Sim) Messages(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.chats[chatID]; ok {
		return slices.Clone(st.messages)
	}
	return nil
}

// Texts returns the texts delivered to a chat, in order.
func (s *Sim) Texts(chatID int64) []string {
	var out []string
	for _, m := range s.Messages(chatID) {
		out = append(out, m.Text)
	}
	return out
}

// answer is what a call is answered.
type answer struct {
	status      int
	body        []byte
	contentType string
	retryAfter  int
	description string
	fault       string
}

// okAnswer is a success envelope around result.
func okAnswer(result any) answer {
	return answer{status: http.StatusOK, body: encode(struct {
		OK     bool `json:"ok"`
		Result any  `json:"result"`
	}{true, result}), contentType: "application/json"}
}

// errAnswer is a failure envelope.
func errAnswer(code int, description string) answer {
	return answer{status: code, description: description, body: encode(struct {
		OK          bool   `json:"ok"`
		ErrorCode   int    `json:"error_code"`
		Description string `json:"description"`
	}{false, code, description}), contentType: "application/json"}
}

// retryAnswer is a 429 with parameters.retry_after.
func retryAnswer(seconds int, fault string) answer {
	type parameters struct {
		RetryAfter int `json:"retry_after"`
	}
	d := fmt.Sprintf("Too Many Requests: retry after %d", seconds)
	return answer{status: http.StatusTooManyRequests, description: d, retryAfter: seconds, fault: fault,
		body: encode(struct {
			OK          bool       `json:"ok"`
			ErrorCode   int        `json:"error_code"`
			Description string     `json:"description"`
			Parameters  parameters `json:"parameters"`
		}{false, http.StatusTooManyRequests, d, parameters{seconds}}),
		contentType: "application/json"}
}

// BadGatewayPage is the body of a simulated 502, the page nginx in front of
// api.telegram.org answers when the Bot API server behind it fails.
const BadGatewayPage = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n" +
	"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.18.0</center>\r\n</body>\r\n</html>\r\n"

func badGateway() answer {
	return answer{status: http.StatusBadGateway, body: []byte(BadGatewayPage), contentType: "text/html", fault: "502"}
}

// encode marshals v as the Bot API server does, without escaping <, > and &.
func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// ServeHTTP answers a Bot API call, or GET /sim/calls and /sim/messages.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/sim/") {
		s.serveRecords(w, r)
		return
	}
	call := Call{Start: time.Now(), HTTPMethod: r.Method}
	s.mu.Lock()
	s.seq++
	call.Seq = s.seq
	s.mu.Unlock()

	p, enc, err := readParams(r)
	call.Encoding, call.Params = enc, p
	token, method, found := splitPath(r.URL.Path)
	if found && method == "" {
		method = p["method"] // as the server does for requests without one in the path
	}
	call.Method = strings.ToLower(method)
	var a answer
	switch {
	case err != nil:
		a = answer{status: http.StatusBadRequest}
	case !found:
		a = errAnswer(http.StatusNotFound, "Not Found")
	case token != s.token:
		a = errAnswer(http.StatusUnauthorized, "Unauthorized")
	default:
		switch call.Method {
		case "getme":
			me := s.bot
			t, f := true, false
			me.CanJoinGroups, me.CanReadAllGroupMessages, me.SupportsInlineQueries = &t, &f, &f
			a = okAnswer(me)
		case "sendmessage":
			a = s.sendMessage(p, &call)
		default:
			a = errAnswer(http.StatusNotFound, "Not Found: method not found")
		}
	}
	call.Status, call.Description, call.RetryAfter, call.Fault = a.status, a.description, a.retryAfter, a.fault

	s.mu.Lock()
	delay := s.delay
	s.mu.Unlock()
	if !wait(r, delay) {
		call.ClientGone = true
	} else {
		if a.contentType != "" {
			w.Header().Set("Content-Type", a.contentType)
		}
		if a.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(a.retryAfter))
		}
		if a.status == http.StatusBadGateway {
			w.Header().Set("Server", "nginx/1.18.0")
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
	}
	call.End = time.Now()
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
}

// splitPath splits /bot<token>/<method>; found is false for any other path.
func splitPath(path string) (token, method string, found bool) {
	rest, ok := strings.CutPrefix(path, "/bot")
	if !ok {
		return "", "", false
	}
	token, method, ok = strings.Cut(rest, "/")
	if !ok {
		return "", "", false
	}
	return token, method, true
}

// wait sleeps for d; it reports false when the client went away first.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// draw decides whether f injects a fault into this call, and consumes it.
func (s *Sim) draw(f *Faults) (answer, bool) {
	retry := f.RetryAfter
	if retry == 0 {
		retry = DefaultRetryAfter
	}
	switch {
	case f.Next429 > 0:
		f.Next429--
		return retryAnswer(retry, "429"), true
	case f.Next502 > 0:
		f.Next502--
		return badGateway(), true
	}
	if f.Rate429 <= 0 && f.Rate502 <= 0 {
		return answer{}, false
	}
	switch x := s.rng.Float64(); {
	case x < f.Rate429:
		return retryAnswer(retry, "429"), true
	case x < f.Rate429+f.Rate502:
		return badGateway(), true
	}
	return answer{}, false
}

// toBool is the Bot API server's reading of a Boolean parameter.
func toBool(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return v == "true" || v == "yes" || v == "1"
}

// sendMessage serves sendMessage; it fills call's chat and message ids.
func (s *Sim) sendMessage(p params, call *Call) answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.draw(&s.faults); ok {
		return a
	}

	source := p["text"]
	if source == "" {
		return errAnswer(http.StatusBadRequest, "Bad Request: message text is empty")
	}
	if len(source) > maxTextBytes {
		return errAnswer(http.StatusBadRequest, "Bad Request: text is too long")
	}
	text, ents, desc := parseText(source, p["parse_mode"], p["entities"])
	if desc != "" {
		return errAnswer(http.StatusBadRequest, desc)
	}

	if p["chat_id"] == "" {
		return errAnswer(http.StatusBadRequest, "Bad Request: chat_id is empty")
	}
	st := s.lookup(p["chat_id"])
	if st == nil {
		return errAnswer(http.StatusBadRequest, "Bad Request: chat not found")
	}
	ch := st.chat
	call.ChatID = ch.ID
	switch ch.Status {
	case StatusKicked:
		kind := "group"
		if ch.Type == ChatSupergroup || ch.Type == ChatChannel {
			kind = ch.Type
		}
		return errAnswer(http.StatusForbidden, "Forbidden: bot was kicked from the "+kind+" chat")
	case StatusDeactivated:
		return errAnswer(http.StatusForbidden, "Forbidden: user is deactivated")
	}

	replyTo, a, ok := s.replyTo(p, st)
	if !ok {
		return a
	}

	if a, ok := s.draw(&st.chat.Faults); ok {
		return a
	}
	now := s.now()
	if s.flood > 0 {
		cut := now.Add(-time.Second)
		recent := st.recent[:0]
		for _, t := range st.recent {
			if t.After(cut) {
				recent = append(recent, t)
			}
		}
		st.recent = recent
		if len(recent) >= s.flood {
			wait := recent[0].Add(time.Second).Sub(now)
			secs := int((wait + time.Second - 1) / time.Second)
			return retryAnswer(max(secs, 1), "flood")
		}
	}

	text, ents, desc = finishText(text, ents)
	if desc != "" {
		return errAnswer(http.StatusBadRequest, desc)
	}
	if ch.Status == StatusBlocked {
		return errAnswer(http.StatusForbidden, "Forbidden: bot was blocked by the user")
	}

	m := Message{
		MessageID:           int64(len(st.messages)) + 1,
		ChatID:              ch.ID,
		Date:                now.Unix(),
		Text:                text,
		Entities:            publicEntities(ents),
		Source:              source,
		ParseMode:           p["parse_mode"],
		DisableNotification: toBool(p["disable_notification"]),
		Call:                call.Seq,
	}
	if replyTo != nil {
		m.ReplyToMessageID = replyTo.MessageID
	}
	st.messages = append(st.messages, m)
	if s.flood > 0 {
		st.recent = append(st.recent, now)
	}
	call.MessageID = m.MessageID
	if s.delivered != nil {
		s.delivered(m)
	}
	return okAnswer(s.messageJSON(m, st, replyTo))
}

// lookup finds the chat a chat_id names, or nil.
func (s *Sim) lookup(chatID string) *chatState {
	if name, ok := strings.CutPrefix(chatID, "@"); ok {
		id, ok := s.usernames[strings.ToLower(name)]
		if !ok {
			return nil
		}
		return s.chats[id]
	}
	id, err := strconv.ParseInt(chatID, 10, 64)
	if err != nil || id == 0 {
		return nil
	}
	if st, ok := s.chats[id]; ok {
		return st
	}
	if !s.any {
		return nil
	}
	s.addChat(Chat{ID: id})
	return s.chats[id]
}

// replyTo resolves reply_parameters, else reply_to_message_id and
// allow_sending_without_reply. It returns the replied message (nil for
// none), or ok false and the error answer.
func (s *Sim) replyTo(p params, st *chatState) (*Message, answer, bool) {
	var (
		id       int64
		chatID   string
		withoutR bool
	)
	if raw, has := p["reply_parameters"]; has {
		if raw == "" {
			return nil, answer{}, true
		}
		var f map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &f); err != nil {
			var v any
			if json.Unmarshal([]byte(raw), &v) == nil {
				return nil, errAnswer(http.StatusBadRequest, "Bad Request: object expected as reply parameters"), false
			}
			return nil, errAnswer(http.StatusBadRequest, "Bad Request: can't parse reply parameters JSON object"), false
		}
		if len(f) == 0 {
			return nil, answer{}, true
		}
		mid, ok := f["message_id"]
		if !ok {
			return nil, errAnswer(http.StatusBadRequest, `Bad Request: can't find field "message_id"`), false
		}
		n, err := strconv.ParseInt(strings.Trim(string(mid), `"`), 10, 32)
		if err != nil {
			return nil, errAnswer(http.StatusBadRequest, `Bad Request: field "message_id" must be a valid Number`), false
		}
		id = n
		if raw, ok := f["chat_id"]; ok {
			chatID = strings.Trim(string(raw), `"`)
		}
		if raw, ok := f["allow_sending_without_reply"]; ok {
			withoutR = toBool(string(raw))
		}
	} else {
		id, _ = strconv.ParseInt(p["reply_to_message_id"], 10, 32)
		withoutR = toBool(p["allow_sending_without_reply"])
	}
	if id <= 0 {
		return nil, answer{}, true
	}
	in := st
	if chatID != "" && chatID != p["chat_id"] {
		if in = s.lookup(chatID); in == nil {
			return nil, errAnswer(http.StatusBadRequest, "Bad Request: chat not found"), false
		}
	}
	if id <= int64(len(in.messages)) {
		m := in.messages[id-1]
		return &m, answer{}, true
	}
	if withoutR {
		return nil, answer{}, true
	}
	return nil, errAnswer(http.StatusBadRequest, "Bad Request: message to be replied not found"), false
}

// chatJSON is a Bot API Chat.
type chatJSON struct {
	ID        int64  `json:"id"`
	Title     string `json:"title,omitempty"`
	Username  string `json:"username,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	Type      string `json:"type"`
}

// messageJSON is a Bot API Message.
type messageJSON struct {
	MessageID      int64        `json:"message_id"`
	From           *User        `json:"from,omitempty"`
	SenderChat     *chatJSON    `json:"sender_chat,omitempty"`
	Chat           chatJSON     `json:"chat"`
	Date           int64        `json:"date"`
	ReplyToMessage *messageJSON `json:"reply_to_message,omitempty"`
	Text           string       `json:"text"`
	Entities       []Entity     `json:"entities,omitempty"`
}

func (s *Sim) messageJSON(m Message, st *chatState, replyTo *Message) *messageJSON {
	c := chatJSON{ID: st.chat.ID, Username: st.chat.Username, Type: st.chat.Type}
	if c.Type == ChatPrivate {
		c.FirstName = st.chat.FirstName
		if c.FirstName == "" {
			c.FirstName = fmt.Sprintf("User %d", c.ID)
		}
	} else {
		c.Title = st.chat.Title
		if c.Title == "" {
			c.Title = fmt.Sprintf("Chat %d", c.ID)
		}
	}
	out := &messageJSON{MessageID: m.MessageID, Chat: c, Date: m.Date, Text: m.Text, Entities: m.Entities}
	if c.Type == ChatChannel {
		out.SenderChat = &c
	} else {
		bot := s.bot
		out.From = &bot
	}
	if replyTo != nil {
		in := st
		if replyTo.ChatID != st.chat.ID {
			in = s.chats[replyTo.ChatID]
		}
		out.ReplyToMessage = s.messageJSON(*replyTo, in, nil)
	}
	return out
}

// serveRecords answers GET /sim/calls and /sim/messages?chat_id=N.
func (s *Sim) serveRecords(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var v any
	switch r.URL.Path {
	case "/sim/calls":
		v = s.Calls()
	case "/sim/messages":
		id, err := strconv.ParseInt(r.URL.Query().Get("chat_id"), 10, 64)
		if err != nil {
			http.Error(w, "chat_id: want an integer chat id", http.StatusBadRequest)
			return
		}
		msgs := s.Messages(id)
		if msgs == nil {
			msgs = []Message{}
		}
		v = msgs
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(encode(v))
}
