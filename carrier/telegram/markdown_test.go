package telegram

import (
	"regexp"
	"strings"
	"testing"
)

// TestMarkdownToHTML is the conversion table: each markdown text and the
// HTML sent for it.
func TestMarkdownToHTML(t *testing.T) {
	for _, tt := range markdownTable {
		t.Run(tt.name, func(t *testing.T) {
			if got := Markdown(tt.in); got != tt.want {
				t.Errorf("Markdown(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			checkHTML(t, tt.in, Markdown(tt.in))
		})
	}
}

// markdownTable is the conversion table.
var markdownTable = []struct{ name, in, want string }{
	{"bold", "*bold*", "<b>bold</b>"},
	{"bold, doubled", "**bold**", "<b>bold</b>"},
	{"italic", "_italic_", "<i>italic</i>"},
	{"italic, doubled", "__italic__", "<i>italic</i>"},
	{"in a sentence", "say *hi* to _them_.", "say <b>hi</b> to <i>them</i>."},
	{"code", "run `make test` now", "run <code>make test</code> now"},
	{"code keeps markers", "`*not bold*`", "<code>*not bold*</code>"},
	{"code block", "```\nfmt.Println(\"hi\")\n```", "<pre>fmt.Println(\"hi\")</pre>"},
	{"code block with a language", "```go\nif a < b && c > d {}\n```", `<pre><code class="language-go">if a &lt; b &amp;&amp; c &gt; d {}</code></pre>`},
	{"code block on one line", "```a *b* c```", "<pre>a *b* c</pre>"},
	{"link", "[the docs](https://core.telegram.org/bots/api)", `<a href="https://core.telegram.org/bots/api">the docs</a>`},
	{"link with & and quotes", `[q](https://example.com/?a=1&b="2")`, `<a href="https://example.com/?a=1&amp;b=&quot;2&quot;">q</a>`},
	{"link with parentheses", "[Go](https://en.wikipedia.org/wiki/Go_(game))", `<a href="https://en.wikipedia.org/wiki/Go_(game)">Go</a>`},
	{"formatted link text", "[*bold* link](https://x.org)", `<a href="https://x.org"><b>bold</b> link</a>`},
	{"italic in bold", "*bold _and italic_ text*", "<b>bold <i>and italic</i> text</b>"},
	{"bold in italic", "_italic *and bold*_", "<i>italic <b>and bold</b></i>"},
	{"bold italic", "_*both*_", "<i><b>both</b></i>"},
	{"code in bold", "*see `x`*", "<b>see <code>x</code></b>"},
	{"two spans side by side", "*a*_b_", "<b>a</b><i>b</i>"},
	{"unbalanced bold", "*not closed", "*not closed"},
	{"unbalanced italic", "an _open one", "an _open one"},
	{"unbalanced code", "a `tick", "a `tick"},
	{"unbalanced code block", "```\nnever closed", "```\nnever closed"},
	{"unbalanced link", "[text](https://x.org", "[text](https://x.org"},
	{"bracket without a link", "[x] done", "[x] done"},
	{"crossed spans", "*bold _italic* text_", "<b>bold _italic</b> text_"},
	{"inside words", "snake_case_name and 2*3*4", "snake_case_name and 2*3*4"},
	{"markers around spaces", "a * b * c and _ x _", "a * b * c and _ x _"},
	{"no span across lines", "*one\ntwo*", "*one\ntwo*"},
	{"three stars", "***", "***"},
	{"empty markers", "** and __ and ``", "** and __ and ``"},
	{"escaped markers", `\*not bold\* and \_ and \[x](y)`, "*not bold* and _ and [x](y)"},
	{"lt gt amp", "1 < 2 > 0 & done", "1 &lt; 2 &gt; 0 &amp; done"},
	{"tags are text", "<b>not bold</b> &amp;", "&lt;b&gt;not bold&lt;/b&gt; &amp;amp;"},
	{"escaped in spans", "*a<b* `&` [<>](https://x.org/?a&b)", `<b>a&lt;b</b> <code>&amp;</code> <a href="https://x.org/?a&amp;b">&lt;&gt;</a>`},
	{"cyrillic and emoji", "*привет* 👋 _мир_", "<b>привет</b> 👋 <i>мир</i>"},
	{"cyrillic inside a word", "слово_с_подчёркиванием", "слово_с_подчёркиванием"},
	{"quotes stay in text", `say "hi"`, `say "hi"`},
}

// tagPattern matches the tags the converter writes.
var tagPattern = regexp.MustCompile(`</?(b|i|code|pre|a)( [^>]*)?>`)

// checkHTML checks that html is balanced, that its text holds no bare <
// or >, and that its text, unescaped, is the visible text of src.
func checkHTML(t testing.TB, src, html string) {
	t.Helper()
	var stack []string
	for _, m := range tagPattern.FindAllStringSubmatch(html, -1) {
		if strings.HasPrefix(m[0], "</") {
			if len(stack) == 0 || stack[len(stack)-1] != m[1] {
				t.Fatalf("unbalanced %s in %q", m[0], html)
			}
			stack = stack[:len(stack)-1]
		} else {
			stack = append(stack, m[1])
		}
	}
	if len(stack) > 0 {
		t.Fatalf("unclosed %v in %q", stack, html)
	}
	text := tagPattern.ReplaceAllString(html, "")
	if strings.ContainsAny(text, "<>") {
		t.Fatalf("a bare < or > in the text of %q", html)
	}
	text = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&amp;", "&").Replace(text)
	if vis := parseMarkdown(src).vis; text != vis {
		t.Fatalf("the HTML's text %q is not the visible text %q", text, vis)
	}
}
