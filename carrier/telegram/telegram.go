// Package telegram is a herald.Carrier that sends chat messages through the
// Telegram Bot API's sendMessage (https://core.telegram.org/bots/api).
//
// A message's target is the chat: an integer chat id (negative for groups
// and channels) or @channelusername. Its text is sent as it is (parse mode
// none, the default) or, with params.parse_mode markdown, converted from
// Telegram-style markdown (*bold*, _italic_, `code`, ```blocks```,
// [text](url); see Markdown) to Telegram's HTML parse mode.
//
// A text longer than one message may show (MaxUnits UTF-16 code units of
// visible text) is split into chunks (see Split): at paragraph breaks, else
// line breaks, else between words, and never inside a formatted span unless
// the span alone is longer than a message. The chunks go in order, each
// once the one before was accepted and the chat's spacing (Config.Spacing)
// has passed since, so that a text of several chunks keeps to Telegram's
// one message a second per chat; after each but the last, the carrier
// reports the ids delivered so far (herald.Resumer), which the engine keeps
// as the message's external id, so that a retry resumes after them and a
// chat never shows a chunk twice because of a retry. The message succeeds
// once every chunk is accepted; its external id is then the chunks' message
// ids, joined by commas.
//
// Each chunk's call has its own bound (Config.ChunkTimeout, the route's
// accept timeout), and a text's send the sum of its chunks' bounds and
// spacings: the carrier is a herald.SlowCaller, whose CallTimeout is that
// sum for the longest text (maxSendChunks chunks), and the engine keeps
// the message's claim alive while the send runs. A slow answer to one
// chunk thus leaves the next chunks their own time, and no chunk is cut
// short by the time its elders took, which would leave it delivered and
// unrecorded, and shown twice by the retry. A send never starts a chunk
// that its remaining time cannot bound fully: it stops before, and the
// retry sends the rest.
//
// Answers are classified from the Bot API's envelope
// ({"ok":false,"error_code":N,"description":…,"parameters":{…}}):
//   - 429 with parameters.retry_after: herald.RetryAfter, "not now" (the
//     engine pauses the chat's lane, when the route is gated, and spends no
//     attempt);
//   - 401 (a wrong or revoked token), "can't parse entities", the chat platforms'
//     permanent texts ("chat not found", "bot was blocked", "bot was
//     kicked", …) and every other 4xx: herald.Permanent, since the same
//     request can only get the same answer;
//   - 5xx (Telegram's front answers 502 with an HTML page), timeouts,
//     network errors and any answer that is not the envelope: transient,
//     quoting the start of the body.
//
// The message's lane is its chat (herald.Laner), so that a 429 pauses that
// chat only.
package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	"github.com/heraldmq/herald/internal/httpsend"
)

// DefaultBaseURL is the Bot API's own address.
const DefaultBaseURL = "https://api.telegram.org"

// The message params the carrier reads.
const (
	ParamParseMode           = "parse_mode"           // markdown or none (default)
	ParamDisableNotification = "disable_notification" // "true" or "false"
	ParamReplyTo             = "reply_to"             // the message id the first chunk replies to
)

// The parse modes of params.parse_mode.
const (
	ModeNone     = "none"
	ModeMarkdown = "markdown"
)

// Config describes one bot.
type Config struct {
	// Token is the bot token, as BotFather gives it ("123456:ABC-DEF…").
	// It is a secret: it appears in no error text.
	Token string
	// BaseURL is the Bot API's address; empty means DefaultBaseURL.
	BaseURL string
	// Client sends the requests; nil means httpsend.NewClient (connection
	// reuse, no redirects). The carrier relies on the context for time
	// limits.
	Client *http.Client
	// ChunkTimeout bounds each chunk's call: the route's accept timeout.
	// 0 leaves the calls bounded by the send's own deadline only.
	ChunkTimeout time.Duration
	// Spacing is the least time between a chunk's accepted answer and
	// the next chunk of the same text: the chat's spacing, the telegram
	// route's admission spacing (1 s unless the route sets another). 0
	// sends the chunks back to back.
	Spacing time.Duration
	// Clock tells the time for Retry-After dates and waits the spacing;
	// nil means clock.System().
	Clock clock.Clock
}

// Carrier sends messages to Telegram chats. It is safe for concurrent use.
type Carrier struct {
	endpoint     string // base URL + /bot<token>/sendMessage
	token        string
	client       *http.Client
	chunkTimeout time.Duration
	spacing      time.Duration
	clock        clock.Clock
}

var (
	_ herald.Carrier    = (*Carrier)(nil)
	_ herald.Resumer    = (*Carrier)(nil)
	_ herald.Laner      = (*Carrier)(nil)
	_ herald.SlowCaller = (*Carrier)(nil)
)

// maxSendChunks is the most chunks CallTimeout gives a send the time for:
// those of the longest text the API takes (1 MiB), were each full. A text
// of more chunks (short paragraphs, each a chunk) sends what that time
// bounds, and its retry the rest.
const maxSendChunks = (1 << 20) / MaxUnits

