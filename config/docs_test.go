package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// docYAML returns the yaml code blocks of the Markdown file path.
func docYAML(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur *strings.Builder
	for line := range strings.Lines(string(b)) {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```yaml":
			cur = &strings.Builder{}
		case cur != nil && strings.HasPrefix(line, "```"):
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line)
		}
	}
	return blocks
}

// yamlKeys returns every key a config file may hold, at any depth.
func yamlKeys(typ reflect.Type, keys map[string]bool) {
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		yamlKeys(typ.Elem(), keys)
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
				keys[name] = true
			}
			yamlKeys(f.Type, keys)
		}
	}
}

// TestDocumentedConfigsParse: every yaml block of docs/CONFIG.md (the
// reference itself, and each carrier's smallest config) is a config herald
// takes, once the variables it names are set (and an API key added to a
// fragment that has none); and every key a block shows commented out, as
// an option, is one herald knows.
func TestDocumentedConfigsParse(t *testing.T) {
	blocks := docYAML(t, "../docs/CONFIG.md")
	if len(blocks) < 6 {
		t.Fatalf("docs/CONFIG.md has %d yaml blocks, want the reference and each carrier's", len(blocks))
	}
	known := map[string]bool{}
	yamlKeys(reflect.TypeFor[File](), known)
	envName := regexp.MustCompile(`_env: *([A-Z_][A-Z0-9_]*)`)
	commented := regexp.MustCompile(`(?m)^\s*#\s*(?:- )?([a-z_]+):`)
	for i, block := range blocks {
		for _, m := range envName.FindAllStringSubmatch(block, -1) {
			t.Setenv(m[1], "value-of-"+m[1])
		}
		if !strings.Contains(block, "api_keys:") {
			block = "api_keys: [{key: k}]\n" + block
		}
		if _, err := Parse([]byte(block)); err != nil {
			t.Errorf("yaml block %d of docs/CONFIG.md: %v\n%s", i+1, err, block)
		}
		for _, m := range commented.FindAllStringSubmatch(block, -1) {
			if !known[m[1]] {
				t.Errorf("yaml block %d of docs/CONFIG.md shows the key %q, which no config holds", i+1, m[1])
			}
		}
	}
}
