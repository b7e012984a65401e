package telegram

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file reads a message text into a doc: the text a chat shows (the
// visible text) and, for markdown, the formatting over it.
//
// Markdown is Telegram-style markdown as chat apps read it:
//
//   - *bold* or **bold**; _italic_ or __italic__. A marker opens only at the
//     start of a word (not after a letter or digit) before a non-space, and
//     closes only at the end of one (not before a letter or digit) after a
//     non-space, on the same line: snake_case_name and 2*3*4 stay as they
//     are. Bold may hold italic and the other way round; neither holds
//     itself.
//   - `code` on one line; ```code blocks```, with an optional language
//     after the opening backticks on their own line (```go).
//   - [text](url): the text may be formatted; the url runs to the matching
//     ')' and holds no space.
//   - \* \_ \` \[ are the characters themselves.
//
// Anything else, an unbalanced marker included, is literal text. The
// conversion is to Telegram's HTML parse mode: <b>, <i>, <code>, <pre>,
// <pre><code class="language-…">, <a href="…">, with <, > and & escaped in
// the text and " too in the href.

// tokKind is what a token is.
type tokKind uint8

const (
	tokText tokKind = iota
	tokOpen
	tokClose
)

// entity is one formatting span: the HTML tags around its text.
type entity struct {
	open, close string
}

// cost is how many bytes the entity's tags add to a chunk's HTML.
func (e *entity) cost() int { return len(e.open) + len(e.close) }

// token is a piece of the parsed text, in order. Tokens cover the source
// without gaps or overlaps: a text token its characters (an escape's two
// bytes for one visible character), an open or close token its markers.
type token struct {
	kind       tokKind
	src0, src1 int     // the source bytes it covers
	ent        *entity // open, close
	// Text tokens.
	vis0, vis1 int       // its visible text: doc.vis[vis0:vis1], never empty
	verbatim   bool      // the visible text is the source's bytes as they are
	stack      []*entity // the entities it is inside, outermost first
}

// doc is a parsed text.
type doc struct {
	src   string
	vis   string // the text the chat shows
	html  bool   // markdown: sent as HTML
	toks  []token
	texts []int // indexes of the text tokens in toks
}

// plainDoc is text sent as it is.
func plainDoc(s string) *doc {
	d := &doc{src: s, vis: s}
	if s != "" {
		d.toks = []token{{kind: tokText, src1: len(s), vis1: len(s), verbatim: true}}
		d.texts = []int{0}
	}
	return d
}

// The classes of source bytes, found before the formatting is.
const (
	cPlain = iota // text, or a marker
	cEsc          // an escape's two bytes
	cCode         // a code span or block, its backticks included
	cLit          // backticks that open nothing
)

// codeAtom is a code span or block found in the source.
type codeAtom struct {
	start, end int // the source bytes, backticks included
	c0, c1     int // its content
	block      bool
	lang       string
}

// mdParser reads markdown into a doc.
type mdParser struct {
	s       string
	cls     []byte
	code    []codeAtom // by start
	closers [4][]int   // run starts that may close, by markerType
	breaks  []int      // plain '\n' and code block starts: no span crosses one
	lbr     []int      // plain '['
	rbr     []int      // plain ']'
	urlEnd  map[int]int
	// The url index (indexParens): where white space and code are, the
	// parentheses, the balance after each, and the parentheses by balance.
	stops, parens, balance []int
	levels                 map[int][]int
	d                      *doc
	stack                  []*entity
	vis                    strings.Builder
	pending                int // start of the literal text not yet made a token, or -1
}

// markerType numbers the emphasis markers: * ** _ __.
func markerType(c byte, n int) int {
	t := n - 1
	if c == '_' {
		t += 2
	}
	return t
}

// Sentinel entities for the kinds of emphasis, which may not nest in
// themselves.
const (
	kindBold = iota
	kindItalic
	kindLink
)

// langOK is what a code block's language may be.
func langOK(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+#.-", c) >= 0) {
			return false
		}
	}
	return true
}

// parseMarkdown reads s as markdown.
func parseMarkdown(s string) *doc {
	p := &mdParser{s: s, cls: make([]byte, len(s)), urlEnd: map[int]int{}, d: &doc{src: s, html: true}, pending: -1}
	p.classify()
	p.index()
	p.parse(0, len(s), [3]bool{})
	p.flush(len(s))
	p.d.vis = p.vis.String()
	return p.d
}

