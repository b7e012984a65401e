package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The output formats of -o: tables for people, JSON and YAML for scripts.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

// checkFormat refuses an -o value that is not a format.
func checkFormat(format string) error {
	switch format {
	case formatTable, formatJSON, formatYAML:
		return nil
	}
	return fmt.Errorf("-o %q: want table, json or yaml", format)
}

// render writes an answer, decoded by decodeOrdered, as tables to w; the
// cells of a line are separated by tabs, which the tabwriter aligns.
type render func(w io.Writer, answer any)

// writeAnswer writes the server's JSON answer in format: as the server
// wrote it, indented (json); as YAML; or as table renders it. An empty
// answer (a 204) writes nothing.
func writeAnswer(out io.Writer, format string, answer json.RawMessage, table render) error {
	if len(answer) == 0 {
		return nil
	}
	switch format {
	case formatJSON:
		return printJSON(out, answer)
	case formatYAML:
		return printYAML(out, answer)
	}
	v, err := decodeOrdered(answer)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	table(tw, v)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = out.Write(buf.Bytes())
	return err
}

// object is a JSON object with its keys in the server's order.
type object []field

type field struct {
	key   string
	value any
}

// get returns the value of key, nil when absent.
func (o object) get(key string) any {
	for _, f := range o {
		if f.key == key {
			return f.value
		}
	}
	return nil
}

// has reports whether o has every one of keys.
func (o object) has(keys ...string) bool {
	for _, k := range keys {
		found := false
		for _, f := range o {
			found = found || f.key == k
		}
		if !found {
			return false
		}
	}
	return true
}

// decodeOrdered decodes JSON into object, []any, string, json.Number,
// bool and nil values, keeping the order of each object's keys.
func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return decodeValue(dec)
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := object{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, field{k.(string), v})
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return tok, nil
}

// printYAML writes answer as a YAML document, its keys in the server's order.
func printYAML(out io.Writer, answer json.RawMessage) error {
	v, err := decodeOrdered(answer)
	if err != nil {
		return err
	}
	enc := yaml.NewEncoder(out)
	enc.SetIndent(2)
	if err := enc.Encode(yamlNode(v)); err != nil {
		return err
	}
	return enc.Close()
}

func yamlNode(v any) *yaml.Node {
	switch v := v.(type) {
	case object:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, f := range v {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: f.key}, yamlNode(f.value))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range v {
			n.Content = append(n.Content, yamlNode(e))
		}
		return n
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(string(v), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(v)}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v)}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}

// Cells of a table.

// textWidth is the most runes a text cell shows; longer text ends in an
// ellipsis. Ids are never shortened: they stay whole, to be copied.
const textWidth = 40

// row writes one line of a table.
func row(w io.Writer, cells ...string) {
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// clip shortens s to n runes, the last an ellipsis, and keeps it on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// text returns v as a person reads it: "-" for nothing, a time in RFC
// 3339 UTC to the second, a list comma-separated, an object as key=value
// pairs.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		if v == "" {
			return "-"
		}
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil && strings.Contains(v, "T") {
			return t.UTC().Format(time.RFC3339)
		}
		return v
	case []any:
		if len(v) == 0 {
			return "-"
		}
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = text(e)
		}
		return strings.Join(parts, ", ")
	case object:
		if len(v) == 0 {
			return "-"
		}
		parts := make([]string, len(v))
		for i, f := range v {
			parts[i] = f.key + "=" + text(f.value)
		}
		return strings.Join(parts, " ")
	}
	return fmt.Sprint(v)
}

// cell returns the value of key as a table shows it: an id whole, any
// other text clipped.
func cell(key string, v any) string {
	if isIDKey(key) {
		return text(v)
	}
	return clip(text(v), textWidth)
}

// isIDKey reports whether key names an id (id, message_id, lease_ids).
func isIDKey(key string) bool {
	return key == "id" || strings.HasSuffix(key, "_id") || strings.HasSuffix(key, "_ids")
}

// header is the column title of key: upper case, words apart.
func header(key string) string {
	return strings.ToUpper(strings.ReplaceAll(key, "_", " "))
}

// number returns v as a float64, 0 when it is not a number.
func number(v any) float64 {
	n, _ := v.(json.Number)
	f, _ := n.Float64()
	return f
}

// str returns v when it is a string, "" otherwise.
func str(v any) string {
	s, _ := v.(string)
	return s
}

