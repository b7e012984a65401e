//go:build !unix

package bench

import "time"

// sleepPrecisely sleeps for d with Go's timers where the system's sleep is
// not at hand.
func sleepPrecisely(d time.Duration) {
	time.Sleep(d)
}
