package telegram

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxTextLength is the longest message text sendMessage accepts, in UTF-16
// code units after entity parsing and trimming.
const MaxTextLength = 4096

// maxTextBytes is the Bot API server's limit on the text parameter itself,
// before parsing ("text is too long").
const maxTextBytes = 1 << 15

// Entity is a MessageEntity of the Bot API: a span of the text, with offset
// and length in UTF-16 code units.
type Entity struct {
	Type           string `json:"type"`
	Offset         int    `json:"offset"`
	Length         int    `json:"length"`
	URL            string `json:"url,omitempty"`             // text_link
	User           *User  `json:"user,omitempty"`            // text_mention
	Language       string `json:"language,omitempty"`        // pre
	CustomEmojiID  string `json:"custom_emoji_id,omitempty"` // custom_emoji
	UnixTime       int64  `json:"unix_time,omitempty"`       // date_time
	DateTimeFormat string `json:"date_time_format,omitempty"`
}

// User is a Bot API User: the bot in getMe and in a message's from, the
// mentioned user in a text_mention.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username,omitempty"`

	// Only in getMe.
	CanJoinGroups           *bool `json:"can_join_groups,omitempty"`
	CanReadAllGroupMessages *bool `json:"can_read_all_group_messages,omitempty"`
	SupportsInlineQueries   *bool `json:"supports_inline_queries,omitempty"`
}

// publicEntity converts a parsed entity to its Bot API form.
func publicEntity(e entity) Entity {
	out := Entity{Offset: e.offset, Length: e.length}
	switch e.kind {
	case kBold:
		out.Type = "bold"
	case kItalic:
		out.Type = "italic"
	case kUnderline:
		out.Type = "underline"
	case kStrikethrough:
		out.Type = "strikethrough"
	case kSpoiler:
		out.Type = "spoiler"
	case kCode:
		out.Type = "code"
	case kPre:
		out.Type = "pre"
	case kPreCode:
		out.Type, out.Language = "pre", e.arg
	case kTextURL:
		out.Type, out.URL = "text_link", e.arg
	case kMentionName:
		out.Type, out.User = "text_mention", &User{ID: e.num}
	case kCustomEmoji:
		out.Type, out.CustomEmojiID = "custom_emoji", strconv.FormatInt(e.num, 10)
	case kBlockQuote:
		out.Type = "blockquote"
	case kExpandableBlockQuote:
		out.Type = "expandable_blockquote"
	case kDateTime:
		out.Type, out.UnixTime, out.DateTimeFormat = "date_time", e.num, e.arg
	}
	return out
}

// parseText turns the text parameter into text and entities as the Bot API
// server's get_formatted_text does: by parse_mode, else from the entities
// parameter. It returns an error description ("Bad Request: …") or "".
func parseText(text, parseMode, rawEntities string) (string, []entity, string) {
	mode := strings.ToLower(parseMode)
	if mode != "" && mode != "none" {
		if !utf8.ValidString(text) {
			return "", nil, "Bad Request: text must be encoded in UTF-8"
		}
		var (
			out  string
			ents []entity
			err  error
		)
		switch mode {
		case "html":
			out, ents, err = parseHTML(text)
		case "markdownv2":
			out, ents, err = parseMarkdownV2(text)
		case "markdown":
			out, ents, err = parseMarkdown(text)
		default:
			return "", nil, "Bad Request: unsupported parse_mode"
		}
		if err != nil {
			return "", nil, "Bad Request: can't parse entities: " + err.Error()
		}
		return out, ents, ""
	}
	ents, desc := explicitEntities(rawEntities)
	return text, ents, desc
}

// explicitEntities reads the entities parameter, a JSON array of
// MessageEntity. As in the Bot API server, a parameter that is not valid
// JSON is ignored, and the entity types Telegram detects by itself (url,
// mention, hashtag, …) are skipped.
func explicitEntities(raw string) ([]entity, string) {
	if raw == "" {
		return nil, ""
	}
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, ""
	}
	var ents []entity
	for _, item := range list {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(item, &f); err != nil {
			return nil, "Bad Request: can't parse MessageEntity: expected an Object"
		}
		e, skip, err := explicitEntity(f)
		if err != nil {
			return nil, "Bad Request: can't parse MessageEntity: " + err.Error()
		}
		if !skip {
			ents = append(ents, e)
		}
	}
	sortEntities(ents)
	return ents, ""
}