// millis returns a duration given in milliseconds as "1.5s", "-" for none.
func millis(ms float64) string {
	if ms <= 0 {
		return "-"
	}
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d >= time.Second:
		d = d.Round(100 * time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Millisecond)
	}
	return d.String()
}

// Generic tables: any answer, by its shape.

// renderAny renders an answer by its shape: a message as its row, an
// object as key and value lines followed by a table of each list of
// objects it holds, a list of objects as a table.
func renderAny(w io.Writer, answer any) {
	switch v := answer.(type) {
	case object:
		if isMessage(v) {
			renderMessageRow(w, v)
			return
		}
		renderObject(w, v)
	case []any:
		renderList(w, v)
	default:
		fmt.Fprintln(w, text(v))
	}
}

// renderObject writes o's fields as key and value lines (next_cursor
// last), then each list of objects it holds as a table.
func renderObject(w io.Writer, o object) {
	if key, ok := emptyPage(o); ok {
		fmt.Fprintln(w, "no "+strings.ReplaceAll(key, "_", " "))
		return
	}
	var lists []field
	for _, f := range o {
		if isList(f.value) {
			lists = append(lists, f)
			continue
		}
		if f.key != "next_cursor" {
			row(w, strings.ReplaceAll(f.key, "_", " "), valueText(f.key, f.value))
		}
	}
	for i, l := range lists {
		if i > 0 || len(lists) < len(o) {
			fmt.Fprintln(w)
		}
		if len(lists) > 1 || len(lists) < len(o) {
			fmt.Fprintln(w, strings.ReplaceAll(l.key, "_", " ")+":")
		}
		renderList(w, l.value.([]any))
	}
	nextCursor(w, o)
}

// emptyPage returns the key of o's list when o is a page of a list (the
// list and, maybe, next_cursor) with nothing in it.
func emptyPage(o object) (string, bool) {
	for _, f := range o {
		if f.key == "next_cursor" {
			continue
		}
		if a, ok := f.value.([]any); !ok || len(a) > 0 || isIDKey(f.key) || len(o) > 2 {
			return "", false
		}
	}
	for _, f := range o {
		if f.key != "next_cursor" {
			return f.key, true
		}
	}
	return "", false
}

// valueText is the value of a key and value line, on one line: a long
// text clipped, a list (of ids, often) whole.
func valueText(key string, v any) string {
	if _, list := v.([]any); list || isIDKey(key) {
		return text(v)
	}
	return clip(text(v), 200)
}

// counted renders the answer of a bulk action, {"replayed":3}, as a
// line: "replayed 3 dead letters", noun being what was counted.
func counted(noun string) render {
	return func(w io.Writer, answer any) {
		o, _ := answer.(object)
		if len(o) != 1 || number(o[0].value) != float64(int64(number(o[0].value))) {
			renderAny(w, answer)
			return
		}
		n := text(o[0].value)
		if n != "1" {
			noun += "s"
		}
		fmt.Fprintf(w, "%s %s %s\n", o[0].key, n, noun)
	}
}

// nextCursor writes how to ask for the next page when o says there is one.
func nextCursor(w io.Writer, o object) {
	if next := str(o.get("next_cursor")); next != "" {
		fmt.Fprintf(w, "\nmore: --cursor %s\n", next)
	}
}

// isList reports whether v is a list of objects (or an empty list that
// stands for one: not a list of ids).
func isList(v any) bool {
	a, ok := v.([]any)
	if !ok {
		return false
	}
	for _, e := range a {
		if _, ok := e.(object); !ok {
			return false
		}
	}
	return len(a) > 0
}

// renderList writes a list of objects as a table: a column for each key
// the objects have, in their order; "(none)" for an empty list.
func renderList(w io.Writer, items []any) {
	if len(items) == 0 {
		fmt.Fprintln(w, "(none)")
		return
	}
	var keys []string
	seen := map[string]bool{}
	for _, it := range items {
		o, _ := it.(object)
		for _, f := range o {
			if !seen[f.key] {
				seen[f.key] = true
				keys = append(keys, f.key)
			}
		}
	}
	titles := make([]string, len(keys))
	for i, k := range keys {
		titles[i] = header(k)
	}
	row(w, titles...)
	for _, it := range items {
		o, _ := it.(object)
		cells := make([]string, len(keys))
		for i, k := range keys {
			cells[i] = cell(k, o.get(k))
		}
		row(w, cells...)
	}
}
