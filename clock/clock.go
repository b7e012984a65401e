// Package clock provides the time source used by every herald loop, so that
// tests can move time forward in milliseconds instead of waiting for it.
package clock

import (
	"slices"
	"sync"
	"time"
)

// Clock tells the time and calls functions once a duration has passed on
// it: every herald loop waits for its next turn with AfterFunc.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f once d has passed, and returns a Timer that can
	// cancel the call. f must not block.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a call scheduled by AfterFunc.
type Timer interface {
	// Stop cancels the call and reports whether it did: false means that
	// the call has been made, or is being made.
	Stop() bool
}

// System returns a Clock that reads the operating system's clock and waits
// with the runtime's timers (time.AfterFunc: f runs in its own goroutine).
func System() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a Clock that only moves when told to. Its AfterFunc calls wait
// until Advance or Set moves it to or past their time; Waiters tells how
// many wait. The zero value is not ready; use NewFake.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeTimer // in the order they were made
}

// fakeTimer is a call waiting on a Fake.
type fakeTimer struct {
	clock *Fake
	at    time.Time
	call  func()
}

// NewFake returns a Fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake clock's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// AfterFunc schedules fn for d from the fake clock's current time. When
// d <= 0, fn is called before AfterFunc returns; otherwise by the Advance
// or Set that moves the clock to its time, in that caller's goroutine.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	f.mu.Lock()
	t := &fakeTimer{clock: f, at: f.now.Add(d), call: fn}
	if d > 0 {
		f.waiters = append(f.waiters, t)
	}
	f.mu.Unlock()
	if d <= 0 {
		fn()
	}
	return t
}

// Stop cancels t's call if it still waits.
func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.waiters, t)
	if i < 0 {
		return false
	}
	f.waiters = slices.Delete(f.waiters, i, i+1)
	return true
}

// Waiters returns how many AfterFunc calls wait for their time: neither
// made nor stopped.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// Advance moves the clock forward by d and makes the calls whose time has
// come, as Set does.
func (f *Fake) Advance(d time.Duration) {
	f.move(func(now time.Time) time.Time { return now.Add(d) })
}

// Set moves the clock to t, and then makes the calls whose time is t or
// earlier, earliest first (those of the same time in the order they were
// scheduled), before it returns. Moving it back makes no call.
func (f *Fake) Set(t time.Time) {
	f.move(func(time.Time) time.Time { return t })
}

// move sets the clock to to(now) and makes the calls that are due.
func (f *Fake) move(to func(now time.Time) time.Time) {
	f.mu.Lock()
	f.now = to(f.now)
	var due []*fakeTimer
	f.waiters = slices.DeleteFunc(f.waiters, func(t *fakeTimer) bool {
		if t.at.After(f.now) {
			return false
		}
		due = append(due, t)
		return true
	})
	f.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.call()
	}
}