// classify finds the escapes and the code spans and blocks, left to right.
func (p *mdParser) classify() {
	s := p.s
	blocks := true // false once a ``` found no closing ```: none later can
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && strings.IndexByte("*_`[", s[i+1]) >= 0:
			p.cls[i], p.cls[i+1] = cEsc, cEsc
			i += 2
		case c == '`' && blocks && strings.HasPrefix(s[i:], "```"):
			k := strings.Index(s[i+3:], "```")
			if k < 0 {
				blocks = false
				p.lit(i, 3)
				i += 3
				continue
			}
			a := codeAtom{start: i, end: i + 3 + k + 3, c0: i + 3, c1: i + 3 + k, block: true}
			if nl := strings.IndexByte(s[a.c0:a.c1], '\n'); nl >= 0 {
				if first := s[a.c0 : a.c0+nl]; first == "" || langOK(first) {
					a.lang = first
					a.c0 += nl + 1
				}
			}
			if a.c1 > a.c0 && s[a.c1-1] == '\n' {
				a.c1--
			}
			if a.c1 <= a.c0 {
				p.lit(i, 3)
				i += 3
				continue
			}
			p.addCode(a)
			i = a.end
		case c == '`':
			k := strings.IndexAny(s[i+1:], "`\n")
			if k <= 0 || s[i+1+k] != '`' {
				p.lit(i, 1)
				i++
				continue
			}
			p.addCode(codeAtom{start: i, end: i + k + 2, c0: i + 1, c1: i + 1 + k})
			i += k + 2
		default:
			i++ // cPlain
		}
	}
}

func (p *mdParser) lit(i, n int) {
	for k := i; k < i+n; k++ {
		p.cls[k] = cLit
	}
}

func (p *mdParser) addCode(a codeAtom) {
	for k := a.start; k < a.end; k++ {
		p.cls[k] = cCode
	}
	p.code = append(p.code, a)
}

// runAt is the length of the run of plain c's that starts at i.
func (p *mdParser) runAt(i int) int {
	c := p.s[i]
	n := 0
	for i+n < len(p.s) && p.s[i+n] == c && p.cls[i+n] == cPlain {
		n++
	}
	return n
}

// wordRune reports whether r is part of a word, which a marker next to it
// does not open or close.
func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// before and after are the runes next to s[i:j]; ok is false at the ends.
func (p *mdParser) before(i int) (rune, bool) {
	if i == 0 {
		return 0, false
	}
	r, _ := utf8.DecodeLastRuneInString(p.s[:i])
	return r, true
}

func (p *mdParser) after(j int) (rune, bool) {
	if j >= len(p.s) {
		return 0, false
	}
	r, _ := utf8.DecodeRuneInString(p.s[j:])
	return r, true
}

func (p *mdParser) canOpen(i, n int) bool {
	next, ok := p.after(i + n)
	if !ok || unicode.IsSpace(next) {
		return false
	}
	prev, ok := p.before(i)
	return !ok || !wordRune(prev)
}

func (p *mdParser) canClose(j, n int) bool {
	prev, ok := p.before(j)
	if !ok || unicode.IsSpace(prev) {
		return false
	}
	next, ok := p.after(j + n)
	return !ok || !wordRune(next)
}

// index lists the closers, line breaks and brackets.
func (p *mdParser) index() {
	s := p.s
	ci := 0
	for i := 0; i < len(s); {
		if p.cls[i] != cPlain {
			if p.cls[i] == cCode && ci < len(p.code) && p.code[ci].start == i {
				if p.code[ci].block {
					p.breaks = append(p.breaks, i)
				}
				i = p.code[ci].end
				ci++
				continue
			}
			i++
			continue
		}
		switch c := s[i]; c {
		case '*', '_':
			n := p.runAt(i)
			if n <= 2 && p.canClose(i, n) {
				t := markerType(c, n)
				p.closers[t] = append(p.closers[t], i)
			}
			i += n
			continue
		case '\n':
			p.breaks = append(p.breaks, i)
		case '[':
			p.lbr = append(p.lbr, i)
		case ']':
			p.rbr = append(p.rbr, i)
		}
		i++
	}
}

