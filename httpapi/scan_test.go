package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestDuplicateAndControl: a field given twice, at any depth, is 400
// duplicate_field naming it; a control character in a string that names
// or keys something is 400 invalid_field naming it; nothing is stored.
// Text and a room event's data may hold them.
func TestDuplicateAndControl(t *testing.T) {
	f := newFixture(t)
	wantStatus(t, f.do("POST", "/v1/rooms", keyA, `{"name":"orders"}`), http.StatusCreated)
	for _, c := range []struct{ path, body, code, mention string }{
		{"/v1/messages", `{"route":"hooks","text":"a","route":"devices"}`, codeDuplicateField, "route: given twice"},
		{"/v1/messages", `{"route":"hooks","text":"a","params":{"k":"1","k":"2"}}`, codeDuplicateField, `params["k"]: given twice`},
		{"/v1/messages", `{"route":"hooks","text":"a","ro\u0075te":"hooks"}`, codeDuplicateField, "route: given twice"},
		{"/v1/rooms", `{"name":"r2","delivery":{"delay":"1s","delay":"2s"}}`, codeDuplicateField, "delivery.delay: given twice"},
		{"/v1/rooms/orders/events", `{"type":"a","data":{"x":{"y":1,"y":2}}}`, codeDuplicateField, "data.x.y: given twice"},
		{"/v1/rooms/orders/subscriptions", `{"type":"pull","event_types":[{"type":"a","type":"b"}]}`, codeDuplicateField, "event_types[0].type: given twice"},
		{"/v1/messages", `{"route":"hooks","text":"a","lane":"l\u0000"}`, codeInvalidField, "lane: control characters"},
		{"/v1/messages", `{"route":"hooks","text":"a","idempotency_key":"k\u001b[31m"}`, codeInvalidField, "idempotency_key: control characters"},
		{"/v1/messages", `{"route":"hooks","text":"a","coalesce_key":"a\nb"}`, codeInvalidField, "coalesce_key: control characters"},
		{"/v1/messages", `{"route":"hooks","text":"a","params":{"f_port":"1\r"}}`, codeInvalidField, `params["f_port"]: control characters`},
		{"/v1/messages", `{"route":"hooks","text":"a","params":{"a\tb":"1"}}`, codeInvalidField, "control characters are not allowed in a key"},
		{"/v1/messages", `{"route":"hooks","text":"a","correlation_id":"c\u0085"}`, codeInvalidField, "correlation_id: control characters"},
		{"/v1/rooms/orders/events", `{"type":"a\u0007","data":{}}`, codeInvalidField, "type: control characters"},
		{"/v1/rooms/orders/events", `{"type":"a","version":"1\n","data":{}}`, codeInvalidField, "version: control characters"},
	} {
		e := wantError(t, f.do("POST", c.path, keyA, c.body), http.StatusBadRequest, c.code)
		if !strings.Contains(e.Message, c.mention) {
			t.Errorf("POST %s %s: message %q, want it to mention %q", c.path, c.body, e.Message, c.mention)
		}
	}
	if l := f.list("/v1/messages", keyA); len(l.Messages) != 0 {
		t.Errorf("%d messages stored, want none", len(l.Messages))
	}
	wantStatus(t, f.do("POST", "/v1/messages", keyA, `{"route":"hooks","text":"line 1\nline 2\u0000"}`), http.StatusAccepted)
	wantStatus(t, f.do("POST", "/v1/rooms/orders/events", keyA, `{"type":"a","data":{"note":"a\nb"}}`), http.StatusAccepted)
}

