package telegram

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file ports the entity parsers of tdlib (td/telegram/MessageEntity.cpp:
// parse_html, parse_markdown_v2, parse_markdown), which the Bot API server
// runs on a sendMessage text with a parse_mode. Offsets and lengths are
// counted in UTF-16 code units as they go; the error texts are tdlib's, to
// which the caller adds "Bad Request: can't parse entities: ".

// kind is an entity type as tdlib names it in its error texts.
type kind int

const (
	kBold kind = iota
	kItalic
	kUnderline
	kStrikethrough
	kSpoiler
	kCode
	kPre
	kPreCode
	kTextURL
	kMentionName
	kCustomEmoji
	kBlockQuote
	kExpandableBlockQuote
	kDateTime
)

// kindNames are tdlib's names of the kinds, used in "Can't find end of X
// entity" errors.
var kindNames = [...]string{
	kBold: "Bold", kItalic: "Italic", kUnderline: "Underline", kStrikethrough: "Strikethrough",
	kSpoiler: "Spoiler", kCode: "Code", kPre: "Pre", kPreCode: "PreCode", kTextURL: "TextUrl",
	kMentionName: "MentionName", kCustomEmoji: "CustomEmoji", kBlockQuote: "BlockQuote",
	kExpandableBlockQuote: "ExpandableBlockQuote", kDateTime: "FormattedDate",
}

// kindPriority is tdlib's MessageEntity::get_type_priority: the order of
// entities that share offset and length.
var kindPriority = [...]int{
	kBold: 90, kItalic: 91, kUnderline: 92, kStrikethrough: 93, kSpoiler: 94, kCode: 20,
	kPre: 11, kPreCode: 10, kTextURL: 49, kMentionName: 49, kCustomEmoji: 99, kBlockQuote: 0,
	kExpandableBlockQuote: 0, kDateTime: 30,
}

// entity is a parsed entity before it becomes a MessageEntity.
type entity struct {
	kind   kind
	offset int // UTF-16 code units
	length int // UTF-16 code units
	arg    string
	num    int64 // user id, custom emoji id or unix time
}

// parseError is an entity parser's error text.
type parseError string

func (e parseError) Error() string { return string(e) }

func errorf(format string, args ...any) error { return parseError(fmt.Sprintf(format, args...)) }

// sortEntities orders entities as tdlib does: by offset, longer first, then
// by type priority.
func sortEntities(es []entity) {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.offset != b.offset {
			return a.offset < b.offset
		}
		if a.length != b.length {
			return a.length > b.length
		}
		return kindPriority[a.kind] < kindPriority[b.kind]
	})
}

// at returns s[i], or 0 past the end (tdlib reads a NUL-terminated string).
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// isSpace is tdlib's is_space (NUL counts as space).
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0 || c == '\v'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlpha(c byte) bool { c |= 0x20; return 'a' <= c && c <= 'z' }

func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

func isHex(c byte) bool { return isDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f') }

// utf16Units is how many UTF-16 code units the UTF-8 sequence starting with
// byte c adds: 0 for a continuation byte, 2 for a 4-byte sequence.
func utf16Units(c byte) int {
	switch {
	case c&0xC0 == 0x80:
		return 0
	case c >= 0xF0:
		return 2
	default:
		return 1
	}
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n += utf16Units(s[i])
	}
	return n
}

// decodeEntity decodes the HTML character reference at s[pos] == '&'. It
// returns the code point and the position after the reference, or 0 when
// s[pos:] is not a reference Telegram knows (then the '&' is kept as text).
func decodeEntity(s string, pos int) (rune, int) {
	end := pos + 1
	var code uint64
	if at(s, pos+1) == '#' {
		end++
		if at(s, pos+2) == 'x' {
			end++
			for isHex(at(s, end)) {
				c := at(s, end) | 0x20
				d := uint64(c - '0')
				if c >= 'a' {
					d = uint64(c-'a') + 10
				}
				code = code*16 + d
				if code > 0xFFFFFFFF {
					code = 0xFFFFFFFF
				}
				end++
			}
		} else {
			for isDigit(at(s, end)) {
				code = code*10 + uint64(at(s, end)-'0')
				if code > 0xFFFFFFFF {
					code = 0xFFFFFFFF
				}
				end++
			}
		}
		if code == 0 || code >= 0x10FFFF || end-pos >= 10 {
			return 0, pos
		}
	} else {
		for isAlpha(at(s, end)) {
			end++
		}
		switch s[pos+1 : end] {
		case "lt":
			code = '<'
		case "gt":
			code = '>'
		case "amp":
			code = '&'
		case "quot":
			code = '"'
		default:
			return 0, pos
		}
	}
	if at(s, end) == ';' {
		end++
	}
	return rune(code), end
}

