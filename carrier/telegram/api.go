package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/httpsend"
)

// request is sendMessage's JSON body.
type request struct {
	ChatID              json.RawMessage  `json:"chat_id"` // a number, or a string for @username
	Text                string           `json:"text"`
	ParseMode           string           `json:"parse_mode,omitempty"`
	DisableNotification bool             `json:"disable_notification,omitempty"`
	ReplyParameters     *replyParameters `json:"reply_parameters,omitempty"`
}

// replyParameters is the Bot API's ReplyParameters: the first chunk of a
// message with params.reply_to replies to that message, and is sent even
// when it is gone.
type replyParameters struct {
	MessageID                int64 `json:"message_id"`
	AllowSendingWithoutReply bool  `json:"allow_sending_without_reply,omitempty"`
}

// envelope is the Bot API's answer to every call.
type envelope struct {
	OK          *bool           `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter      int64 `json:"retry_after"`
		MigrateToChatID int64 `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// ErrorTextLen is how much of a description or a body an error quotes.
const ErrorTextLen = 200

// permanentTexts are the chat platforms' texts of a target gone for good.
var permanentTexts, _ = herald.NewErrorClassifier(herald.DefaultPermanentPatterns)

// sendMessage sends one chunk and returns its message id, as Telegram
// numbers it ("?" when an accepted answer does not say).
func (c *Carrier) sendMessage(ctx context.Context, r request) (string, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return "", herald.Permanent(fmt.Errorf("sendMessage: encode: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, &body)
	if err != nil {
		return "", herald.Permanent(errors.New("sendMessage: build request: " + c.redact(err.Error())))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "herald-telegram")
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text names the URL, which holds the token
		}
		return "", errors.New("sendMessage: " + c.redact(err.Error()))
	}
	b, readErr := io.ReadAll(io.LimitReader(resp.Body, httpsend.MaxBodyRead))
	resp.Body.Close()
	if readErr != nil && resp.StatusCode/100 == 2 {
		return "", fmt.Errorf("sendMessage: %d: reading the answer: %s", resp.StatusCode, c.redact(readErr.Error()))
	}
	id, err := c.parseResponse(resp.StatusCode, resp.Header.Get("Retry-After"), b)
	return id, herald.WithAnswer(strconv.Itoa(resp.StatusCode), err) // the timeline keeps the status
}

// parseResponse classifies an answer of sendMessage: its HTTP status, its
// Retry-After header and its body. See the package comment.
func (c *Carrier) parseResponse(status int, retryAfter string, body []byte) (string, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || env.OK == nil {
		err := fmt.Errorf("sendMessage: %s: not the Bot API's answer%s", statusText(status), c.quote(body))
		if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
			if d := httpsend.ParseRetryAfter(retryAfter, c.clock.Now()); d > 0 {
				return "", herald.RetryAfter(d, err)
			}
		}
		return "", err
	}
	if *env.OK {
		if status/100 != 2 {
			return "", fmt.Errorf("sendMessage: %s with ok true%s", statusText(status), c.quote(body))
		}
		var msg struct {
			MessageID int64 `json:"message_id"`
		}
		if json.Unmarshal(env.Result, &msg) != nil || msg.MessageID <= 0 {
			return "?", nil // accepted: sending it again would show it twice
		}
		return strconv.FormatInt(msg.MessageID, 10), nil
	}

	code := env.ErrorCode
	if code == 0 {
		code = status
	}
	desc := c.clean(env.Description)
	if desc == "" {
		desc = http.StatusText(code)
	}
	err := fmt.Errorf("sendMessage: %d %s", code, desc)
	var retry, migrate int64
	if p := env.Parameters; p != nil {
		retry, migrate = p.RetryAfter, p.MigrateToChatID
	}
	lower := strings.ToLower(desc)
	switch {
	case retry > 0:
		d := httpsend.MaxRetryAfter
		if retry < int64(httpsend.MaxRetryAfter/time.Second) {
			d = time.Duration(retry) * time.Second
		}
		return "", herald.RetryAfter(d, err)
	case code == http.StatusTooManyRequests:
		if d := httpsend.ParseRetryAfter(retryAfter, c.clock.Now()); d > 0 {
			return "", herald.RetryAfter(d, err)
		}
		return "", err
	case code == http.StatusUnauthorized:
		return "", herald.Permanent(fmt.Errorf("%w (the bot token is wrong or was revoked)", err))
	case strings.Contains(lower, "can't parse entities"):
		return "", herald.Permanent(err)
	case migrate != 0:
		return "", herald.Permanent(fmt.Errorf("%w (the group is now the supergroup %d: send to that id)", err, migrate))
	case permanentTexts.Permanent(err):
		return "", herald.Permanent(err)
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout:
		return "", herald.Permanent(err) // the same request gets the same answer
	}
	return "", err
}

// statusText renders an HTTP status as "502 Bad Gateway".
func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return strconv.Itoa(status) + " " + t
	}
	return strconv.Itoa(status)
}

// redact removes the bot token from a text.
func (c *Carrier) redact(s string) string {
	if c.token == "" {
		return s
	}
	for _, t := range []string{c.token, url.PathEscape(c.token), url.QueryEscape(c.token)} {
		s = strings.ReplaceAll(s, t, "<token>")
	}
	return s
}

// clean makes a text fit for an error: the token removed, valid UTF-8, its
// white space collapsed, at most ErrorTextLen bytes.
func (c *Carrier) clean(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(c.redact(s), "")), " ")
	if len(s) > ErrorTextLen {
		s = strings.ToValidUTF8(s[:ErrorTextLen], "") + "…"
	}
	return s
}

// quote renders the start of a body for an error text.
func (c *Carrier) quote(body []byte) string {
	if s := c.clean(string(body)); s != "" {
		return ": " + s
	}
	return " (empty body)"
}
