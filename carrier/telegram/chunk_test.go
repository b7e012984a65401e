package telegram

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// units counts s in UTF-16 code units, as Telegram does.
func units(s string) int { return len(utf16.Encode([]rune(s))) }

// alphabets are the scripts of the chunking tests: Latin and Cyrillic
// letters take one UTF-16 code unit each, these emoji two.
var alphabets = map[string][]rune{
	"latin":    []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
	"cyrillic": []rune("абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ"),
	"emoji":    []rune("😀😃😄😁😆😅😂🤣😊😇🙂🙃😉😌😍🥰😘🚀🎉🔥👋🌍🍕🐈"),
}

// prose is a text of exactly n characters (code points) of the alphabet:
// words of 1–9 letters separated by spaces, a line break now and then and
// a blank line every 20–40 words, so that each paragraph is far shorter
// than the limit even in emoji.
func prose(alphabet []rune, n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 42))
	out := make([]rune, 0, n+16)
	words, para := 0, 20+rng.IntN(20)
	for len(out) < n {
		for k := 1 + rng.IntN(9); k > 0; k-- {
			out = append(out, alphabet[rng.IntN(len(alphabet))])
		}
		words++
		switch {
		case words == para:
			out = append(out, '\n', '\n')
			words, para = 0, 20+rng.IntN(20)
		case rng.IntN(12) == 0:
			out = append(out, '\n')
		default:
			out = append(out, ' ')
		}
	}
	out = out[:n]
	if last := out[n-1]; last == ' ' || last == '\n' {
		out[n-1] = alphabet[0]
	}
	return string(out)
}

// checkChunks checks what every split must give: chunks within the limit,
// counted right, that give the text back when joined, none blank.
func checkChunks(t *testing.T, text string, chunks []Chunk, limit int) {
	t.Helper()
	var src, vis strings.Builder
	for i, c := range chunks {
		if c.Units > limit {
			t.Errorf("chunk %d: %d units, over the limit %d", i, c.Units, limit)
		}
		if got := units(c.Visible); got != c.Units {
			t.Errorf("chunk %d: Units %d, but its visible text has %d UTF-16 units", i, c.Units, got)
		}
		if !utf8.ValidString(c.Visible) || !utf8.ValidString(c.Text) {
			t.Errorf("chunk %d: not valid UTF-8 (a character was cut): %q", i, c.Text)
		}
		if c.Blank() {
			t.Errorf("chunk %d is blank: %q", i, c.Source)
		}
		src.WriteString(c.Source)
		vis.WriteString(c.Visible)
	}
	if src.String() != text {
		t.Errorf("the chunks' sources joined are not the text: %d bytes from %d", src.Len(), len(text))
	}
}

// TestSplitAtTheLimit splits texts of 4,096, 4,097 and 10,000 characters
// in Latin, Cyrillic and emoji (two UTF-16 code units each): every chunk
// is within 4,096 units, the chunks joined give the text back, and every
// chunk but the last ends at a paragraph break (each window has one).
func TestSplitAtTheLimit(t *testing.T) {
	for name, alphabet := range alphabets {
		for _, n := range []int{4096, 4097, 10000} {
			text := prose(alphabet, n, uint64(n))
			if got := utf8.RuneCountInString(text); got != n {
				t.Fatalf("%s %d: the text has %d characters", name, n, got)
			}
			chunks := Split(text, false)
			checkChunks(t, text, chunks, MaxUnits)
			wantMin := (units(text) + MaxUnits - 1) / MaxUnits
			if len(chunks) < wantMin || len(chunks) > wantMin+2 {
				t.Errorf("%s %d (%d units): %d chunks, want %d to %d", name, n, units(text), len(chunks), wantMin, wantMin+2)
			}
			if name != "emoji" && n == 4096 && len(chunks) != 1 {
				t.Errorf("%s: 4,096 characters in %d chunks, want 1", name, len(chunks))
			}
			if name != "emoji" && n == 4097 && len(chunks) != 2 {
				t.Errorf("%s: 4,097 characters in %d chunks, want 2", name, len(chunks))
			}
			for i, c := range chunks[:len(chunks)-1] {
				if !strings.HasSuffix(c.Source, "\n\n") {
					t.Errorf("%s %d: chunk %d ends %q, not at a paragraph break", name, n, i, c.Source[max(0, len(c.Source)-12):])
				}
			}
			if len(chunks) > 1 {
				if got := chunks[0].Units; got < MaxUnits/2 {
					t.Errorf("%s %d: the first chunk holds only %d units", name, n, got)
				}
			}
		}
	}
}