// htmlTags are the start tags Telegram's HTML parser accepts.
var htmlTags = map[string]bool{
	"a": true, "b": true, "strong": true, "i": true, "em": true, "s": true, "strike": true,
	"del": true, "u": true, "ins": true, "tg-spoiler": true, "tg-emoji": true, "tg-time": true,
	"span": true, "pre": true, "code": true, "blockquote": true,
}

// parseHTML parses s as parse_mode HTML: it returns the text without tags,
// with character references decoded, and its entities.
func parseHTML(s string) (string, []entity, error) {
	type open struct {
		tag       string
		arg       string
		date      int64
		offset    int // UTF-16 offset of the entity's start
		beginByte int // its start in out
	}
	var (
		out         []byte
		ents        []entity
		nested      []open
		utf16       int
		badUnicode  bool
		surrogateCP = func(r rune) bool { return r >= 0xD800 && r <= 0xDFFF }
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '&' {
			if code, next := decodeEntity(s, i); code != 0 {
				i = next - 1
				utf16++
				if code > 0xFFFF {
					utf16++
				}
				if surrogateCP(code) {
					badUnicode = true
				}
				out = utf8.AppendRune(out, code)
				continue
			}
		}
		if c != '<' {
			utf16 += utf16Units(c)
			out = append(out, c)
			continue
		}

		begin := i
		i++
		if at(s, i) != '/' {
			// a start tag
			for !isSpace(at(s, i)) && at(s, i) != '>' {
				i++
			}
			if i >= len(s) {
				return "", nil, errorf("Unclosed start tag at byte offset %d", begin)
			}
			tag := strings.ToLower(s[begin+1 : i])
			if !htmlTags[tag] {
				return "", nil, errorf("Unsupported start tag %q at byte offset %d", tag, begin)
			}
			var arg string
			var date int64
			for at(s, i) != '>' {
				for i < len(s) && isSpace(s[i]) {
					i++
				}
				if at(s, i) == '>' {
					break
				}
				nameBegin := i
				for c := at(s, i); !isSpace(c) && c != '=' && c != '>' && c != '/' && c != '"' && c != '\''; c = at(s, i) {
					i++
				}
				name := s[nameBegin:i]
				if name == "" {
					return "", nil, errorf("Empty attribute name in the tag %q at byte offset %d", tag, begin)
				}
				for i < len(s) && isSpace(s[i]) {
					i++
				}
				if at(s, i) != '=' {
					if i >= len(s) {
						return "", nil, errorf("Unclosed start tag %q at byte offset %d", tag, begin)
					}
					if tag == "blockquote" && name == "expandable" {
						arg = "1"
					}
					continue
				}
				i++
				for i < len(s) && isSpace(s[i]) {
					i++
				}
				if i >= len(s) {
					return "", nil, errorf("Unclosed start tag %q at byte offset %d", tag, begin)
				}
				var value string
				if q := s[i]; q != '\'' && q != '"' {
					// a name token: letters, digits, periods and hyphens
					tokenBegin := i
					for isAlnum(at(s, i)) || at(s, i) == '.' || at(s, i) == '-' {
						i++
					}
					value = strings.ToLower(s[tokenBegin:i])
					if !isSpace(at(s, i)) && at(s, i) != '>' {
						return "", nil, errorf("Unexpected end of name token at byte offset %d", tokenBegin)
					}
				} else {
					// a string literal
					i++
					var v []byte
					for i < len(s) && s[i] != q {
						if s[i] == '&' {
							if code, next := decodeEntity(s, i); code != 0 {
								v = utf8.AppendRune(v, code)
								i = next
								continue
							}
						}
						v = append(v, s[i])
						i++
					}
					if at(s, i) == q {
						i++
					}
					value = string(v)
				}
				if i >= len(s) {
					return "", nil, errorf("Unclosed start tag at byte offset %d", begin)
				}
				switch {
				case tag == "a" && name == "href":
					arg = value
				case tag == "code" && name == "class" && strings.HasPrefix(value, "language-"):
					arg = value[len("language-"):]
				case tag == "span" && name == "class" && strings.HasPrefix(value, "tg-"):
					arg = value[len("tg-"):]
				case tag == "tg-emoji" && name == "emoji-id":
					arg = value
				case tag == "blockquote" && name == "expandable":
					arg = "1"
				case tag == "tg-time" && name == "unix":
					date, _ = strconv.ParseInt(value, 10, 32)
				case tag == "tg-time" && name == "format":
					arg = value
				}
			}
			if tag == "span" && arg != "spoiler" {
				return "", nil, errorf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", begin)
			}
			nested = append(nested, open{tag: tag, arg: arg, date: date, offset: utf16, beginByte: len(out)})
			continue
		}

		// an end tag
		if len(nested) == 0 {
			return "", nil, errorf("Unexpected end tag at byte offset %d", begin)
		}
		for !isSpace(at(s, i)) && at(s, i) != '>' {
			i++
		}
		endTag := strings.ToLower(s[begin+2 : i])
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if at(s, i) != '>' {
			return "", nil, errorf("Unclosed end tag at byte offset %d", begin)
		}
		top := nested[len(nested)-1]
		if endTag != "" && endTag != top.tag {
			return "", nil, errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", begin, top.tag, endTag)
		}
		nested = nested[:len(nested)-1]
		if utf16 <= top.offset {
			continue // an empty entity is dropped
		}
		e := entity{offset: top.offset, length: utf16 - top.offset}
		switch top.tag {
		case "i", "em":
			e.kind = kItalic
		case "b", "strong":
			e.kind = kBold
		case "s", "strike", "del":
			e.kind = kStrikethrough
		case "u", "ins":
			e.kind = kUnderline
		case "tg-spoiler", "span":
			e.kind = kSpoiler
		case "tg-emoji":
			id, err := strconv.ParseInt(top.arg, 10, 64)
			if err != nil || id == 0 {
				return "", nil, errorf("Invalid custom emoji identifier specified")
			}
			e.kind, e.num = kCustomEmoji, id
		case "tg-time":
			if top.date <= 0 {
				continue
			}
			e.kind, e.num, e.arg = kDateTime, top.date, top.arg
		case "a":
			link := top.arg
			if link == "" {
				link = string(out[top.beginByte:])
			}
			if id, ok := linkUserID(link); ok {
				e.kind, e.num = kMentionName, id
			} else if link = checkedLink(link); link != "" {
				e.kind, e.arg = kTextURL, link
			} else {
				continue
			}
		case "pre":
			if n := len(ents); n > 0 && ents[n-1].kind == kCode && ents[n-1].offset == e.offset &&
				ents[n-1].length == e.length && ents[n-1].arg != "" {
				ents[n-1].kind = kPreCode
				continue
			}
			e.kind = kPre
		case "code":
			if n := len(ents); n > 0 && ents[n-1].kind == kPre && ents[n-1].offset == e.offset &&
				ents[n-1].length == e.length && top.arg != "" {
				ents[n-1].kind, ents[n-1].arg = kPreCode, top.arg
				continue
			}
			e.kind, e.arg = kCode, top.arg
		case "blockquote":
			e.kind = kBlockQuote
			if top.arg != "" {
				e.kind = kExpandableBlockQuote
			}
		}
		ents = append(ents, e)
	}
	if len(nested) > 0 {
		return "", nil, errorf("Can't find end tag corresponding to start tag %q", nested[len(nested)-1].tag)
	}
	for k := range ents {
		if ents[k].kind == kCode {
			ents[k].arg = "" // a language is kept only inside pre
		}
	}
	sortEntities(ents)
	if badUnicode {
		return "", nil, errorf("Text contains invalid Unicode characters after decoding HTML entities, check for unmatched surrogate code units")
	}
	return string(out), ents, nil
}