// New checks c and returns a carrier for it.
func New(c Config) (*Carrier, error) {
	if c.Token == "" {
		return nil, errors.New("telegram: the bot token is empty")
	}
	if c.ChunkTimeout < 0 || c.Spacing < 0 {
		return nil, fmt.Errorf("telegram: negative chunk timeout (%v) or spacing (%v)", c.ChunkTimeout, c.Spacing)
	}
	if strings.ContainsFunc(c.Token, func(r rune) bool { return r == '/' || r == '?' || r == '#' || r <= ' ' || r == 0x7f }) {
		return nil, errors.New("telegram: the bot token holds characters a token never has (want <bot id>:<secret>)")
	}
	base := c.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telegram: base_url %q: want an absolute http or https URL", base)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("telegram: base_url %q: want no query or fragment", base)
	}
	cr := &Carrier{endpoint: strings.TrimSuffix(u.String(), "/") + "/bot" + c.Token + "/sendMessage",
		token: c.Token, client: c.Client, chunkTimeout: c.ChunkTimeout, spacing: c.Spacing, clock: c.Clock}
	if cr.client == nil {
		cr.client = httpsend.NewClient()
	}
	if cr.clock == nil {
		cr.clock = clock.System()
	}
	return cr, nil
}

// CallTimeout bounds a send (herald.SlowCaller): the chunk timeout and the
// spacing of each of the longest text's chunks, so that a text's chunks
// each keep their own time. 0 when there is no chunk timeout: the route's
// accept timeout then bounds the whole send.
func (c *Carrier) CallTimeout() time.Duration {
	if c.chunkTimeout == 0 {
		return 0
	}
	return maxSendChunks*c.chunkTimeout + (maxSendChunks-1)*c.spacing
}

// Path returns herald.PathDirect: a message Telegram accepted is delivered.
func (c *Carrier) Path() herald.Path { return herald.PathDirect }

// Lane returns the message's chat, so that the chats wait for one another
// only through the route's own limits. It is asked before Validate, so it
// takes the target as it is; @usernames are compared without case.
func (c *Carrier) Lane(m *herald.Message) string {
	if strings.HasPrefix(m.Target, "@") {
		return strings.ToLower(m.Target)
	}
	return m.Target
}

// chatIDPattern and usernamePattern are the targets a message may name:
// Telegram's chat ids are integers (negative for groups and channels), and
// its public usernames 5–32 letters, digits and underscores, starting with
// a letter.
var (
	chatIDPattern   = regexp.MustCompile(`^-?[1-9][0-9]{0,18}$`)
	usernamePattern = regexp.MustCompile(`^@[A-Za-z][A-Za-z0-9_]{3,31}$`)
)

// options are a message's params, read.
type options struct {
	markdown bool
	silent   bool
	replyTo  int64
}

// Validate checks a message: a text (no payload), a chat, and the params
// parse_mode, disable_notification and reply_to only.
func (c *Carrier) Validate(m *herald.Message) error {
	_, _, err := c.prepare(m)
	return err
}

// prepare validates m and returns its options and the chunks to send (the
// blank ones left out).
func (c *Carrier) prepare(m *herald.Message) (options, []Chunk, error) {
	var o options
	switch {
	case len(m.Payload) > 0:
		return o, nil, herald.Invalid("payload", "a telegram message takes a text, not a payload")
	case m.Text == "":
		return o, nil, herald.Invalid("text", "is required for a telegram message")
	case !utf8.ValidString(m.Text):
		return o, nil, herald.Invalid("text", "is not valid UTF-8")
	}
	if _, err := chatID(m.Target); err != nil {
		return o, nil, err
	}
	for k, v := range m.Params {
		switch k {
		case ParamParseMode:
			switch v {
			case ModeMarkdown:
				o.markdown = true
			case ModeNone, "":
			default:
				return o, nil, herald.Invalid("params.parse_mode", "%q: want markdown or none (herald converts markdown to Telegram's HTML itself)", v)
			}
		case ParamDisableNotification:
			switch v {
			case "true":
				o.silent = true
			case "false", "":
			default:
				return o, nil, herald.Invalid("params.disable_notification", "%q: want true or false", v)
			}
		case ParamReplyTo:
			id, err := strconv.ParseInt(v, 10, 32)
			if err != nil || id <= 0 {
				return o, nil, herald.Invalid("params.reply_to", "%q: want a message id, a positive integer", v)
			}
			o.replyTo = id
		default:
			return o, nil, herald.Invalid("params", "unknown parameter %q for a telegram message (want parse_mode, disable_notification or reply_to)", k)
		}
	}
	var parts []Chunk
	for _, ch := range Split(m.Text, o.markdown) {
		if !ch.Blank() {
			parts = append(parts, ch)
		}
	}
	if len(parts) == 0 {
		return o, nil, herald.Invalid("text", "shows nothing but white space, which Telegram refuses")
	}
	return o, parts, nil
}

