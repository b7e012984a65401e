package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// TestFieldNamesAreCaseSensitive: encoding/json takes "Route" for "route";
// the API refuses a field named in another case, as an unknown field
// naming it and the field meant, at any depth, and stores nothing.
func TestFieldNamesAreCaseSensitive(t *testing.T) {
	f := newFixture(t)
	wantStatus(t, f.do("POST", "/v1/rooms", keyA, `{"name":"orders"}`), http.StatusCreated)
	for _, c := range []struct{ path, body, mention string }{
		{"/v1/messages", `{"route":"hooks","text":"hi","Priority":1}`, `"Priority": unknown field; names are case-sensitive: "priority"`},
		{"/v1/rooms", `{"name":"a","delivery":{"Delay":"1s"}}`, `"delivery.Delay": unknown field; names are case-sensitive: "delivery.delay"`},
		{"/v1/rooms/orders/subscriptions", `{"type":"pull","event_types":[{"type":"a"},{"TYPE":"b"}]}`, `"event_types[1].TYPE"`},
		{"/v1/dead-letters/replay", `{"Route":"hooks"}`, `"Route"`},
		{"/v1/rooms/orders/events", `{"type":"a","Data":{}}`, `"Data"`},
	} {
		e := wantError(t, f.do("POST", c.path, keyA, c.body), http.StatusBadRequest, codeUnknownField)
		if !strings.Contains(e.Message, c.mention) {
			t.Errorf("POST %s %s: message %q, want it to mention %s", c.path, c.body, e.Message, c.mention)
		}
	}
	// Inside params (an object of strings) and data (any JSON), any key goes.
	wantStatus(t, f.do("POST", "/v1/messages", keyA, `{"route":"hooks","text":"hi","params":{"Route":"x"}}`), http.StatusAccepted)
	wantStatus(t, f.do("POST", "/v1/rooms/orders/events", keyA, `{"type":"a","data":{"Type":"x"}}`), http.StatusAccepted)
	if l := f.list("/v1/messages", keyA); len(l.Messages) != 1 {
		t.Errorf("%d messages stored, want the one sent with good names", len(l.Messages))
	}
}