// parseMarkdownV2 parses s as parse_mode MarkdownV2.
func parseMarkdownV2(s string) (string, []entity, error) {
	type open struct {
		kind       kind
		arg        string
		offset     int // UTF-16 offset of the entity's start
		byteOffset int // the markup's position in s
		beginByte  int // the entity's start in out
	}
	var (
		out             []byte
		ents            []entity
		nested          []open
		utf16           int
		haveBlockquote  bool
		canStartQuote   = true
		reservedGeneral = "_*[]()~`>#+-=|{}.!\n"
	)
	reserved := func(c byte) error {
		return errorf("Character '%c' is reserved and must be escaped with the preceding '\\'", c)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && at(s, i+1) > 0 && at(s, i+1) <= 126 {
			i++
			utf16++
			out = append(out, s[i])
			if s[i] != '\r' {
				canStartQuote = s[i] == '\n'
			}
			continue
		}
		set := reservedGeneral
		if n := len(nested); n > 0 {
			switch nested[n-1].kind {
			case kCode, kPre, kPreCode:
				set = "`"
			}
		}
		if strings.IndexByte(set, c) < 0 {
			if u := utf16Units(c); u > 0 {
				utf16 += u
				if c != '\r' {
					canStartQuote = false
				}
			}
			out = append(out, c)
			continue
		}

		isEnd := false
		if n := len(nested); n > 0 {
			if haveBlockquote && c == '\n' && (i+1 == len(s) || s[i+1] != '>') {
				isEnd = true
			} else {
				switch nested[n-1].kind {
				case kBold:
					isEnd = c == '*'
				case kItalic:
					isEnd = c == '_' && at(s, i+1) != '_'
				case kCode:
					isEnd = c == '`'
				case kPre, kPreCode:
					isEnd = c == '`' && at(s, i+1) == '`' && at(s, i+2) == '`'
				case kTextURL, kCustomEmoji:
					isEnd = c == ']'
				case kUnderline:
					isEnd = c == '_' && at(s, i+1) == '_'
				case kStrikethrough:
					isEnd = c == '~'
				case kSpoiler:
					isEnd = c == '|' && at(s, i+1) == '|'
				}
			}
		}

		if !isEnd {
			// the start of an entity
			var k kind
			var arg string
			byteOffset := i
			skip := false
			switch c {
			case '_':
				k = kItalic
				if at(s, i+1) == '_' {
					k = kUnderline
					i++
				}
			case '*':
				k = kBold
			case '~':
				k = kStrikethrough
			case '|':
				if at(s, i+1) != '|' {
					return "", nil, reserved(c)
				}
				i++
				k = kSpoiler
			case '[':
				k = kTextURL
			case '`':
				if at(s, i+1) == '`' && at(s, i+2) == '`' {
					i += 3
					k = kPre
					langEnd := i
					for !isSpace(at(s, langEnd)) && at(s, langEnd) != '`' {
						langEnd++
					}
					if i != langEnd && langEnd < len(s) && s[langEnd] != '`' {
						k, arg = kPreCode, s[i:langEnd]
						i = langEnd
					}
					i = skipOneNewline(s, i)
					i--
				} else {
					k = kCode
				}
			case '!':
				if at(s, i+1) != '[' {
					return "", nil, reserved(c)
				}
				i++
				k = kCustomEmoji
			case '\n':
				utf16++
				out = append(out, '\n')
				canStartQuote = true
				skip = true
			case '>':
				if !canStartQuote {
					return "", nil, reserved(c)
				}
				if haveBlockquote {
					skip = true
				} else {
					k = kBlockQuote
					haveBlockquote = true
				}
			default:
				return "", nil, reserved(c)
			}
			if !skip {
				nested = append(nested, open{kind: k, arg: arg, offset: utf16, byteOffset: byteOffset, beginByte: len(out)})
			}
			continue
		}

		// the end of an entity
		top := nested[len(nested)-1]
		k := top.kind
		if c == '\n' && k != kBlockQuote {
			if k != kSpoiler || !(top.byteOffset == i-2 || (top.byteOffset == i-3 && len(out) != 0 && out[len(out)-1] == '\r')) {
				return "", nil, errorf("Can't find end of %s entity at byte offset %d", kindNames[k], top.byteOffset)
			}
			nested = nested[:len(nested)-1]
			if len(nested) == 0 || nested[len(nested)-1].kind != kBlockQuote {
				if len(nested) == 0 {
					return "", nil, errorf("Can't find end of %s entity at byte offset %d", kindNames[k], top.byteOffset)
				}
				t := nested[len(nested)-1]
				return "", nil, errorf("Can't find end of %s entity at byte offset %d", kindNames[t.kind], t.byteOffset)
			}
			top = nested[len(nested)-1]
			k = kExpandableBlockQuote
		}
		e := entity{kind: k, arg: top.arg}
		skip := utf16 == top.offset
		switch k {
		case kUnderline, kSpoiler:
			i++
		case kPre, kPreCode:
			i += 2
		case kTextURL:
			var link string
			if at(s, i+1) != '(' {
				link = string(out[top.beginByte:])
			} else {
				i += 2
				var err error
				if link, i, err = markdownURL(s, i); err != nil {
					return "", nil, err
				}
			}
			if id, ok := linkUserID(link); ok {
				e.kind, e.num = kMentionName, id
			} else if link = checkedLink(link); link == "" {
				skip = true
			} else {
				e.arg = link
			}
		case kCustomEmoji:
			if at(s, i+1) != '(' {
				return "", nil, errorf("The entity must contain a tg://emoji or tg://time URL")
			}
			i += 2
			link, next, err := markdownURL(s, i)
			if err != nil {
				return "", nil, err
			}
			i = next
			if id, ok := tgQueryInt(link, "emoji", "id"); ok && id != 0 {
				e.num = id
			} else if unix, ok := tgQueryInt(link, "time", "unix"); ok {
				e.kind, e.num, e.arg = kDateTime, unix, tgQueryString(link, "format")
			} else {
				return "", nil, errorf("Invalid tg://emoji or tg://time URL specified")
			}
		case kBlockQuote, kExpandableBlockQuote:
			haveBlockquote = false
			out = append(out, s[i])
			canStartQuote = true
			utf16++
			skip = false
		}
		if !skip {
			e.offset, e.length = top.offset, utf16-top.offset
			ents = append(ents, e)
		}
		nested = nested[:len(nested)-1]
	}
	if haveBlockquote && len(nested) > 0 {
		k := kBlockQuote
		if top := nested[len(nested)-1]; top.kind == kSpoiler && top.byteOffset == len(s)-2 {
			nested = nested[:len(nested)-1]
			k = kExpandableBlockQuote
		}
		if n := len(nested); n > 0 && nested[n-1].kind == kBlockQuote {
			top := nested[n-1]
			if l := utf16 - top.offset; l != 0 {
				ents = append(ents, entity{kind: k, offset: top.offset, length: l})
			}
			nested = nested[:n-1]
		}
	}
	if n := len(nested); n > 0 {
		return "", nil, errorf("Can't find end of %s entity at byte offset %d", kindNames[nested[n-1].kind], nested[n-1].byteOffset)
	}
	sortEntities(ents)
	return string(out), ents, nil
}

