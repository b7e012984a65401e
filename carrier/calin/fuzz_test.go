package calin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// The fuzz targets feed each parser any answer: it must not panic, must
// agree with itself (a task id or an error; a success without an error, a
// failure with one), must quote at most a bounded, secret-free part of the
// body, and must call an answer that is not the API's JSON a transient
// error. Seeds are in testdata/fuzz and below.

// fuzzSecret is the password of the fuzzed wire: no error may show it.
const fuzzSecret = "s3cr3t-pass"

func fuzzWire() wire {
	return wire{base: "http://calin.test", secrets: []string{fuzzSecret}, now: func() time.Time { return t0 }}
}

// fuzzAnswer builds the answer the wire would read: at most MaxAnswer
// bytes of body.
func fuzzAnswer(status int, contentType string, body []byte) answer {
	a := answer{status: status, contentType: contentType, body: body}
	if len(body) > MaxAnswer {
		a.body, a.truncated = body[:MaxAnswer], true
	}
	return a
}

// addSeeds adds the common seeds: real answers of both versions and
// garbage.
func addSeeds(f *testing.F, seeds ...string) {
	for _, s := range append(seeds,
		"", "null", "[]", "{}", `"x"`, "<html><body>502 Bad Gateway</body></html>",
		`{"Message":"An error has occurred."}`,
		`{"ResultCode":null,"Result":{"TaskNo":null}}`,
		`{"code":"0","result":{"token":`+strings.Repeat("[", 400)+`}}`,
		`{"ResultCode":"00","Reason":"OK","Result":{"TaskNo":"`+fuzzSecret+`\u0000"}}`,
	) {
		for _, st := range []int{200, 401, 500, 504} {
			f.Add(st, "application/json; charset=utf-8", []byte(s))
		}
	}
	f.Add(200, "text/html", []byte("<!DOCTYPE html>"+strings.Repeat("é", 40_000)))
}

// checkError checks what every parser error must be.
func checkError(t *testing.T, status int, body []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	if strings.Contains(msg, fuzzSecret) {
		t.Fatalf("the secret in an error: %v", err)
	}
	if len(msg) > 3*ErrorTextLen {
		t.Fatalf("an error of %d bytes: %.100s…", len(msg), msg)
	}
	if status/100 == 2 && !json.Valid(bytes.TrimSpace(body)) && isPermanent(err) {
		t.Fatalf("a 2xx answer that is not JSON is a permanent error: %v", err)
	}
}

func FuzzParseV1Create(f *testing.F) {
	addSeeds(f,
		`{"ResultCode":"00","Reason":"OK","Result":{"TaskNo":"1001","Status":null,"DataItem":"Voltage","Data":""}}`,
		`{"ResultCode":"99","Reason":"other error"}`,
		`{"ResultCode":"01","Reason":"company name, user name or password error"}`,
		`{"ResultCode":"00","Reason":"OK"}`,
		`{"resultcode":0,"result":{"taskno":1002}}`,
	)
	w := fuzzWire()
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		id, err := w.parseV1Create(fuzzAnswer(status, contentType, body))
		if (id == "") == (err == nil) {
			t.Fatalf("task id %q with error %v", id, err)
		}
		if id != "" && (status/100 != 2 || checkField("id", id) != nil) {
			t.Fatalf("task id %q from a %d answer", id, status)
		}
		checkError(t, status, body, err)
	})
}

func FuzzParseV1Result(f *testing.F) {
	addSeeds(f,
		`{"ResultCode":"00","Reason":"OK","Result":{"TaskNo":"1001","Status":null,"DataItem":"Voltage","Data":""}}`,
		`{"ResultCode":"00","Reason":"OK","Result":{"TaskNo":"1001","Status":"True","DataItem":"Current Credit Register","Data":"108.8,ON"}}`,
		`{"ResultCode":"00","Reason":"OK","Result":{"TaskNo":"1001","Status":"False","DataItem":"Switch On","Data":""}}`,
		`{"ResultCode":"00","Reason":"OK","Result":{"TaskNo":"1001","Status":"unknown"}}`,
		`{"ResultCode":"99","Reason":"other error"}`,
		`{"ResultCode":"03","Reason":"task 1001 does not exist"}`,
		`{"ResultCode":"00","Result":{"Status":true}}`,
		`{"ResultCode":"00","Result":{"Status":{"a":1}}}`,
	)
	w := fuzzWire()
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		res, err := w.parseV1Result(fuzzAnswer(status, contentType, body))
		checkPoll(t, res, err)
		checkError(t, status, body, err)
	})
}