// chatID returns the chat_id parameter for a target: a JSON number for an
// integer chat id, a JSON string for @channelusername.
func chatID(target string) (string, error) {
	switch {
	case chatIDPattern.MatchString(target):
		if _, err := strconv.ParseInt(target, 10, 64); err == nil {
			return target, nil
		}
	case usernamePattern.MatchString(target):
		return strconv.Quote(target), nil
	}
	return "", herald.Invalid("target", "%q is not a Telegram chat: want a chat id (an integer, negative for groups and channels) or @channelusername", target)
}

// Send sends m's chunks from the first; see SendResumable.
func (c *Carrier) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	return c.SendResumable(ctx, m, func(string) error { return nil })
}

// SendResumable sends m's chunks in order, after those m.ExternalID already
// names (the ids of the chunks delivered by an earlier try), each bound by
// the chunk timeout and sent once the spacing has passed since the one
// before was accepted. After each accepted chunk that another follows, it
// reports the ids delivered so far to progress, and stops with progress's
// error. The last chunk's id goes in the result instead (its ExternalID:
// every chunk's id, joined by commas): the engine records it as durably as
// a progress, and a progress failing then would turn a complete delivery
// into a failure and a retry that shows the last chunk twice. A text of
// one chunk thus costs no write more than any direct carrier's message.
// Before a chunk that ctx's deadline leaves less than the chunk timeout
// for, it stops with a transient error: the retry sends the rest.
func (c *Carrier) SendResumable(ctx context.Context, m *herald.Message, progress func(externalID string) error) (herald.SendResult, error) {
	o, parts, err := c.prepare(m)
	if err != nil {
		return herald.SendResult{}, herald.Permanent(fmt.Errorf("telegram: %w", err))
	}
	chat, _ := chatID(m.Target)
	var ids []string
	if m.ExternalID != "" {
		ids = strings.Split(m.ExternalID, ",")
	}
	for first, k := len(ids), len(ids); k < len(parts); k++ {
		prefix := "telegram: "
		if len(parts) > 1 {
			prefix = fmt.Sprintf("telegram: chunk %d of %d: ", k+1, len(parts))
		}
		if k > first {
			if err := c.pause(ctx); err != nil {
				return herald.SendResult{}, fmt.Errorf("%swaiting the chat's spacing: %w", prefix, err)
			}
			if deadline, ok := ctx.Deadline(); ok && c.chunkTimeout > 0 && time.Until(deadline) < c.chunkTimeout {
				return herald.SendResult{}, fmt.Errorf("%snot sent: the send's time is running out; its retry sends it", prefix)
			}
		}
		req := request{ChatID: json.RawMessage(chat), Text: parts[k].Text, DisableNotification: o.silent}
		if o.markdown {
			req.ParseMode = "HTML"
		}
		if k == 0 && o.replyTo > 0 {
			req.ReplyParameters = &replyParameters{MessageID: o.replyTo, AllowSendingWithoutReply: true}
		}
		id, err := c.sendChunk(ctx, req)
		if err != nil {
			return herald.SendResult{}, prefixed(err, prefix)
		}
		ids = append(ids, id)
		if k < len(parts)-1 {
			if err := progress(strings.Join(ids, ",")); err != nil {
				return herald.SendResult{}, err
			}
		}
	}
	// Every chunk's call was answered 200 with "ok": true, the Bot API's one
	// success: the timeline keeps it as the attempt's answer.
	return herald.SendResult{ExternalID: strings.Join(ids, ","), Answer: "200"}, nil
}

// sendChunk sends one chunk, bounded by the chunk timeout.
func (c *Carrier) sendChunk(ctx context.Context, r request) (string, error) {
	if c.chunkTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.chunkTimeout)
		defer cancel()
	}
	return c.sendMessage(ctx, r)
}

// pause waits the spacing on the carrier's clock, or until ctx ends.
func (c *Carrier) pause(ctx context.Context) error {
	if c.spacing <= 0 {
		return nil
	}
	done := make(chan struct{})
	t := c.clock.AfterFunc(c.spacing, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// prefixed puts prefix before err's text, keeping its class (permanent,
// "not now", or transient) and its answer code.
func prefixed(err error, prefix string) error {
	var ra *herald.RetryAfterError
	var pe *herald.PermanentError
	answer := herald.AnswerOf(err)
	switch {
	case errors.As(err, &ra):
		return herald.WithAnswer(answer, herald.RetryAfter(ra.After, fmt.Errorf("%s%w", prefix, ra.Err)))
	case errors.As(err, &pe):
		return herald.WithAnswer(answer, herald.Permanent(fmt.Errorf("%s%w", prefix, pe.Err)))
	}
	return fmt.Errorf("%s%w", prefix, err)
}