// markdownURL reads the (…) part of a MarkdownV2 link from s[i], after the
// '(': it returns the URL with its escapes removed and the position of the
// closing ')'.
func markdownURL(s string, i int) (string, int, error) {
	begin := i
	var b []byte
	for i < len(s) && s[i] != ')' {
		if s[i] == '\\' && at(s, i+1) > 0 && at(s, i+1) <= 126 {
			b = append(b, s[i+1])
			i += 2
			continue
		}
		b = append(b, s[i])
		i++
	}
	if at(s, i) != ')' {
		return "", i, errorf("Can't find end of a URL at byte offset %d", begin)
	}
	return string(b), i, nil
}

// skipOneNewline skips one line break ("\n", "\r", "\r\n" or "\n\r") at
// s[i], as a pre block's opening does.
func skipOneNewline(s string, i int) int {
	if c := at(s, i); c == '\n' || c == '\r' {
		if d := at(s, i+1); (d == '\n' || d == '\r') && c != d {
			return i + 2
		}
		return i + 1
	}
	return i
}

// parseMarkdown parses s as the legacy parse_mode Markdown.
func parseMarkdown(s string) (string, []entity, error) {
	var (
		out   []byte
		ents  []entity
		utf16 int
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if n := at(s, i+1); c == '\\' && (n == '_' || n == '*' || n == '`' || n == '[') {
			i++
			out = append(out, s[i])
			utf16++
			continue
		}
		if c != '_' && c != '*' && c != '`' && c != '[' {
			utf16 += utf16Units(c)
			out = append(out, c)
			continue
		}

		begin := i
		endChar := c
		if c == '[' {
			endChar = ']'
		}
		i++
		isPre := false
		lang := ""
		if c == '`' && at(s, i) == '`' && at(s, i+1) == '`' {
			i += 2
			isPre = true
			langEnd := i
			for !isSpace(at(s, langEnd)) && at(s, langEnd) != '`' {
				langEnd++
			}
			if i != langEnd && langEnd < len(s) && s[langEnd] != '`' {
				lang = s[i:langEnd]
				i = langEnd
			}
			i = skipOneNewline(s, i)
		}
		offset := utf16
		for i < len(s) && (s[i] != endChar || (isPre && !(at(s, i+1) == '`' && at(s, i+2) == '`'))) {
			utf16 += utf16Units(s[i])
			out = append(out, s[i])
			i++
		}
		if i == len(s) {
			return "", nil, errorf("Can't find end of the entity starting at byte offset %d", begin)
		}
		if offset != utf16 {
			e := entity{offset: offset, length: utf16 - offset}
			switch c {
			case '_':
				e.kind = kItalic
			case '*':
				e.kind = kBold
			case '[':
				var link string
				if at(s, i+1) != '(' {
					link = s[begin+1 : i]
				} else {
					i += 2
					start := i
					for i < len(s) && s[i] != ')' {
						i++
					}
					link = s[start:i]
				}
				if id, ok := linkUserID(link); ok {
					e.kind, e.num = kMentionName, id
				} else if link = checkedLink(link); link != "" {
					e.kind, e.arg = kTextURL, link
				} else {
					e.length = 0
				}
			case '`':
				switch {
				case !isPre:
					e.kind = kCode
				case lang == "":
					e.kind = kPre
				default:
					e.kind, e.arg = kPreCode, lang
				}
			}
			if e.length > 0 {
				ents = append(ents, e)
			}
		}
		if isPre {
			i += 2
		}
	}
	return string(out), ents, nil
}

