package herald_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoFiles returns the repository's files (from the module root, this
// package's directory) whose names end in one of exts, .git and testdata
// aside.
func repoFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		for _, ext := range exts {
			if strings.HasSuffix(path, ext) {
				files = append(files, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// markdownLink is an inline link or image of Markdown: [text](target).
var markdownLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// proseOf returns a Markdown document without its code: fenced blocks and
// inline code spans (a link written inside backticks is an example, not a
// link).
func proseOf(doc string) string {
	var b strings.Builder
	fenced := false
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line)
		}
	}
	text, out := b.String(), strings.Builder{}
	for i := 0; i < len(text); {
		if text[i] != '`' {
			out.WriteByte(text[i])
			i++
			continue
		}
		n := i
		for n < len(text) && text[n] == '`' {
			n++
		}
		fence := text[i:n]
		end := strings.Index(text[n:], fence)
		if end < 0 {
			out.WriteString(fence)
			i = n
			continue
		}
		i = n + end + len(fence)
	}
	return out.String()
}

// headingAnchors returns the anchors GitHub gives a Markdown document's
// headings: lower case, punctuation dropped, spaces turned into hyphens, a
// repeated one numbered.
func headingAnchors(doc string) map[string]bool {
	anchors, seen := map[string]bool{}, map[string]int{}
	fenced := false
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '–' && r != '—':
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a += "-" + string(rune('0'+n))
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

// TestDocLinksResolve fails when a relative link of a Markdown document
// of the repository points to a file it does not have, or to a heading
// its target does not have.
func TestDocLinksResolve(t *testing.T) {
	docs := repoFiles(t, ".md")
	if len(docs) < 4 {
		t.Fatalf("found %d Markdown documents: %v; run from the module root", len(docs), docs)
	}
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range markdownLink.FindAllStringSubmatch(proseOf(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := doc
			if path != "" {
				file = filepath.Join(filepath.Dir(doc), path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s links to %s: no such file in the repository", doc, target)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			tb, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !headingAnchors(string(tb))[anchor] {
				t.Errorf("%s links to %s: %s has no heading #%s", doc, target, file, anchor)
			}
		}
	}
}

// TestNothingCitesFilesUsersLack fails when a source file, doc, config or
// page mentions a file a user of this repository does not have: the
// design notes and the outside contract it was built from, or their
// numbered seeds.
func TestNothingCitesFilesUsersLack(t *testing.T) {
	// Spelled in pieces, so that this file does not match itself.
	outside := regexp.MustCompile(`CONTRACT` + `\.md|DESIGN` + `\.md|STYLE` + `\.md|\.\./` + `shared|(?i:\bseed ?0\d\d\b)`)
	for _, f := range repoFiles(t, ".go", ".md", ".yaml", ".yml", ".html", ".js", ".css", ".service", ".json") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d mentions %q, which users of this repository do not have", f, i+1, m)
			}
		}
	}
}

// repoPath is a path in a document that starts with a directory name:
// docs/API.md, ui/assets/, cmd/herald.
var repoPath = regexp.MustCompile(`(?:^|[^\w./:@-])([a-z][\w.-]*/[\w./-]*)`)

// TestDocPathsExist fails when a Markdown document names a path of the
// repository (one that starts with one of its top-level directories, in
// its prose or its code) that the repository does not have.
func TestDocPathsExist(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			top[e.Name()] = true
		}
	}
	for _, doc := range repoFiles(t, ".md") {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range repoPath.FindAllStringSubmatch(string(b), -1) {
			path := strings.TrimRight(m[1], "./")
			first, _, _ := strings.Cut(path, "/")
			if !top[first] {
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s names %s, which the repository does not have", doc, m[1])
			}
		}
	}
}