func FuzzParseV2Create(f *testing.F) {
	addSeeds(f,
		`{"code":0,"reason":"success","result":[{"id":"1001"}]}`,
		`{"code":0,"reason":"success","result":[{"id":1001}]}`,
		`{"code":2,"reason":"meter 1 does not exist","result":null}`,
		`{"code":0,"reason":"success","result":[]}`,
		`{"code":0,"reason":"success","result":{"id":"1"}}`,
		`{"type":"https://tools.ietf.org/html/rfc7231#section-6.5.1","title":"One or more validation errors occurred.","status":400}`,
	)
	w := fuzzWire()
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		id, err := w.parseV2Create(fuzzAnswer(status, contentType, body))
		if (id == "") == (err == nil) {
			t.Fatalf("task id %q with error %v", id, err)
		}
		if id != "" && (status/100 != 2 || checkField("id", id) != nil) {
			t.Fatalf("task id %q from a %d answer", id, status)
		}
		checkError(t, status, body, err)
	})
}

func FuzzParseV2Task(f *testing.F) {
	addSeeds(f,
		`{"code":0,"reason":"success","result":{"data":[{"name":"Current Credit Balance","status":0,"data":""}]}}`,
		`{"code":0,"reason":"success","result":{"data":[{"name":"Current Credit Balance","status":1,"data":"108.8"}]}}`,
		`{"code":0,"reason":"success","result":{"data":[{"name":"Relay On/Off","status":2,"data":""}]}}`,
		`{"code":0,"reason":"success","result":{"data":[{"name":"Token","status":3,"data":""}]}}`,
		`{"code":0,"reason":"success","result":{"data":[{"name":"Token","status":"1","data":5000}]}}`,
		`{"code":0,"reason":"success","result":{"data":[{"status":7}]}}`,
		`{"code":3,"reason":"task 1 does not exist","result":null}`,
	)
	w := fuzzWire()
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		res, err := w.parseV2Task(fuzzAnswer(status, contentType, body))
		checkPoll(t, res, err)
		checkError(t, status, body, err)
	})
}

func FuzzParseV2Login(f *testing.F) {
	addSeeds(f,
		`{"code":0,"reason":"success","result":{"token":"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZG1pbiIsImV4cCI6MTc4NjAwMDAwMH0.c2ln"}}`,
		`{"code":0,"reason":"success","result":{"token":"a.eyJleHAiOiJzb29uIn0.b"}}`,
		`{"code":0,"reason":"success","result":{"token":"a.!!!.b"}}`,
		`{"code":1,"reason":"user id, password or company error","result":null}`,
		`{"code":0,"result":{"token":"`+fuzzSecret+`"}}`,
	)
	w := fuzzWire()
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		tok, exp, err := w.parseV2Login(fuzzAnswer(status, contentType, body))
		if (tok == "") == (err == nil) {
			t.Fatalf("token %q with error %v", tok, err)
		}
		var env struct {
			Result struct {
				Token string `json:"token"`
			} `json:"result"`
		}
		if err != nil && json.Unmarshal(body, &env) == nil && len(env.Result.Token) >= 8 && strings.Contains(err.Error(), env.Result.Token) {
			t.Fatalf("the token in an error: %v", err)
		}
		if !exp.IsZero() && tok == "" {
			t.Fatal("an expiry without a token")
		}
		checkError(t, status, body, err)
	})
}

// checkPoll checks that a poll's result and error agree.
func checkPoll(t *testing.T, res herald.PollResult, err error) {
	t.Helper()
	switch {
	case res == herald.PollSucceeded && err != nil:
		t.Fatalf("succeeded with an error: %v", err)
	case res == herald.PollFailed && err == nil:
		t.Fatal("failed without a reason")
	case res != herald.PollPending && res != herald.PollSucceeded && res != herald.PollFailed:
		t.Fatalf("result %d", res)
	}
}
