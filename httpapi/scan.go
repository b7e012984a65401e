package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// codeDuplicateField answers a body that gives a field twice.
const codeDuplicateField = "duplicate_field"

// freeText are the fields whose strings may hold control characters: a
// message's text and a room event's data are the caller's own content;
// every other string names or keys something (a lane, a key, a label).
var freeText = map[string]bool{"text": true, "data": true}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// scanBody checks the JSON data that is to be decoded into a value of
// type t, in one pass and without copying it: a key given twice in one
// object (at any depth), a key that names no field of the struct it is
// decoded into (or names one in another case, which encoding/json would
// take for it), and a control character in any string outside freeText.
// Other syntax errors are left to the decoder, which names them.
func scanBody(data []byte, t reflect.Type) *requestError {
	s := &scanner{data: data}
	s.space()
	if err := s.value(t, "", false); err != nil {
		return err
	}
	if s.space(); s.i < len(s.data) && !s.bad {
		return badRequest(codeInvalidJSON, "unexpected data after the JSON object")
	}
	return nil
}

// scanner walks JSON. bad is set at malformed JSON: the walk stops there
// and the decoder reports it.
type scanner struct {
	data []byte
	i    int
	bad  bool
}

func (s *scanner) space() {
	for s.i < len(s.data) && strings.IndexByte(" \t\r\n", s.data[s.i]) >= 0 {
		s.i++
	}
}

// typed returns the type whose fields and elements t's JSON holds: nil
// when it holds anything (json.RawMessage, any, a type that decodes
// itself).
func typed(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == timeType || reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() == reflect.Interface {
		return nil
	}
	return t
}

// value scans the value at s.i, to be decoded into t, named path.
func (s *scanner) value(t reflect.Type, path string, free bool) *requestError {
	if s.i >= len(s.data) {
		s.bad = true
		return nil
	}
	t = typed(t)
	switch s.data[s.i] {
	case '{':
		return s.object(t, path, free)
	case '[':
		return s.array(t, path, free)
	case '"':
		str, ok := s.str()
		if ok && !free && hasControl(str) {
			return badRequest(codeInvalidField, "%s: control characters are not allowed", name(path))
		}
		return nil
	}
	for s.i < len(s.data) && strings.IndexByte(",}] \t\r\n", s.data[s.i]) < 0 {
		s.i++ // a number, true, false or null: the decoder checks it
	}
	return nil
}

// name is the field of the value at path ("delivery.delay." names
// delivery.delay), "body" for the body itself.
func name(path string) string {
	if path = strings.TrimSuffix(path, "."); path == "" {
		return "body"
	}
	return path
}

func (s *scanner) object(t reflect.Type, path string, free bool) *requestError {
	s.i++ // {
	seen := map[string]bool{}
	for first := true; ; first = false {
		s.space()
		if s.i < len(s.data) && s.data[s.i] == '}' && first {
			s.i++
			return nil
		}
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			s.bad = true
			return nil
		}
		raw, ok := s.str()
		if !ok {
			return nil
		}
		key := string(raw)
		at := path + key
		if path != "" && t != nil && t.Kind() == reflect.Map {
			at = path[:len(path)-1] + "[" + strconv.Quote(key) + "]"
		}
		if seen[key] {
			return badRequest(codeDuplicateField, "%s: given twice; give each field once", at)
		}
		seen[key] = true
		if !free && hasControl(raw) {
			return badRequest(codeInvalidField, "%s: control characters are not allowed in a key", strconv.Quote(at))
		}
		elem, elemFree, err := member(t, key, at)
		if err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			s.bad = true
			return nil
		}
		s.i++
		s.space()
		if err := s.value(elem, at+".", free || elemFree); err != nil || s.bad {
			return err
		}
		s.space()
		if s.i < len(s.data) && s.data[s.i] == ',' {
			s.i++
			continue
		}
		if s.i < len(s.data) && s.data[s.i] == '}' {
			s.i++
			return nil
		}
		s.bad = true
		return nil
	}
}

// member returns the type of key's value in an object decoded into t, and
// whether it is free text; an error when t is a struct without that field.
func member(t reflect.Type, key, at string) (reflect.Type, bool, *requestError) {
	if t == nil {
		return nil, false, nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem(), false, nil
	case reflect.Struct:
		want := ""
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case tag == key && f.IsExported():
				return f.Type, freeText[key], nil
			case strings.EqualFold(tag, key):
				want = tag
			}
		}
		if want != "" {
			return nil, false, badRequest(codeUnknownField, "%q: unknown field; names are case-sensitive: %q", at, at[:len(at)-len(key)]+want)
		}
		return nil, false, badRequest(codeUnknownField, "%q: unknown field; see the API's fields in GET /v1/openapi.json", at)
	}
	return nil, false, nil // the decoder says what type it wants
}

func (s *scanner) array(t reflect.Type, path string, free bool) *requestError {
	s.i++ // [
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for n := 0; ; n++ {
		s.space()
		if s.i < len(s.data) && s.data[s.i] == ']' && n == 0 {
			s.i++
			return nil
		}
		if err := s.value(elem, fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), n), free); err != nil || s.bad {
			return err
		}
		s.space()
		if s.i < len(s.data) && s.data[s.i] == ',' {
			s.i++
			continue
		}
		if s.i < len(s.data) && s.data[s.i] == ']' {
			s.i++
			return nil
		}
		s.bad = true
		return nil
	}
}

// str reads the string at s.i and returns its value (a slice of s.data
// when it has no escapes); ok is false (and s.bad set) when it is
// malformed.
func (s *scanner) str() ([]byte, bool) {
	start := s.i
	s.i++ // "
	escaped := false
	for s.i < len(s.data) {
		switch c := s.data[s.i]; {
		case c == '\\':
			escaped = true
			s.i += 2
		case c == '"':
			s.i++
			raw := s.data[start:s.i]
			if !escaped {
				return raw[1 : len(raw)-1], true
			}
			var v string
			if json.Unmarshal(raw, &v) != nil {
				s.bad = true
				return nil, false
			}
			return []byte(v), true
		case c < 0x20:
			s.bad = true
			return nil, false
		default:
			s.i++
		}
	}
	s.bad = true
	return nil, false
}

// hasControl reports whether v holds a control character (C0, DEL or C1)
// or is not valid UTF-8.
func hasControl(v []byte) bool {
	for len(v) > 0 {
		if c := v[0]; c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return true
			}
			v = v[1:]
			continue
		}
		r, n := utf8.DecodeRune(v)
		if r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) {
			return true
		}
		v = v[n:]
	}
	return false
}
