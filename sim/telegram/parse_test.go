package telegram

import (
	"testing"
	"unicode/utf8"
)

// FuzzParsers checks that no input makes a parser panic, and that the
// entities of a parsed text lie within it.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{
		"<b>bold <i>x</i></b> &lt;&#128512;&#x1F600;&amp", `<a href="tg://user?id=5">m</a>`, "<pre><code class=\"language-go\">x</code></pre>",
		"<blockquote expandable>q</blockquote>", "<tg-emoji emoji-id=\"5\">👍</tg-emoji>", "<tg-time unix=\"1700000000\" format=\"wd\">t</tg-time>",
		"*b* _i_ __u__ ~s~ ||sp|| `c` ```go\nx```", ">quote\n>more||\nafter", "**>exp\n>x||", "![👍](tg://emoji?id=5)", "[a](tg://user?id=1) \\.",
		"*b* _i_ [l](http://x.y) `c` ```py\nx```", "<", "&", "&#", "`", "```", "[", "\\", "\xff<b>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, parse := range map[string]func(string) (string, []entity, error){
			"html": parseHTML, "markdownv2": parseMarkdownV2, "markdown": parseMarkdown,
		} {
			text, ents, err := parse(s)
			if err != nil {
				continue
			}
			n := utf16Len(text)
			for _, e := range ents {
				if e.offset < 0 || e.length <= 0 || e.offset+e.length > n {
					t.Errorf("%s %q: entity %+v outside %q (%d units)", name, s, e, text, n)
				}
			}
			if utf8.ValidString(s) && !utf8.ValidString(text) && name != "html" {
				t.Errorf("%s %q: invalid UTF-8 out of valid input: %q", name, s, text)
			}
			if _, _, desc := finishText(text, ents); desc == "" {
				if out, es, _ := finishText(text, ents); len(es) > 0 && es[len(es)-1].offset+es[len(es)-1].length > utf16Len(out) {
					t.Errorf("%s %q: trimmed entity outside the text", name, s)
				}
			}
		}
	})
}
