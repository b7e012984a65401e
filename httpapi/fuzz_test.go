package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzSendRequest posts any body to POST /v1/messages of a real engine:
// no body may panic the server or be answered 5xx; every refusal is 400
// with the API's error shape, and every answer is as the OpenAPI document
// says.
func FuzzSendRequest(f *testing.F) {
	for _, s := range []string{
		`{"route":"hooks","text":"hi"}`,
		`{"route":"devices","target":"0102030405060708","payload":"AQID","params":{"f_port":"2"},"priority":5}`,
		`{"route":"hooks","text":"hi","expires_at":"2000-01-01T00:00:00Z"}`,
		`{"route":"hooks","text":"00","expires_at":""}`, `{"route":"hooks","text":"hi","expires_at":null}`,
		`{"route":"hooks","payload":"!!"}`, `{"route":"hooks","text":"hi","priority":1e400}`,
		`{"route":"hooks","text":"hi","params":{"a":1}}`, `{"route":"hooks","text":"hi","coalesce-key":"k"}`,
		`[]`, `null`, `"x"`, `{`, ``, `{"route":"hooks","text":"hi"} {}`,
		`{"route":"devices","tArget":"0000000000000000","pAYloAd":"0000","pArAms":{"000000":"0"},"prioritY":0}`,
	} {
		f.Add(s)
	}
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+keyA)
		rec := httptest.NewRecorder()
		fx.h.ServeHTTP(rec, req)
		checkAnswer(t, req, []byte(body), rec)
		switch {
		case rec.Code >= 500:
			t.Fatalf("body %q: %d %s", body, rec.Code, rec.Body)
		case rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"error":{"code":`):
			t.Fatalf("body %q: %d without the error shape: %s", body, rec.Code, rec.Body)
		}
	})
}
