package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// TestSendAtField: send_at keeps a message QUEUED until then (its
// next_attempt_at, explain scheduled); beyond 366 days, not a time, or
// not before expires_at it is refused 400 naming send_at, storing nothing.
func TestSendAtField(t *testing.T) {
	f := newFixture(t)
	at := start.Add(3 * time.Second).Format(time.RFC3339)
	v := decode[herald.MessageView](t, f.do("POST", "/v1/messages", keyA, `{"route":"hooks","text":"x","send_at":"`+at+`"}`))
	if v.Status != herald.StatusQueued || v.NextAttemptAt == nil || v.NextAttemptAt.Format(time.RFC3339) != at {
		t.Errorf("view %s next_attempt_at %v, want QUEUED until %s", v.Status, v.NextAttemptAt, at)
	}
	x := decode[herald.Explanation](t, f.do("GET", "/v1/messages/"+v.ID+"/explain", keyA, ""))
	if x.Reason != "scheduled" || x.Until == nil || x.Until.Format(time.RFC3339) != at {
		t.Errorf("explain %+v, want scheduled until %s", x, at)
	}
	for _, sendAt := range []string{
		`"` + start.Add(367*24*time.Hour).Format(time.RFC3339) + `"`,
		`"tomorrow"`,
		`"` + start.Add(time.Hour).Format(time.RFC3339) + `","expires_at":"` + start.Add(time.Minute).Format(time.RFC3339) + `"`,
	} {
		e := wantError(t, f.do("POST", "/v1/messages", keyA, `{"route":"hooks","text":"x","send_at":`+sendAt+`}`), http.StatusBadRequest, codeInvalidField)
		if !strings.HasPrefix(e.Message, "send_at") {
			t.Errorf("send_at %s: %q does not name send_at", sendAt, e.Message)
		}
	}
	if n := len(f.list("/v1/messages", keyA).Messages); n != 1 {
		t.Errorf("%d messages stored, want the one scheduled", n)
	}
}

// TestSendNowEndpoint: a scheduled message sent now answers 200 with it
// due now; again, 409 not_waiting; another tenant's, 404.
func TestSendNowEndpoint(t *testing.T) {
	f := newFixture(t)
	v := decode[herald.MessageView](t, f.do("POST", "/v1/messages", keyA, `{"route":"hooks","text":"x","send_at":"`+start.Add(time.Hour).Format(time.RFC3339)+`"}`))
	wantError(t, f.do("POST", "/v1/messages/"+v.ID+"/send-now", keyB, ""), http.StatusNotFound, codeNotFound)
	got := decode[herald.MessageView](t, f.do("POST", "/v1/messages/"+v.ID+"/send-now", keyA, ""))
	if got.Status != herald.StatusQueued || got.NextAttemptAt != nil {
		t.Errorf("after send-now: %s next_attempt_at %v, want QUEUED due now", got.Status, got.NextAttemptAt)
	}
	if last := got.Timeline[len(got.Timeline)-1]; last.Reason != "sent now by an operator" {
		t.Errorf("last timeline entry %+v, want the send-now", last)
	}
	wantError(t, f.do("POST", "/v1/messages/"+v.ID+"/send-now", keyA, ""), http.StatusConflict, codeNotWaiting)
}

// TestBulkCancel: POST /v1/messages/cancel cancels the caller tenant's
// waiting messages of the route only; without a route, or with a status
// other than QUEUED or TO_RETRY, it is 400 and cancels nothing.
func TestBulkCancel(t *testing.T) {
	f := newFixture(t)
	mine := f.sendOK(`{"route":"hooks","text":"a","send_at":"` + start.Add(time.Hour).Format(time.RFC3339) + `"}`)
	theirs := decode[herald.MessageView](t, f.do("POST", "/v1/messages", keyB, `{"route":"hooks","text":"b","send_at":"`+start.Add(time.Hour).Format(time.RFC3339)+`"}`))
	e := wantError(t, f.do("POST", "/v1/messages/cancel", keyA, `{"status":"QUEUED"}`), http.StatusBadRequest, codeMissingField)
	if !strings.HasPrefix(e.Message, "route") {
		t.Errorf("without a route: %q does not name route", e.Message)
	}
	wantError(t, f.do("POST", "/v1/messages/cancel", keyA, `{"route":"hooks","status":"SENT_TO_NS"}`), http.StatusBadRequest, codeInvalidField)
	wantError(t, f.do("POST", "/v1/messages/cancel", keyA, `{"route":"hooks","before":"yesterday"}`), http.StatusBadRequest, codeInvalidField)
	if got := decode[herald.MessageView](t, f.do("GET", "/v1/messages/"+mine.ID, keyA, "")); got.Status != herald.StatusQueued {
		t.Fatalf("after the refusals: %s, want QUEUED", got.Status)
	}
	if n := decode[map[string]int](t, f.do("POST", "/v1/messages/cancel", keyA, `{"route":"hooks"}`))["cancelled"]; n != 1 {
		t.Errorf("cancelled %d, want 1 (tenant A's own)", n)
	}
	if got := decode[herald.MessageView](t, f.do("GET", "/v1/messages/"+mine.ID, keyA, "")); got.Status != herald.StatusCancelled {
		t.Errorf("mine: %s, want CANCELLED", got.Status)
	}
	if got := decode[herald.MessageView](t, f.do("GET", "/v1/messages/"+theirs.ID, keyB, "")); got.Status != herald.StatusQueued {
		t.Errorf("the other tenant's: %s, want QUEUED", got.Status)
	}
}
