package herald

import (
	"fmt"
	"unicode/utf8"
)

// The limits on a message's fields (docs/API.md, POST /v1/messages): every
// one is a bound on what is stored, and on Redis on what becomes part of a
// key.
const (
	// MaxKeyBytes bounds route, lane, idempotency_key, coalesce_key and
	// correlation_id.
	MaxKeyBytes = 256
	// MaxTargetBytes bounds target.
	MaxTargetBytes = 1024
	// MaxParams bounds the entries of params, and MaxParamBytes the key and
	// the value of each.
	MaxParams     = 32
	MaxParamBytes = 1024
)

// checkLimits returns an *InvalidError naming the first field of req over
// its limit.
func checkLimits(req SendRequest) error {
	for _, f := range []struct{ name, value string }{
		{"route", req.Route}, {"lane", req.Lane}, {"idempotency_key", req.IdempotencyKey},
		{"coalesce_key", req.CoalesceKey}, {"correlation_id", req.CorrelationID},
	} {
		if err := checkBytes(f.name, f.value, MaxKeyBytes); err != nil {
			return err
		}
	}
	if err := checkBytes("target", req.Target, MaxTargetBytes); err != nil {
		return err
	}
	if len(req.Params) > MaxParams {
		return Invalid("params", "%d entries; at most %d", len(req.Params), MaxParams)
	}
	for k, v := range req.Params {
		if err := checkBytes("params", k, MaxParamBytes); err != nil {
			return err
		}
		if err := checkBytes("params."+truncate(k, 64), v, MaxParamBytes); err != nil {
			return err
		}
	}
	return nil
}

// checkBytes refuses a value longer than limit bytes.
func checkBytes(field, value string, limit int) error {
	if len(value) > limit {
		return Invalid(field, "%d bytes; at most %d", len(value), limit)
	}
	return nil
}

// truncate shortens s to at most n bytes, on a rune boundary, to quote it
// in an error.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprint(s[:n], "…")
}

// validCursor reports whether c can be a List cursor: a message id, as
// the stores' cursors are.
func validCursor(c string) bool {
	if len(c) != 36 {
		return false
	}
	for i := range len(c) {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c[i] != '-' {
				return false
			}
		case '0' <= c[i] && c[i] <= '9', 'a' <= c[i] && c[i] <= 'f':
		default:
			return false
		}
	}
	return true
}