// first returns the first element of sorted xs that is >= v, or -1.
func first(xs []int, v int) int {
	k := sort.SearchInts(xs, v)
	if k == len(xs) {
		return -1
	}
	return xs[k]
}

// clear reports whether no line break or code block lies in s[i:j].
func (p *mdParser) clear(i, j int) bool {
	b := first(p.breaks, i)
	return b < 0 || b >= j
}

// codeAt returns the code atom that starts at i.
func (p *mdParser) codeAt(i int) *codeAtom {
	k := sort.Search(len(p.code), func(k int) bool { return p.code[k].start >= i })
	if k < len(p.code) && p.code[k].start == i {
		return &p.code[k]
	}
	return nil
}

// link finds [text](url) starting at the '[' at i: the ']' and the end
// after the ')'; ok is false when there is none.
func (p *mdParser) link(i int) (rb, end int, ok bool) {
	rb = first(p.rbr, i+1)
	if rb < 0 || rb == i+1 || !p.clear(i, rb) {
		return 0, 0, false
	}
	if lb := first(p.lbr, i+1); lb >= 0 && lb < rb {
		return 0, 0, false // the text holds another '['
	}
	if rb+1 >= len(p.s) || p.s[rb+1] != '(' || p.cls[rb+1] != cPlain {
		return 0, 0, false
	}
	end, seen := p.urlEnd[rb]
	if !seen {
		end = p.scanURL(rb + 2)
		p.urlEnd[rb] = end
	}
	return rb, end, end > 0
}

// scanURL reads a link's url from i to its ')': it returns the position
// after the ')', or 0 when the url is empty, holds white space or a code
// span, or has no end. The url's own parentheses must balance, so its ')'
// is the first one after which the parentheses since i balance to -1.
// Indexes make it O(log n), whatever the text: a scan byte by byte would
// make "[a]([a]([a](…" quadratic.
func (p *mdParser) scanURL(i int) int {
	if p.levels == nil {
		p.indexParens()
	}
	stop := first(p.stops, i)
	if stop < 0 {
		stop = len(p.s)
	}
	j := sort.SearchInts(p.parens, i) // the first parenthesis at or after i
	base := 0
	if j > 0 {
		base = p.balance[j-1]
	}
	at := p.levels[base-1]
	k := sort.SearchInts(at, j)
	if k == len(at) {
		return 0
	}
	end := p.parens[at[k]]
	if end <= i || end >= stop {
		return 0
	}
	return end + 1
}

// indexParens lists where white space and code stop a url, and every
// parenthesis with the balance after it, by balance.
func (p *mdParser) indexParens() {
	p.levels = map[int][]int{}
	b := 0
	for k := 0; k < len(p.s); k++ {
		switch c := p.s[k]; {
		case p.cls[k] == cCode || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			p.stops = append(p.stops, k)
		case c == '(' || c == ')':
			if c == '(' {
				b++
			} else {
				b--
			}
			p.levels[b] = append(p.levels[b], len(p.parens))
			p.parens = append(p.parens, k)
			p.balance = append(p.balance, b)
		}
	}
}

// parse turns s[a:b] into tokens; in says which of bold, italic and link
// it is inside already.
func (p *mdParser) parse(a, b int, in [3]bool) {
	s := p.s
	for i := a; i < b; {
		switch p.cls[i] {
		case cCode:
			if at := p.codeAt(i); at != nil && at.end <= b {
				p.emitCode(at)
				i = at.end
				continue
			}
			p.literal(i, i+1) // not reached: spans never cross a range's end
			i++
			continue
		case cEsc:
			p.flush(i)
			p.text(i, i+2, i+1, i+2, false)
			i += 2
			continue
		case cLit:
			p.literal(i, i+1)
			i++
			continue
		}
		c := s[i]
		if c == '*' || c == '_' {
			n := p.runAt(i)
			n = min(n, b-i)
			kind := kindBold
			if c == '_' {
				kind = kindItalic
			}
			if n <= 2 && !in[kind] && p.canOpen(i, n) {
				t := markerType(c, n)
				if j := first(p.closers[t], i+n); j >= 0 && j+n <= b && p.clear(i, j) {
					e := &entity{open: "<b>", close: "</b>"}
					if kind == kindItalic {
						e = &entity{open: "<i>", close: "</i>"}
					}
					inner := in
					inner[kind] = true
					p.flush(i)
					p.openTok(e, i, i+n)
					p.parse(i+n, j, inner)
					p.closeTok(e, j, j+n)
					i = j + n
					continue
				}
			}
			p.literal(i, i+n)
			i += n
			continue
		}
		if c == '[' && !in[kindLink] {
			if rb, end, ok := p.link(i); ok && end <= b {
				url := s[rb+2 : end-1]
				e := &entity{open: `<a href="` + escapeHTML(url, true) + `">`, close: "</a>"}
				inner := in
				inner[kindLink] = true
				p.flush(i)
				p.openTok(e, i, i+1)
				p.parse(i+1, rb, inner)
				p.closeTok(e, rb, end)
				i = end
				continue
			}
		}
		p.literal(i, i+1)
		i++
	}
}

