// Package stdwebhook signs and verifies webhook requests in the Standard
// Webhooks form (https://www.standardwebhooks.com): the headers webhook-id,
// webhook-timestamp and webhook-signature, the last holding
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>".
package stdwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"
)

// The Standard Webhooks header names.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// signatureVersion prefixes a symmetric (HMAC-SHA256) signature.
const signatureVersion = "v1"

// Sign returns the signature of body sent as message msgID at ts:
// "v1,<base64 of HMAC-SHA256(secret, msgID.unixSeconds.body)>".
func Sign(secret []byte, msgID string, ts time.Time, body []byte) string {
	return signatureVersion + "," + base64.StdEncoding.EncodeToString(mac(secret, msgID, ts.Unix(), body))
}

// mac computes the raw HMAC-SHA256 of "msgID.unixSeconds.body".
func mac(secret []byte, msgID string, unix int64, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(msgID))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, unix, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// SetHeaders sets webhook-id, webhook-timestamp and webhook-signature on h
// for body sent as message msgID at ts, replacing any values already there.
func SetHeaders(h http.Header, secret []byte, msgID string, ts time.Time, body []byte) {
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, Sign(secret, msgID, ts, body))
}
