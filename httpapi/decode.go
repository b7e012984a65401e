package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"
)

// requestError is bad input, answered 400 with its code.
type requestError struct {
	code    string
	message string
}

func (e *requestError) Error() string { return e.message }

func badRequest(code, format string, args ...any) *requestError {
	return &requestError{code: code, message: fmt.Sprintf(format, args...)}
}

// writeRequestError answers 400 with e's code.
func writeRequestError(w http.ResponseWriter, e *requestError) {
	writeError(w, http.StatusBadRequest, e.code, e.message)
}

// decodeBody reads r's JSON body into v: at most MaxBodyBytes, exactly one
// JSON value. An unknown field is refused with its name (a typo would
// otherwise be dropped without a word), and so is a field named in another
// case ("Route"), which encoding/json would take for its field; a value of
// the wrong type names its field. An empty body leaves v alone when
// emptyOK.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) *requestError {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return badRequest(codeBodyTooLarge, "the body is larger than %d bytes", MaxBodyBytes)
	}
	if err != nil {
		return badRequest(codeInvalidJSON, "reading the body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if emptyOK {
			return nil
		}
		return badRequest(codeInvalidJSON, "the body is empty; want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, reflect.TypeOf(v))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest(codeInvalidJSON, "unexpected data after the JSON object")
	}
	if name, want := otherCase(data, reflect.TypeOf(v), ""); name != "" {
		return badRequest(codeUnknownField, "%q: unknown field; names are case-sensitive: %q", name, want)
	}
	return nil
}

// otherCase returns the first key of the JSON object data, or of an object
// within it decoded into a struct, that names a field of the struct type t
// only in another case, with the field's name ("" when there is none). The
// key is given with the path of its object ("delivery.Delay"). data has
// been decoded into t already.
func otherCase(data []byte, t reflect.Type, path string) (key, want string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && t != timeType:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return "", ""
		}
		names := make([]string, t.NumField())
		for i := range names {
			names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if i := slices.Index(names, k); i >= 0 {
				if key, want = otherCase(obj[k], t.Field(i).Type, path+k+"."); key != "" {
					return key, want
				}
				continue
			}
			if i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, k) }); i >= 0 {
				return path + k, path + names[i]
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8: // not json.RawMessage
		var list []json.RawMessage
		if json.Unmarshal(data, &list) != nil {
			return "", ""
		}
		for i, raw := range list {
			if key, want = otherCase(raw, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), i)); key != "" {
				return key, want
			}
		}
	}
	return "", ""
}

// jsonError describes an error decoding into a value of type into.
func jsonError(err error, into reflect.Type) *requestError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typ) && typ.Field == "":
		return badRequest(codeInvalidJSON, "the body is a JSON %s; want a JSON object", typ.Value)
	case errors.As(err, &typ):
		return badRequest(codeInvalidField, "%s: want %s", typ.Field, kindName(wantedType(typ, into)))
	case errors.As(err, &syn):
		return badRequest(codeInvalidJSON, "malformed JSON at byte %d: %v", syn.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest(codeInvalidJSON, "malformed JSON: the body ends too soon")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return badRequest(codeUnknownField, "%s: unknown field; see the API's fields in GET /v1/openapi.json", name)
	}
	return badRequest(codeInvalidJSON, "malformed JSON: %v", err)
}

var timeType = reflect.TypeFor[time.Time]()

// wantedType is the type of the field a type error is about: the field's
// own type when the error is about one of its map values, so that a bad
// value in "params" says an object of strings is wanted.
func wantedType(typ *json.UnmarshalTypeError, into reflect.Type) reflect.Type {
	for into.Kind() == reflect.Pointer {
		into = into.Elem()
	}
	if into.Kind() != reflect.Struct {
		return typ.Type
	}
	name, _, _ := strings.Cut(typ.Field, ".")
	for i := range into.NumField() {
		f := into.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name && f.Type.Kind() == reflect.Map && f.Type.Elem() == typ.Type {
			return f.Type
		}
	}
	return typ.Type
}

// kindName says, for a user, what JSON a Go type wants.
func kindName(t reflect.Type) string {
	if t == timeType {
		return "an RFC 3339 time"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return "an object of strings"
		}
		return "an object"
	case reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a " + t.String()
}

// parseTime parses an RFC 3339 time of field; "" is the zero time (a
// query parameter left out or empty).
func parseTime(field, s string) (time.Time, *requestError) {
	if s == "" {
		return time.Time{}, nil
	}
	return parseRFC3339(field, s)
}

func parseRFC3339(field, s string) (time.Time, *requestError) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, badRequest(codeInvalidField, "%s: %q is not an RFC 3339 time (e.g. 2025-01-02T15:04:05Z)", field, s)
	}
	return t, nil
}

// bodyTime is an optional RFC 3339 time in a JSON body: left out, it is
// the zero time; given, it must be a time ("" and null are not).
type bodyTime struct {
	set  bool // the body holds the field
	null bool
	s    string
}

// UnmarshalJSON records the field's value, which parse checks.
func (t *bodyTime) UnmarshalJSON(b []byte) error {
	t.set = true
	if string(b) == "null" {
		t.null = true
		return nil
	}
	return json.Unmarshal(b, &t.s)
}

// parse returns t's time, the zero time when the body left it out.
func (t bodyTime) parse(field string) (time.Time, *requestError) {
	switch {
	case !t.set:
		return time.Time{}, nil
	case t.null:
		return time.Time{}, badRequest(codeInvalidField, "%s: null is not an RFC 3339 time; leave the field out for none", field)
	}
	return parseRFC3339(field, t.s)
}
