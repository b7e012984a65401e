package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func TestSendBadInputStoresNothing(t *testing.T) {
	f := newFixture(t)
	past := start.Add(-time.Minute).Format(time.RFC3339)
	huge := `{"route":"hooks","text":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	tests := []struct {
		name, body, code, mention string
	}{
		{"no route", `{"text":"hi"}`, codeMissingField, "route"},
		{"empty route", `{"route":"","text":"hi"}`, codeMissingField, "route"},
		{"unknown route", `{"route":"nope","text":"hi"}`, codeUnknownRoute, "nope"},
		{"bad base64", `{"route":"hooks","payload":"%%%not base64"}`, codeInvalidField, "payload"},
		{"payload and text", `{"route":"hooks","payload":"aGk=","text":"hi"}`, codeInvalidField, "payload"},
		{"neither payload nor text", `{"route":"hooks"}`, codeMissingField, "payload"},
		{"priority as a string", `{"route":"hooks","text":"hi","priority":"high"}`, codeInvalidField, "priority: want an integer"},
		{"priority as a fraction", `{"route":"hooks","text":"hi","priority":1.5}`, codeInvalidField, "priority: want an integer"},
		{"priority above 1000", `{"route":"hooks","text":"hi","priority":1001}`, codeInvalidField, "priority: 1001 is not within -1000..1000"},
		{"priority below -1000", `{"route":"hooks","text":"hi","priority":-4611686018427387905}`, codeInvalidField, "priority"},
		{"param as a number", `{"route":"hooks","text":"hi","params":{"a":1}}`, codeInvalidField, "params: want an object of strings"},
		{"params as a string", `{"route":"hooks","text":"hi","params":"a=1"}`, codeInvalidField, "params: want an object of strings"},
		{"route as a number", `{"route":7,"text":"hi"}`, codeInvalidField, "route: want a string"},
		{"expires_at not RFC 3339", `{"route":"hooks","text":"hi","expires_at":"tomorrow"}`, codeInvalidField, "expires_at"},
		{"expires_at empty", `{"route":"hooks","text":"hi","expires_at":""}`, codeInvalidField, "expires_at"},
		{"expires_at null", `{"route":"hooks","text":"hi","expires_at":null}`, codeInvalidField, "expires_at"},
		{"expires_at a number", `{"route":"hooks","text":"hi","expires_at":5}`, codeInvalidField, "expires_at: want a string"},
		{"expires_at in the past", `{"route":"hooks","text":"hi","expires_at":"` + past + `"}`, codeInvalidField, "expires_at"},
		{"target the carrier needs", `{"route":"devices","text":"hi"}`, codeInvalidField, "target"},
		{"body over 1 MiB", huge, codeBodyTooLarge, "larger than"},
		{"malformed JSON", `{"route":"hooks",`, codeInvalidJSON, "JSON"},
		{"not JSON at all", `route=hooks&text=hi`, codeInvalidJSON, "JSON"},
		{"empty body", ``, codeInvalidJSON, "empty"},
		{"an array", `[{"route":"hooks","text":"hi"}]`, codeInvalidJSON, "object"},
		{"two objects", `{"route":"hooks","text":"hi"} {"route":"hooks","text":"hi"}`, codeInvalidJSON, "after the JSON object"},
		{"a typo of a field", `{"route":"hooks","text":"hi","coalesce-key":"k"}`, codeUnknownField, `"coalesce-key"`},
		{"a field in another case", `{"route":"hooks","Text":"hi"}`, codeUnknownField, `"Text": unknown field; names are case-sensitive: "text"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := f.do("POST", "/v1/messages", keyA, tt.body)
			e := wantError(t, rec, http.StatusBadRequest, tt.code)
			if !strings.Contains(e.Message, tt.mention) {
				t.Errorf("message %q does not mention %q", e.Message, tt.mention)
			}
		})
	}
	if l := f.list("/v1/messages", keyA); len(l.Messages) != 0 {
		t.Errorf("bad input stored %d messages: %+v", len(l.Messages), l.Messages)
	}
}

func TestSendAccepted(t *testing.T) {
	f := newFixture(t)
	rec := f.do("POST", "/v1/messages", keyA, `{
		"route":"devices","target":"0102030405060708","payload":"AQID",
		"params":{"f_port":"2"},"priority":5,"lane":"gw-1","correlation_id":"c-1"}`)
	wantStatus(t, rec, http.StatusAccepted)
	v := decode[herald.MessageView](t, rec)
	if v.ID == "" || v.Route != "devices" || v.Target != "0102030405060708" || v.Status != herald.StatusQueued ||
		v.Priority != 5 || v.Lane != "gw-1" || v.CorrelationID != "c-1" || v.Params["f_port"] != "2" {
		t.Errorf("view = %+v", v)
	}
	if got, _ := base64.StdEncoding.DecodeString(v.Payload); string(got) != "\x01\x02\x03" {
		t.Errorf("payload %q", v.Payload)
	}
	if len(v.Timeline) != 1 || v.Timeline[0].To != herald.StatusQueued {
		t.Errorf("timeline = %+v", v.Timeline)
	}
	if loc := rec.Header().Get("Location"); loc != "/v1/messages/"+v.ID {
		t.Errorf("Location %q", loc)
	}
	got := decode[herald.MessageView](t, f.do("GET", "/v1/messages/"+v.ID, keyA, ""))
	if got.ID != v.ID || got.Status != herald.StatusQueued {
		t.Errorf("GET = %+v", got)
	}

	// Unpadded base64 is accepted too; a webhook-like route needs no target.
	w := f.sendOK(`{"route":"hooks","payload":"AQI"}`)
	if w.Payload != "AQI=" || w.Target != "" {
		t.Errorf("unpadded payload view = %+v", w)
	}
}