// emitCode makes the tokens of a code span or block.
func (p *mdParser) emitCode(at *codeAtom) {
	p.flush(at.start)
	e := &entity{open: "<code>", close: "</code>"}
	if at.block {
		e = &entity{open: "<pre>", close: "</pre>"}
		if at.lang != "" {
			e = &entity{open: `<pre><code class="language-` + escapeHTML(at.lang, true) + `">`, close: "</code></pre>"}
		}
	}
	p.openTok(e, at.start, at.c0)
	p.text(at.c0, at.c1, at.c0, at.c1, true)
	p.closeTok(e, at.c1, at.end)
}

// literal marks s[i:j] as text, made a token with the literal text around
// it by the next flush.
func (p *mdParser) literal(i, _ int) {
	if p.pending < 0 {
		p.pending = i
	}
}

// flush makes the literal text pending before i a token.
func (p *mdParser) flush(i int) {
	if p.pending >= 0 && p.pending < i {
		p.text(p.pending, i, p.pending, i, true)
	}
	p.pending = -1
}

// text adds a text token for the source s[src0:src1] showing s[v0:v1].
func (p *mdParser) text(src0, src1, v0, v1 int, verbatim bool) {
	if v1 <= v0 {
		return
	}
	start := p.vis.Len()
	p.vis.WriteString(p.s[v0:v1])
	p.d.texts = append(p.d.texts, len(p.d.toks))
	p.d.toks = append(p.d.toks, token{kind: tokText, src0: src0, src1: src1, vis0: start, vis1: p.vis.Len(),
		verbatim: verbatim, stack: append([]*entity(nil), p.stack...)})
}

func (p *mdParser) openTok(e *entity, src0, src1 int) {
	p.flush(src0)
	p.d.toks = append(p.d.toks, token{kind: tokOpen, src0: src0, src1: src1, ent: e})
	p.stack = append(p.stack, e)
}

func (p *mdParser) closeTok(e *entity, src0, src1 int) {
	p.flush(src0)
	p.d.toks = append(p.d.toks, token{kind: tokClose, src0: src0, src1: src1, ent: e})
	p.stack = p.stack[:len(p.stack)-1]
}

// escapeHTML escapes <, > and & (and ", for an attribute).
func escapeHTML(s string, attr bool) string {
	var b strings.Builder
	writeEscaped(&b, s, attr)
	return b.String()
}

func writeEscaped(b *strings.Builder, s string, attr bool) {
	last := 0
	for i := 0; i < len(s); i++ {
		var rep string
		switch s[i] {
		case '<':
			rep = "&lt;"
		case '>':
			rep = "&gt;"
		case '&':
			rep = "&amp;"
		case '"':
			if !attr {
				continue
			}
			rep = "&quot;"
		default:
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(rep)
		last = i + 1
	}
	b.WriteString(s[last:])
}

// escapedLen is the length of the escaped text byte c stands for.
func escapedLen(c byte) int {
	switch c {
	case '<', '>':
		return 4
	case '&':
		return 5
	}
	return 1
}

// Markdown converts a Telegram-style markdown text to Telegram's HTML parse
// mode, as the carrier sends it when it fits in one message.
func Markdown(s string) string {
	d := parseMarkdown(s)
	return d.render(0, len(d.vis))
}
