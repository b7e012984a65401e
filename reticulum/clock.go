package reticulum

import "time"

// Clock is the time source of a [Node]: its housekeeping (receipt, link and
// resource timeouts, keep-alives) runs on a ticker from it, and every
// deadline is measured with its Now. Tests pass a fake clock to step time.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// Ticker is the part of [time.Ticker] a Node uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker returns a time.Ticker.
func (SystemClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }
