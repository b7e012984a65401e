package telegram

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxUnits is the longest text one message may show: 4,096 UTF-16 code
// units of its text after entity parsing, as Telegram counts.
const MaxUnits = 4096

// MaxBytes bounds the text parameter of one sendMessage, tags included,
// as the Bot API server does before it parses entities ("text is too
// long").
const MaxBytes = 1 << 15

// Chunk is one message of a text split to fit Telegram's limit.
type Chunk struct {
	// Source is the part of the message's text the chunk comes from; the
	// chunks' sources, joined, give the text back. For markdown, a chunk's
	// source converts on its own to its Text unless the split had to cut
	// a formatted span longer than the limit (Text then closes the span
	// and the next chunk opens it again).
	Source string
	// Text is what is sent: the visible text (parse mode none) or its
	// HTML (markdown).
	Text string
	// Visible is what the chat shows (before Telegram trims the spaces
	// and line breaks at its ends), and Units its length in UTF-16 code
	// units.
	Visible string
	Units   int
}

// Blank reports whether the chunk shows nothing but spaces and line
// breaks, which Telegram refuses ("text must be non-empty"); the carrier
// does not send such a chunk.
func (c Chunk) Blank() bool {
	return strings.TrimFunc(c.Visible, unicode.IsSpace) == ""
}

// Split splits text, read as markdown or as plain text, into chunks of at
// most MaxUnits UTF-16 code units each (and MaxBytes of HTML), as the
// carrier sends them. It is deterministic: the same text always gives the
// same chunks, which is what lets a retry resume after the chunks already
// delivered.
func Split(text string, markdown bool) []Chunk {
	return split(text, markdown, MaxUnits, MaxBytes)
}

func split(text string, markdown bool, limit, maxBytes int) []Chunk {
	d := plainDoc(text)
	if markdown {
		d = parseMarkdown(text)
	}
	return d.chunks(limit, maxBytes)
}

// tok returns the k-th text token.
func (d *doc) tok(k int) *token { return &d.toks[d.texts[k]] }

// textAt returns the index of the text token that holds visible position
// p, or len(d.texts) at the end.
func (d *doc) textAt(p int) int {
	return sort.Search(len(d.texts), func(k int) bool { return d.tok(k).vis1 > p })
}

// commonPrefix is how many outer entities two stacks share.
func commonPrefix(a, b []*entity) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// depthAt is how many entities a cut at visible position p would cut.
func (d *doc) depthAt(p int) int {
	if p <= 0 || p >= len(d.vis) {
		return 0
	}
	k := d.textAt(p)
	t := d.tok(k)
	if p > t.vis0 || k == 0 {
		return len(t.stack)
	}
	return commonPrefix(d.tok(k-1).stack, t.stack)
}

// srcAt is the source offset of a cut at visible position p: the markers
// that close there stay before it, those that open there go after it.
func (d *doc) srcAt(p int) int {
	if p <= 0 {
		return 0
	}
	if p >= len(d.vis) {
		return len(d.src)
	}
	k := d.textAt(p)
	t := d.tok(k)
	if p > t.vis0 {
		if t.verbatim {
			return t.src0 + p - t.vis0
		}
		return t.src0
	}
	if k > 0 {
		for i := d.texts[k-1] + 1; i < d.texts[k]; i++ {
			if d.toks[i].kind == tokOpen {
				return d.toks[i].src0
			}
		}
	}
	return t.src0
}

// opened is what the tags of the entities text token k enters add to a
// chunk's HTML, coming from text token k-1.
func (d *doc) opened(k int) int {
	var prev []*entity
	if k > 0 {
		prev = d.tok(k - 1).stack
	}
	st := d.tok(k).stack
	n := 0
	for _, e := range st[commonPrefix(prev, st):] {
		n += e.cost()
	}
	return n
}

// runeUnits is how many UTF-16 code units r takes (an invalid byte, one).
func runeUnits(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// window returns the furthest end such that vis[start:end] fits in limit
// units and maxBytes bytes of HTML; at least one rune, so that splitting
// always moves on.
func (d *doc) window(start, limit, maxBytes int) int {
	k := d.textAt(start)
	units, size := 0, 0
	if d.html && k < len(d.texts) {
		for _, e := range d.tok(k).stack {
			size += e.cost()
		}
	}
	p := start
	for p < len(d.vis) {
		for k < len(d.texts) && p >= d.tok(k).vis1 {
			k++
			if d.html && k < len(d.texts) {
				size += d.opened(k)
			}
		}
		r, n := utf8.DecodeRuneInString(d.vis[p:])
		u, b := runeUnits(r), n
		if d.html {
			b = 0
			for i := p; i < p+n; i++ {
				b += escapedLen(d.vis[i])
			}
		}
		if units+u > limit || size+b > maxBytes {
			break
		}
		units, size, p = units+u, size+b, p+n
	}
	if p == start && p < len(d.vis) {
		_, n := utf8.DecodeRuneInString(d.vis[p:])
		p += n
	}
	return p
}

// The kinds of cut, best first.
const (
	cutParagraph = iota // in a run of white space with a blank line
	cutLine             // in a run of white space with a line break
	cutWord             // in other white space
	cutDeep             // added when the cut is inside a formatted span
)

// cut chooses where the chunk that starts at start and may run to end
// ends: after (or else before) a run of white space, a paragraph break
// first, then a line break, then any; outside formatted spans first; the
// latest of equals. With none, it cuts at end, inside a word.
func (d *doc) cut(start, end int) int {
	best, bestScore := -1, 1<<30
	consider := func(pos, kind int) {
		if pos <= start {
			return
		}
		score := kind
		if d.depthAt(pos) > 0 {
			score += cutDeep
		}
		if score < bestScore || (score == bestScore && pos > best) {
			best, bestScore = pos, score
		}
	}
	run := func(q, limit int) (after, newlines int) {
		for q < limit {
			r, n := utf8.DecodeRuneInString(d.vis[q:])
			if !unicode.IsSpace(r) {
				break
			}
			if r == '\n' {
				newlines++
			}
			q += n
		}
		return q, newlines
	}
	kindOf := func(newlines int) int {
		switch {
		case newlines >= 2:
			return cutParagraph
		case newlines == 1:
			return cutLine
		}
		return cutWord
	}
	for q := start; q < end; {
		r, n := utf8.DecodeRuneInString(d.vis[q:])
		if !unicode.IsSpace(r) {
			q += n
			continue
		}
		after, newlines := run(q, end)
		consider(after, kindOf(newlines))
		consider(q, kindOf(newlines))
		q = after
	}
	// White space just past the window: the window may end before it.
	if end < len(d.vis) {
		if _, newlines := run(end, min(len(d.vis), end+64)); newlines > 0 || startsWithSpace(d.vis[end:]) {
			consider(end, kindOf(newlines))
		}
	}
	if best < 0 {
		return end
	}
	return best
}

func startsWithSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

// chunks splits d into chunks of at most limit units and maxBytes bytes.
func (d *doc) chunks(limit, maxBytes int) []Chunk {
	var out []Chunk
	for start := 0; start < len(d.vis); {
		end := d.window(start, limit, maxBytes)
		if end < len(d.vis) {
			end = d.cut(start, end)
		}
		out = append(out, d.chunk(start, end))
		start = end
	}
	return out
}

// chunk makes the chunk of visible positions [a, b).
func (d *doc) chunk(a, b int) Chunk {
	c := Chunk{Source: d.src[d.srcAt(a):d.srcAt(b)], Visible: d.vis[a:b]}
	for _, r := range c.Visible {
		c.Units += runeUnits(r)
	}
	c.Text = c.Visible
	if d.html {
		c.Text = d.render(a, b)
	}
	return c
}

// render writes the HTML of visible positions [a, b): the entities cut at
// either end are closed at the end and opened at the start.
func (d *doc) render(a, b int) string {
	var out strings.Builder
	var cur []*entity
	for k := d.textAt(a); k < len(d.texts) && d.tok(k).vis0 < b; k++ {
		t := d.tok(k)
		lo, hi := max(a, t.vis0), min(b, t.vis1)
		if lo >= hi {
			continue
		}
		n := commonPrefix(cur, t.stack)
		for i := len(cur) - 1; i >= n; i-- {
			out.WriteString(cur[i].close)
		}
		for _, e := range t.stack[n:] {
			out.WriteString(e.open)
		}
		cur = t.stack
		writeEscaped(&out, d.vis[lo:hi], false)
	}
	for i := len(cur) - 1; i >= 0; i-- {
		out.WriteString(cur[i].close)
	}
	return out.String()
}
