// Package unixms converts times to and from the unix milliseconds that the
// stores keep, with 0 for the zero time.
package unixms

import "time"

// From returns t in unix milliseconds, 0 for the zero time.
func From(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Time is the inverse of From, in UTC.
func Time(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
