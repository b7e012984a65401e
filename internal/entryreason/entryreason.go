// Package entryreason is how the stores keep a timeline entry's reason
// with the carrier's answer to the call it ends (herald.Call), in the one
// string where they kept the reason alone: the reason, then, when the call
// is not zero, a NUL byte, the answer, a NUL byte, the call's duration in
// milliseconds, a NUL byte and the error text (last, so that it may hold
// anything). An entry stored before answers were kept reads as a reason
// with no call. A NUL byte in a reason or an answer is dropped.
package entryreason

import (
	"strconv"
	"strings"
	"time"

	"github.com/heraldmq/herald"
)

// sep separates the fields.
const sep = "\x00"

// Encode returns reason with c.
func Encode(reason string, c herald.Call) string {
	reason = strings.ReplaceAll(reason, sep, "")
	if c.IsZero() {
		return reason
	}
	return reason + sep + strings.ReplaceAll(c.Answer, sep, "") + sep +
		strconv.FormatInt(c.Duration.Milliseconds(), 10) + sep + c.Error
}

// Decode is the inverse of Encode. A malformed duration reads as 0.
func Decode(s string) (reason string, c herald.Call) {
	f := strings.SplitN(s, sep, 4)
	if len(f) < 4 {
		return f[0], c
	}
	ms, _ := strconv.ParseInt(f[2], 10, 64)
	return f[0], herald.Call{Answer: f[1], Error: f[3], Duration: time.Duration(ms) * time.Millisecond}
}
