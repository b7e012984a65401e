package bench

import (
	"context"
	"sync"
	"time"
)

// alarm ends waits of one length at their deadlines, within tens of
// microseconds: it is how the carrier of W4 takes its 20 ms. Go's timers
// fire 0.6–0.9 ms late on this kind of machine (the netpoller sleeps in
// whole milliseconds), which alone would cost W4 4 % of its ideal and
// measure Go's timers rather than herald. One goroutine sleeps until the
// earliest deadline with the system's sleep (nanosleep) and ends every wait
// that is due. The waits all have the same length, so they end in the
// order they began. What remains is the scheduler's delay in waking the
// waiting send: the result's carrier_ms is the latency as the sends saw it.
type alarm struct {
	length time.Duration
	kick   chan struct{} // wakes the sleeper when a wait joins an empty queue
	stop   chan struct{}

	mu    sync.Mutex
	queue []alarmWait // in order of deadline
}

type alarmWait struct {
	at   time.Time
	done chan struct{}
}

// newAlarm starts an alarm for waits of length; stop it with close.
func newAlarm(length time.Duration) *alarm {
	a := &alarm{length: length, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	go a.run()
	return a
}

// wait returns after the alarm's length, or with ctx's error when ctx ends
// first.
func (a *alarm) wait(ctx context.Context) error {
	done := make(chan struct{})
	a.mu.Lock()
	a.queue = append(a.queue, alarmWait{at: time.Now().Add(a.length), done: done})
	first := len(a.queue) == 1
	a.mu.Unlock()
	if first {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run ends the waits that are due and sleeps until the next deadline,
// until close.
func (a *alarm) run() {
	for {
		a.mu.Lock()
		now, due := time.Now(), 0
		for due < len(a.queue) && !a.queue[due].at.After(now) {
			close(a.queue[due].done)
			due++
		}
		a.queue = append(a.queue[:0], a.queue[due:]...)
		var next time.Time
		if len(a.queue) > 0 {
			next = a.queue[0].at
		}
		a.mu.Unlock()
		if next.IsZero() {
			select {
			case <-a.kick:
			case <-a.stop:
				return
			}
			continue
		}
		sleepPrecisely(time.Until(next))
	}
}

// close stops the alarm; no wait may start after it.
func (a *alarm) close() {
	close(a.stop)
}