func TestSendIdempotentRepeat(t *testing.T) {
	f := newFixture(t)
	body := `{"route":"hooks","text":"hi","idempotency_key":"k-1"}`
	first := f.sendOK(body)

	rec := f.do("POST", "/v1/messages", keyA, body)
	wantStatus(t, rec, http.StatusOK)
	again := decode[herald.MessageView](t, rec)
	if again.ID != first.ID {
		t.Errorf("repeat id %s, want %s", again.ID, first.ID)
	}
	if n := len(f.list("/v1/messages", keyA).Messages); n != 1 {
		t.Errorf("%d messages stored, want 1", n)
	}
	// The key is the tenant's own: another tenant's same key is a new message.
	rec = f.do("POST", "/v1/messages", keyB, body)
	wantStatus(t, rec, http.StatusAccepted)
	if other := decode[herald.MessageView](t, rec); other.ID == first.ID {
		t.Error("tenant B got tenant A's message")
	}
}

// TestSendLimits sends each limited field at its limit (accepted) and one
// byte over (refused with the field named, nothing stored).
func TestSendLimits(t *testing.T) {
	f := newFixture(t)
	long := func(n int) string { return strings.Repeat("x", n) }
	manyParams := func(n int) map[string]string {
		p := make(map[string]string, n)
		for i := range n {
			p[fmt.Sprint("k", i)] = "v"
		}
		return p
	}
	for _, tt := range []struct {
		field string
		at    func(int) map[string]any
		limit int
	}{
		{"lane", func(n int) map[string]any { return map[string]any{"lane": long(n)} }, herald.MaxKeyBytes},
		{"idempotency_key", func(n int) map[string]any { return map[string]any{"idempotency_key": long(n)} }, herald.MaxKeyBytes},
		{"coalesce_key", func(n int) map[string]any { return map[string]any{"coalesce_key": long(n)} }, herald.MaxKeyBytes},
		{"correlation_id", func(n int) map[string]any { return map[string]any{"correlation_id": long(n)} }, herald.MaxKeyBytes},
		{"target", func(n int) map[string]any { return map[string]any{"target": long(n)} }, herald.MaxTargetBytes},
		{"params", func(n int) map[string]any { return map[string]any{"params": manyParams(n)} }, herald.MaxParams},
		{"params", func(n int) map[string]any { return map[string]any{"params": map[string]string{long(n): "v"}} }, herald.MaxParamBytes},
		{"params.k", func(n int) map[string]any { return map[string]any{"params": map[string]string{"k": long(n)}} }, herald.MaxParamBytes},
	} {
		t.Run(tt.field, func(t *testing.T) {
			body := func(n int) string {
				req := map[string]any{"route": "hooks", "text": "hi"}
				for k, v := range tt.at(n) {
					req[k] = v
				}
				b, _ := json.Marshal(req)
				return string(b)
			}
			before := len(f.list("/v1/messages?limit=1000", keyA).Messages)
			wantStatus(t, f.do("POST", "/v1/messages", keyA, body(tt.limit)), http.StatusAccepted)
			e := wantError(t, f.do("POST", "/v1/messages", keyA, body(tt.limit+1)), http.StatusBadRequest, codeInvalidField)
			if !strings.HasPrefix(e.Message, tt.field+":") {
				t.Errorf("error %q does not name %s", e.Message, tt.field)
			}
			if after := len(f.list("/v1/messages?limit=1000", keyA).Messages); after != before+1 {
				t.Errorf("%d messages stored, want 1 (the one at the limit)", after-before)
			}
		})
	}
	// route: one byte over is refused before the route is looked up.
	e := wantError(t, f.do("POST", "/v1/messages", keyA, `{"route":"`+long(herald.MaxKeyBytes+1)+`","text":"hi"}`), http.StatusBadRequest, codeInvalidField)
	if !strings.HasPrefix(e.Message, "route:") {
		t.Errorf("error %q does not name route", e.Message)
	}
}

func TestListRefusesAMalformedCursor(t *testing.T) {
	f := newFixture(t)
	for _, c := range []string{"garbage", "01a2101b-80d5-74ef-9eb1-92d88e97237", "01A2101B-80D5-74EF-9EB1-92D88E972379", strings.Repeat("z", 36)} {
		e := wantError(t, f.do("GET", "/v1/messages?cursor="+c, keyA, ""), http.StatusBadRequest, codeInvalidField)
		if !strings.HasPrefix(e.Message, "cursor:") {
			t.Errorf("cursor %q: error %q does not name cursor", c, e.Message)
		}
	}
	wantStatus(t, f.do("GET", "/v1/messages?cursor=01a2101b-80d5-74ef-9eb1-92d88e972379", keyA, ""), http.StatusOK)
}