// linkUserID recognises tg://user?id=N, the link that mentions a user.
func linkUserID(link string) (int64, bool) {
	l := strings.ToLower(link)
	if !strings.HasPrefix(l, "tg:") {
		return 0, false
	}
	l = strings.TrimPrefix(l[3:], "//")
	if !strings.HasPrefix(l, "user") || (len(l) > 4 && !strings.ContainsRune("/?#", rune(l[4]))) {
		return 0, false
	}
	l = strings.TrimPrefix(l[4:], "/")
	if !strings.HasPrefix(l, "?") {
		return 0, false
	}
	l = l[1:]
	if k := strings.IndexByte(l, '#'); k >= 0 {
		l = l[:k]
	}
	for _, p := range strings.Split(l, "&") {
		if k, v, _ := strings.Cut(p, "="); k == "id" {
			id, err := strconv.ParseInt(v, 10, 64)
			return id, err == nil
		}
	}
	return 0, false
}

// tgQueryInt reads the integer parameter key of a tg://host?… link.
func tgQueryInt(link, host, key string) (int64, bool) {
	v := tgQuery(link, host)
	if v == nil || !v.Has(key) {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Get(key), 10, 64)
	return n, err == nil
}

// tgQueryString reads the parameter key of a tg://time?… link.
func tgQueryString(link, key string) string {
	if v := tgQuery(link, "time"); v != nil {
		return v.Get(key)
	}
	return ""
}

