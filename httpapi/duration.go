package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"time"
)

// duration is a duration of the rooms API: given as a string such as
// "10s" ("0" for none) or as an integer of milliseconds, and shown as a
// string. What is neither is kept, for check to refuse naming its field.
type duration struct {
	d   time.Duration
	bad []byte // the JSON given, when it is no duration
}

// UnmarshalJSON reads a duration string or an integer of milliseconds.
func (v *duration) UnmarshalJSON(b []byte) error {
	*v = duration{}
	var s string
	var ms json.Number
	switch {
	case len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &s) == nil:
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			v.bad = bytes.Clone(b)
		}
		v.d = d
	case json.Unmarshal(b, &ms) == nil:
		n, err := ms.Int64()
		if err != nil || n < 0 || n > math.MaxInt64/int64(time.Millisecond) {
			v.bad = bytes.Clone(b)
		}
		v.d = time.Duration(n) * time.Millisecond
	default:
		v.bad = bytes.Clone(b)
	}
	return nil
}

// MarshalJSON writes the duration as a string: "10s".
func (v duration) MarshalJSON() ([]byte, error) { return json.Marshal(v.d.String()) }

// check returns the duration of field, or the 400 that refuses what was
// given in its place.
func (v duration) check(field string) (time.Duration, *requestError) {
	if v.bad != nil {
		return 0, badRequest(codeInvalidField, "%s: %s is not a duration: give a string such as \"10s\" (\"0\" for none) or an integer of milliseconds", field, v.bad)
	}
	return v.d, nil
}