// FuzzScanBody: the scanner never panics; what it lets through as JSON
// without duplicate keys, control characters outside text or unknown
// fields decodes (or fails to decode) as encoding/json says, and a body
// that encoding/json decodes into a map with fewer keys than the body
// gives (a duplicate) is refused.
func FuzzScanBody(f *testing.F) {
	for _, s := range []string{
		`{"route":"hooks","text":"hi"}`, `{"route":"a","route":"b"}`, `{"params":{"a":"1","a":"2"}}`,
		`{"lane":"\u0000"}`, `{"text":"\u0000\n"}`, `{"params":{"k\u001b":"v"}}`, `{"ro\u0075te":"a","route":"b"}`,
		`{"route":"x"} x`, `{"route":`, `[{"a":1}]`, `{"Route":"x"}`, `{"params":{"a":"\ud800"}}`,
	} {
		f.Add(s)
	}
	type body struct {
		Route  string            `json:"route"`
		Text   string            `json:"text"`
		Lane   string            `json:"lane"`
		Params map[string]string `json:"params"`
		Data   json.RawMessage   `json:"data"`
	}
	f.Fuzz(func(t *testing.T, data string) {
		err := scanBody([]byte(data), reflect.TypeFor[*body]())
		var b body
		decodeErr := json.Unmarshal([]byte(data), &b)
		if err != nil {
			if err.code == "" || err.message == "" {
				t.Fatalf("%q: error without code or message", data)
			}
			return
		}
		if decodeErr != nil {
			return // malformed JSON: the decoder says so
		}
		for name, v := range map[string]string{"route": b.Route, "lane": b.Lane} {
			if hasControl([]byte(v)) && v != "" {
				t.Fatalf("%q: %s %q holds a control character and passed", data, name, v)
			}
		}
		for k, v := range b.Params {
			if hasControl([]byte(k)) || hasControl([]byte(v)) {
				t.Fatalf("%q: params %q: %q holds a control character and passed", data, k, v)
			}
		}
		var top map[string]json.RawMessage
		if json.Unmarshal([]byte(data), &top) == nil && strings.Count(data, `"`) > 0 {
			if n := topKeys(data); n >= 0 && n != len(top) {
				t.Fatalf("%q: %d keys given, %d decoded, and it passed", data, n, len(top))
			}
		}
	})
}

// topKeys counts the keys of data's top-level object, -1 when it is not one.
func topKeys(data string) int {
	dec := json.NewDecoder(strings.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return -1
	}
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return -1
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return -1
		}
		n++
	}
	return n
}

// TestTimesBefore1970: a time before 1970 (the zero time included, which
// the stores would read back as "never") is refused, naming its field.
func TestTimesBefore1970(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ method, path, body, field string }{
		{"POST", "/v1/messages", `{"route":"hooks","text":"a","expires_at":"0001-01-01T00:00:00Z"}`, "expires_at"},
		{"POST", "/v1/dead-letters/replay", `{"since":"1969-12-31T23:59:59Z"}`, "since"},
		{"DELETE", "/v1/dead-letters?before=1900-01-01T00:00:00Z", "", "before"},
	} {
		e := wantError(t, f.do(c.method, c.path, keyA, c.body), http.StatusBadRequest, codeInvalidField)
		if !strings.HasPrefix(e.Message, c.field+": ") || !strings.Contains(e.Message, "before 1970") {
			t.Errorf("%s %s: %q, want it to name %s and say before 1970", c.method, c.path, e.Message, c.field)
		}
	}
	wantStatus(t, f.do("POST", "/v1/messages", keyA, `{"route":"hooks","text":"a","expires_at":"2999-01-01T00:00:00Z"}`), http.StatusAccepted)
}

// TestRoomNames: a room's name starts with a letter or a digit and has at
// most 128 bytes; "." and ".." are refused.
func TestRoomNames(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{".", "..", "-a", "_a", ".hidden", strings.Repeat("a", 129), "a/b", "a b"} {
		e := wantError(t, f.do("POST", "/v1/rooms", keyA, `{"name":"`+name+`"}`), http.StatusBadRequest, codeInvalidField)
		if !strings.HasPrefix(e.Message, "name: ") {
			t.Errorf("room %q: %q, want it to name the field", name, e.Message)
		}
	}
	for _, name := range []string{"a", "0.9", "orders.v2_eu-1", strings.Repeat("a", 128)} {
		wantStatus(t, f.do("POST", "/v1/rooms", keyA, `{"name":"`+name+`"}`), http.StatusCreated)
	}
}