func tgQuery(link, host string) url.Values {
	rest, ok := strings.CutPrefix(link, "tg://"+host+"?")
	if !ok {
		return nil
	}
	v, err := url.ParseQuery(rest)
	if err != nil {
		return nil
	}
	return v
}

// checkedLink approximates tdlib's LinkManager::get_checked_link: it returns
// the link as Telegram stores it in a text_link entity, or "" when Telegram
// would drop the entity. An http(s) link, or one without a scheme (taken as
// http), needs a host with a dot and gets a "/" path when it has none; a
// tg:// or ton:// link keeps its host and query; anything else is dropped.
func checkedLink(link string) string {
	l := strings.ToLower(link)
	for _, scheme := range []string{"tg", "ton", "tonsite"} {
		if strings.HasPrefix(l, scheme+":") {
			rest := strings.TrimPrefix(link[len(scheme)+1:], "//")
			host, query := rest, ""
			if k := strings.IndexAny(rest, "/?#"); k >= 0 {
				host, query = rest[:k], rest[k:]
			}
			for i := 0; i < len(host); i++ {
				if c := host[i]; !isAlnum(c) && c != '-' && c != '_' && !(scheme == "tonsite" && c == '.') {
					return ""
				}
			}
			if host == "" {
				return ""
			}
			query = strings.TrimPrefix(query, "/")
			return scheme + "://" + strings.ToLower(host) + query
		}
	}
	if !strings.Contains(link, "://") {
		link = "http://" + link
	}
	u, err := url.Parse(link)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	if !strings.Contains(u.Hostname(), ".") && !strings.Contains(u.Hostname(), ":") {
		return ""
	}
	if u.Path == "" && u.RawPath == "" {
		u.Path = "/"
	}
	u.Host = strings.ToLower(u.Host)
	return u.String()
}
