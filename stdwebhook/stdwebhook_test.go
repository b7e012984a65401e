package stdwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// The reference vector published with the Standard Webhooks specification.
func TestSignReferenceVector(t *testing.T) {
	key, err := ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

// The same computation written out by hand with crypto/hmac.
func TestSignMatchesIndependentHMAC(t *testing.T) {
	secret := []byte("raw secret bytes")
	ts := time.Unix(1700000000, 999_000_000) // the fraction must not matter
	body := []byte("hello\x00world")
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("msg_1.1700000000.hello\x00world"))
	want := "v1," + base64.StdEncoding.EncodeToString(h.Sum(nil))
	if got := Sign(secret, "msg_1", ts, body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func signed(secret []byte, id string, ts time.Time, body []byte) http.Header {
	h := http.Header{}
	SetHeaders(h, secret, id, ts, body)
	return h
}

func TestSetHeadersThenVerify(t *testing.T) {
	secret := []byte("s3cret")
	now := time.Unix(1700000000, 0)
	body := []byte(`{"a":1}`)
	h := signed(secret, "msg_1", now, body)
	if h.Get("webhook-id") != "msg_1" || h.Get("webhook-timestamp") != "1700000000" {
		t.Fatalf("headers %v", h)
	}
	if err := Verify(secret, h, body, now.Add(time.Minute), DefaultTolerance); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestVerifyRejects(t *testing.T) {
	secret := []byte("s3cret")
	now := time.Unix(1700000000, 0)
	body := []byte(`{"a":1}`)
	cases := []struct {
		name   string
		header func() http.Header
		body   []byte
		secret []byte
		now    time.Time
		want   error
	}{
		{"tampered body", func() http.Header { return signed(secret, "m", now, body) }, []byte(`{"a":2}`), secret, now, ErrSignature},
		{"wrong secret", func() http.Header { return signed(secret, "m", now, body) }, body, []byte("other"), now, ErrSignature},
		{"other id", func() http.Header {
			h := signed(secret, "m", now, body)
			h.Set(HeaderID, "n")
			return h
		}, body, secret, now, ErrSignature},
		{"old timestamp", func() http.Header { return signed(secret, "m", now.Add(-6*time.Minute), body) }, body, secret, now, ErrTimestamp},
		{"future timestamp", func() http.Header { return signed(secret, "m", now.Add(6*time.Minute), body) }, body, secret, now, ErrTimestamp},
		{"bad timestamp", func() http.Header {
			h := signed(secret, "m", now, body)
			h.Set(HeaderTimestamp, "yesterday")
			return h
		}, body, secret, now, ErrTimestamp},
		{"missing signature", func() http.Header {
			h := signed(secret, "m", now, body)
			h.Del(HeaderSignature)
			return h
		}, body, secret, now, ErrMissingHeaders},
		{"wrong version", func() http.Header {
			h := signed(secret, "m", now, body)
			h.Set(HeaderSignature, "v2,"+h.Get(HeaderSignature)[3:])
			return h
		}, body, secret, now, ErrSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(c.secret, c.header(), c.body, c.now, DefaultTolerance)
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
}

// A receiver accepts any one of several signatures (secret rotation).
func TestVerifyAnyOfSeveralSignatures(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := []byte("x")
	h := http.Header{}
	h.Set(HeaderID, "m")
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderSignature, "v1a,abc v1,garbage! "+Sign([]byte("old"), "m", now, body)+" "+Sign([]byte("new"), "m", now, body))
	for _, s := range []string{"old", "new"} {
		if err := Verify([]byte(s), h, body, now, time.Minute); err != nil {
			t.Errorf("secret %s: %v", s, err)
		}
	}
	if err := Verify([]byte("neither"), h, body, now, time.Minute); !errors.Is(err, ErrSignature) {
		t.Errorf("secret neither: %v", err)
	}
}

func TestParseSecret(t *testing.T) {
	key, err := ParseSecret("whsec_" + base64.StdEncoding.EncodeToString([]byte{1, 2, 3}))
	if err != nil || string(key) != "\x01\x02\x03" {
		t.Errorf("whsec: %v %v", key, err)
	}
	key, err = ParseSecret(" plain-secret\n")
	if err != nil || string(key) != "plain-secret" {
		t.Errorf("raw: %q %v", key, err)
	}
	for _, bad := range []string{"", "  ", "whsec_", "whsec_not*base64"} {
		if _, err := ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) succeeded", bad)
		}
	}
}
