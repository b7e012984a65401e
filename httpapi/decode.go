package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
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
// case ("Route"), which encoding/json would take for its field, a field
// given twice (at any depth), and a control character in a string that
// names or keys something (scanBody); a value of the wrong type names its
// field. An empty body leaves v alone when emptyOK.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) *requestError {
	data, err := readBody(w, r)
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
	if err := scanBody(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return jsonError(err, reflect.TypeOf(v))
	}
	return nil
}

// readBody reads r's body, at most MaxBodyBytes (else a
// *http.MaxBytesError), into a buffer of its Content-Length when it has
// one, so that a large body is not copied as the buffer grows.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if r.ContentLength <= 0 || r.ContentLength > MaxBodyBytes {
		return io.ReadAll(body)
	}
	buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+1)) // +1: the EOF read needs no growth
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
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
	if t.Before(time.Unix(0, 0)) {
		// The stores keep unix milliseconds, 0 for none: a time before
		// 1970 would be read back as another, or as none ("never").
		return time.Time{}, badRequest(codeInvalidField, "%s: %q is before 1970-01-01T00:00:00Z; leave the field out for none", field, s)
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