// TestSplitFallsBackToLinesThenWords: without a paragraph break in reach,
// a chunk ends at a line break; without one, between words; a word longer
// than the limit is cut, between two characters, never inside one.
func TestSplitFallsBackToLinesThenWords(t *testing.T) {
	lines := strings.Repeat(strings.Repeat("слово ", 9)+"конец\n", 150) // no blank line
	chunks := Split(lines, false)
	checkChunks(t, lines, chunks, MaxUnits)
	for i, c := range chunks[:len(chunks)-1] {
		if !strings.HasSuffix(c.Source, "конец\n") {
			t.Errorf("lines: chunk %d ends %q, not at a line break", i, c.Source[len(c.Source)-12:])
		}
	}
	if len(chunks) < 2 {
		t.Fatalf("lines: %d chunks", len(chunks))
	}
	// A paragraph break early in the window wins over line breaks late in it.
	para := "intro\n\n" + lines
	if c := Split(para, false)[0]; c.Source != "intro\n\n" {
		t.Errorf("a paragraph break in reach: first chunk %q, want the paragraph", c.Source[:min(20, len(c.Source))])
	}

	words := strings.Repeat("🚀word ", 2000) // no line break at all
	chunks = Split(words, false)
	checkChunks(t, words, chunks, MaxUnits)
	for i, c := range chunks[:len(chunks)-1] {
		if !strings.HasSuffix(c.Source, "word ") {
			t.Errorf("words: chunk %d ends %q, not between words", i, c.Source[len(c.Source)-8:])
		}
	}

	long := strings.Repeat("😀", 5000) // one word of 10,000 units
	chunks = Split(long, false)
	checkChunks(t, long, chunks, MaxUnits)
	if len(chunks) != 3 || chunks[0].Units != MaxUnits || chunks[1].Units != MaxUnits || chunks[2].Units != 10000-2*MaxUnits {
		t.Errorf("a word of 5,000 emoji: chunks of %v units, want 4096, 4096, 1808", chunkUnits(chunks))
	}
	odd := "a" + long // now a cut at 4,096 units would fall inside an emoji
	chunks = Split(odd, false)
	checkChunks(t, odd, chunks, MaxUnits)
	if chunks[0].Units != MaxUnits-1 {
		t.Errorf("a word starting with one Latin letter: first chunk %d units, want 4095 (the next emoji does not fit)", chunks[0].Units)
	}
}

func chunkUnits(cs []Chunk) []int {
	var out []int
	for _, c := range cs {
		out = append(out, c.Units)
	}
	return out
}

// TestSplitMarkdownCountsTheVisibleText: a markdown text is measured by the
// text the chat shows, not by its markers or tags; it is cut only between
// spans, so that each chunk's source converts on its own to the chunk's
// HTML.
func TestSplitMarkdownCountsTheVisibleText(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 30000; i++ {
		switch i % 4 {
		case 0:
			b.WriteString("*bold words here* and ")
		case 1:
			b.WriteString("[a link](https://example.com/a/rather/long/path?with=query&and=more) then ")
		case 2:
			b.WriteString("`x < y && z` plus _italic words_ ")
		case 3:
			b.WriteString("end of a line.\n")
		}
		if i%37 == 36 {
			b.WriteString("\n")
		}
	}
	text := b.String()
	chunks := Split(text, true)
	checkChunks(t, text, chunks, MaxUnits)
	whole := parseMarkdown(text)
	var vis strings.Builder
	longer := false
	for i, c := range chunks {
		vis.WriteString(c.Visible)
		if got := Markdown(c.Source); got != c.Text {
			t.Errorf("chunk %d: its source converts to\n%.200q\nnot to its text\n%.200q", i, got, c.Text)
		}
		if len(c.Text) > MaxUnits {
			longer = true
		}
		if i < len(chunks)-1 && !strings.HasSuffix(c.Source, "\n\n") {
			t.Errorf("chunk %d ends %q, not at a paragraph break", i, c.Source[len(c.Source)-10:])
		}
	}
	if vis.String() != whole.vis {
		t.Error("the chunks' visible texts joined are not the text's")
	}
	if !longer {
		t.Error("no chunk's HTML is longer than 4,096 bytes: the test does not show that tags do not count")
	}
}

