package ui

import (
	"sync"
	"time"
)

// throttleRule is how a throttle treats the failed logins of one key (a
// client address, a key's prefix): the first free of them cost nothing;
// each one after makes the key wait, first base, then twice as long as
// the wait before, at most max. A key forgotten (no failure for forget)
// starts again.
type throttleRule struct {
	free      int
	base, max time.Duration
	forget    time.Duration
}

// maxThrottled bounds the keys a throttle remembers: when full, it
// forgets those it may, then any.
const maxThrottled = 100000

// strikes are a key's failed logins.
type strikes struct {
	n     int
	last  time.Time // the last failure
	until time.Time // no login before
	// told is whether this burst (the failures until the key is
	// forgotten or succeeds) has been logged.
	told bool
}

// throttle counts failed logins per key and makes the keys that fail too
// often wait, exponentially.
type throttle struct {
	rule throttleRule
	now  func() time.Time

	mu sync.Mutex
	m  map[string]*strikes
}

func newThrottle(rule throttleRule, now func() time.Time) *throttle {
	return &throttle{rule: rule, now: now, m: map[string]*strikes{}}
}

// wait returns how long key must still wait before a login is tried, 0
// when it need not.
func (t *throttle) wait(key string) time.Duration {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[key]
	if s == nil || !now.Before(s.until) {
		return 0
	}
	return s.until.Sub(now)
}

// fail counts a failed login of key. It returns the wait it now imposes
// (0 while the key's failures are free), and whether this is the first
// wait of the key's burst, to be logged.
func (t *throttle) fail(key string) (wait time.Duration, first bool) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[key]
	if s != nil && now.Sub(s.last) >= t.rule.forget && !now.Before(s.until) {
		s = nil // forgotten: a new burst
	}
	if s == nil {
		t.makeRoom(now)
		s = &strikes{}
		t.m[key] = s
	}
	s.n++
	s.last = now
	if s.n <= t.rule.free {
		return 0, false
	}
	wait = t.rule.max
	if shift := s.n - t.rule.free - 1; shift < 32 {
		wait = min(t.rule.base<<shift, t.rule.max)
	}
	s.until = now.Add(wait)
	first = !s.told
	s.told = true
	return wait, first
}

// succeed forgets key's failures.
func (t *throttle) succeed(key string) {
	t.mu.Lock()
	delete(t.m, key)
	t.mu.Unlock()
}

// makeRoom forgets the keys it may when the throttle is full, and any
// when none may be; t.mu is held.
func (t *throttle) makeRoom(now time.Time) {
	if len(t.m) < maxThrottled {
		return
	}
	for k, s := range t.m {
		if now.Sub(s.last) >= t.rule.forget && !now.Before(s.until) {
			delete(t.m, k)
		}
	}
	for k := range t.m {
		if len(t.m) < maxThrottled {
			break
		}
		delete(t.m, k)
	}
}
