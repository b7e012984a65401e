//go:build unix

package bench

import (
	"syscall"
	"time"
)

// sleepPrecisely blocks the calling thread for d with the system's sleep,
// which ends within microseconds of d (an interrupted sleep ends early).
func sleepPrecisely(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