// TestSplitInsideAnOversizedSpan: a code block longer than a message is
// cut at its line breaks, each chunk closing the block and the next opening
// it again.
func TestSplitInsideAnOversizedSpan(t *testing.T) {
	code := strings.Repeat("if a < b && c > d { return \"x\" }\n", 400) // 13,200 characters
	text := "Here is the code:\n\n```go\n" + code + "```\n\nThat was it."
	chunks := Split(text, true)
	checkChunks(t, text, chunks, MaxUnits)
	if len(chunks) < 4 {
		t.Fatalf("%d chunks", len(chunks))
	}
	if chunks[0].Text != "Here is the code:\n\n" {
		t.Errorf("first chunk %q, want the paragraph before the block", chunks[0].Text)
	}
	for i, c := range chunks[1 : len(chunks)-1] {
		if !strings.HasPrefix(c.Text, `<pre><code class="language-go">`) || !strings.HasSuffix(c.Text, "\n</code></pre>") {
			t.Errorf("chunk %d: %.60q … %q, want a whole block cut at a line break", i+1, c.Text, c.Text[len(c.Text)-20:])
		}
	}
	if last := chunks[len(chunks)-1]; last.Text != "\n\nThat was it." && !strings.HasSuffix(last.Text, "</code></pre>\n\nThat was it.") {
		t.Errorf("last chunk ends %q", last.Text[max(0, len(last.Text)-40):])
	}
}

// TestSplitKeepsTheHTMLUnderTheByteLimit: many links with long URLs show
// little text but make much HTML; a chunk stops before its HTML passes
// what the Bot API reads.
func TestSplitKeepsTheHTMLUnderTheByteLimit(t *testing.T) {
	link := "[x](https://example.com/" + strings.Repeat("p", 900) + ") "
	text := strings.Repeat(link, 100)
	chunks := Split(text, true)
	checkChunks(t, text, chunks, MaxUnits)
	if len(chunks) < 3 {
		t.Errorf("%d chunks for %d bytes of HTML", len(chunks), len(Markdown(text)))
	}
	for i, c := range chunks {
		if len(c.Text) > MaxBytes {
			t.Errorf("chunk %d: %d bytes of HTML, over %d", i, len(c.Text), MaxBytes)
		}
	}
}

// TestSplitIsDeterministic: the same text gives the same chunks, which a
// retry relies on to resume.
func TestSplitIsDeterministic(t *testing.T) {
	text := prose(alphabets["cyrillic"], 10000, 7) + "\n\n*жирный* текст"
	a, b := Split(text, true), Split(text, true)
	if len(a) != len(b) {
		t.Fatalf("%d then %d chunks", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("chunk %d differs", i)
		}
	}
}

// TestSplitMarkdownNeverCutsASpan: in a text of words only, the window
// often ends inside a bold, italic or link span; the cut goes to the last
// space before the span instead, so that every chunk's source converts on
// its own to the chunk's HTML, with the span whole.
func TestSplitMarkdownNeverCutsASpan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 20; round++ {
		var b strings.Builder
		for b.Len() < 12000 {
			words := strings.TrimSpace(strings.Repeat("слово ", 1+rng.IntN(30)))
			switch rng.IntN(4) {
			case 0:
				b.WriteString("*" + words + "* ")
			case 1:
				b.WriteString("_" + words + "_ ")
			case 2:
				b.WriteString("[" + words + "](https://example.org/x) ")
			default:
				b.WriteString(words + " ")
			}
		}
		text := b.String()
		chunks := Split(text, true)
		checkChunks(t, text, chunks, MaxUnits)
		for i, c := range chunks {
			if got := Markdown(c.Source); got != c.Text {
				t.Fatalf("round %d, chunk %d: a span was cut: its source converts to\n…%q\nnot to its text\n…%q", round, i, tail(got), tail(c.Text))
			}
		}
	}
}

func tail(s string) string { return strings.ToValidUTF8(s[max(0, len(s)-80):], "") }