func explicitEntity(f map[string]json.RawMessage) (e entity, skip bool, err error) {
	intField := func(name string) (int64, error) {
		raw, ok := f[name]
		if !ok {
			return 0, fmt.Errorf("Can't find field %q", name)
		}
		s := strings.Trim(string(raw), `"`)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("Field %q must be a valid Number", name)
		}
		return n, nil
	}
	strField := func(name string) string {
		var s string
		_ = json.Unmarshal(f[name], &s)
		return s
	}
	off, err := intField("offset")
	if err != nil {
		return e, false, err
	}
	length, err := intField("length")
	if err != nil {
		return e, false, err
	}
	e.offset, e.length = int(off), int(length)
	if _, ok := f["type"]; !ok {
		return e, false, fmt.Errorf("Can't find field %q", "type")
	}
	switch t := strField("type"); t {
	case "":
		return e, false, fmt.Errorf("Type is not specified")
	case "bold":
		e.kind = kBold
	case "italic":
		e.kind = kItalic
	case "underline":
		e.kind = kUnderline
	case "strikethrough":
		e.kind = kStrikethrough
	case "spoiler":
		e.kind = kSpoiler
	case "code":
		e.kind = kCode
	case "pre":
		e.kind = kPre
		if lang := strField("language"); lang != "" {
			e.kind, e.arg = kPreCode, lang
		}
	case "text_link":
		if _, ok := f["url"]; !ok {
			return e, false, fmt.Errorf("Can't find field %q", "url")
		}
		e.kind, e.arg = kTextURL, strField("url")
	case "text_mention":
		var u struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(f["user"], &u); err != nil || u.ID == 0 {
			return e, false, fmt.Errorf("Can't find field %q", "user")
		}
		e.kind, e.num = kMentionName, u.ID
	case "custom_emoji":
		id, err := intField("custom_emoji_id")
		if err != nil {
			return e, false, err
		}
		e.kind, e.num = kCustomEmoji, id
	case "blockquote":
		e.kind = kBlockQuote
	case "expandable_blockquote":
		e.kind = kExpandableBlockQuote
	case "date_time":
		unix, err := intField("unix_time")
		if err != nil {
			return e, false, err
		}
		e.kind, e.num, e.arg = kDateTime, unix, strField("date_time_format")
	case "mention", "hashtag", "cashtag", "bot_command", "url", "email", "phone_number", "bank_card_number":
		return e, true, nil
	default:
		return e, false, fmt.Errorf("Unsupported type specified")
	}
	return e, false, nil
}

// finishText applies what tdlib's fix_formatted_text does to a bot's text
// before sending, as far as the simulator keeps it: the text must be UTF-8
// and not blank (spaces and line breaks only), trailing spaces and line
// breaks are cut, leading ones before the first entity are cut, entities
// are clipped to the text, and the result must be at most MaxTextLength
// UTF-16 code units. It returns an error description or "".
func finishText(text string, ents []entity) (string, []entity, string) {
	if !utf8.ValidString(text) {
		return "", nil, "Bad Request: strings must be encoded in UTF-8"
	}
	kept := ents[:0:0]
	for _, e := range ents {
		if e.length > 0 && e.offset >= 0 {
			kept = append(kept, e)
		}
	}
	ents = kept

	// the last character that is not a space or a line break
	lastByte, lastUnit, unit := -1, -1, 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		units := 1
		if r > 0xFFFF {
			units = 2
		}
		if r != ' ' && r != '\n' {
			lastByte, lastUnit = i+size, unit+units
		}
		unit += units
		i += size
	}
	if lastByte < 0 {
		return "", nil, "Bad Request: text must be non-empty"
	}
	text = text[:lastByte]
	kept = ents[:0:0]
	for _, e := range ents {
		if e.offset >= lastUnit {
			continue
		}
		if e.offset+e.length > lastUnit {
			e.length = lastUnit - e.offset
		}
		kept = append(kept, e)
	}
	ents = kept
	sortEntities(ents)

	first := len(text)
	if len(ents) > 0 {
		first = ents[0].offset
	}
	skip := 0
	for skip < first && skip < len(text) && (text[skip] == ' ' || text[skip] == '\n') {
		skip++
	}
	if skip > 0 {
		text = text[skip:]
		for k := range ents {
			ents[k].offset -= skip
		}
	}
	if utf16Len(text) > MaxTextLength {
		return "", nil, "Bad Request: message is too long"
	}
	return text, ents, ""
}

// publicEntities converts parsed entities to their Bot API form.
func publicEntities(ents []entity) []Entity {
	if len(ents) == 0 {
		return nil
	}
	out := make([]Entity, len(ents))
	for k, e := range ents {
		out[k] = publicEntity(e)
	}
	return out
}
