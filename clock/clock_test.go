package clock

import (
	"slices"
	"sync"
	"testing"
	"time"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeMovesOnlyWhenTold(t *testing.T) {
	f := NewFake(start)
	if !f.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", f.Now(), start)
	}
	f.Advance(48 * time.Hour)
	if got := f.Now().Sub(start); got != 48*time.Hour {
		t.Fatalf("after Advance(48h): %v later, want 48h", got)
	}
	f.Set(start)
	if !f.Now().Equal(start) {
		t.Fatalf("after Set: %v", f.Now())
	}
	if d := time.Since(System().Now()); d < 0 || d > time.Second {
		t.Fatalf("System clock is %v off", d)
	}
}

// calls records the calls made by a Fake, with the time each saw.
type calls struct {
	mu  sync.Mutex
	got []string
}

func (c *calls) fn(f *Fake, name string) func() {
	return func() {
		at := f.Now().Sub(start) // a call may read the clock
		c.mu.Lock()
		defer c.mu.Unlock()
		c.got = append(c.got, name+"@"+at.String())
	}
}

func (c *calls) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.got
	c.got = nil
	return got
}

func TestFakeCallsAtTheTimeNotBefore(t *testing.T) {
	f := NewFake(start)
	var c calls
	f.AfterFunc(10*time.Second, c.fn(f, "a"))
	if n := f.Waiters(); n != 1 {
		t.Fatalf("%d waiters, want 1", n)
	}
	f.Advance(10*time.Second - time.Nanosecond)
	if got := c.take(); len(got) != 0 || f.Waiters() != 1 {
		t.Fatalf("calls %v and %d waiters a nanosecond early, want none and 1", got, f.Waiters())
	}
	f.Advance(time.Nanosecond)
	if got := c.take(); !slices.Equal(got, []string{"a@10s"}) || f.Waiters() != 0 {
		t.Fatalf("calls %v and %d waiters at the time, want [a@10s] and 0", got, f.Waiters())
	}
	f.Advance(time.Hour)
	if got := c.take(); len(got) != 0 {
		t.Fatalf("calls %v after the call, want none: a call is made once", got)
	}
}

func TestFakeCallsSeveralInDeadlineOrder(t *testing.T) {
	f := NewFake(start)
	var c calls
	f.AfterFunc(3*time.Second, c.fn(f, "c"))
	f.AfterFunc(time.Second, c.fn(f, "a"))
	f.AfterFunc(2*time.Second, c.fn(f, "b1"))
	f.AfterFunc(2*time.Second, c.fn(f, "b2"))
	f.AfterFunc(time.Minute, c.fn(f, "late"))
	f.Advance(1500 * time.Millisecond)
	if got := c.take(); !slices.Equal(got, []string{"a@1.5s"}) {
		t.Fatalf("calls %v at +1.5s, want [a@1.5s]", got)
	}
	// One move past several: earliest first, ties in the order made; each
	// sees the clock already moved.
	f.Set(start.Add(5 * time.Second))
	if got := c.take(); !slices.Equal(got, []string{"b1@5s", "b2@5s", "c@5s"}) {
		t.Fatalf("calls %v at +5s, want [b1@5s b2@5s c@5s]", got)
	}
	if n := f.Waiters(); n != 1 {
		t.Fatalf("%d waiters, want late's", n)
	}
}

func TestFakeSetBackwardsCallsNothing(t *testing.T) {
	f := NewFake(start)
	var c calls
	f.AfterFunc(time.Second, c.fn(f, "a"))
	f.Set(start.Add(-time.Hour))
	if got := c.take(); len(got) != 0 || f.Waiters() != 1 {
		t.Fatalf("calls %v and %d waiters after moving back, want none and 1", got, f.Waiters())
	}
	// Its time is still start+1s.
	f.Set(start.Add(time.Second - time.Nanosecond))
	if got := c.take(); len(got) != 0 {
		t.Fatalf("calls %v before the time, want none", got)
	}
	f.Set(start.Add(time.Second))
	if got := c.take(); !slices.Equal(got, []string{"a@1s"}) {
		t.Fatalf("calls %v at the time, want [a@1s]", got)
	}
}

func TestFakeStopAndDueAtOnce(t *testing.T) {
	f := NewFake(start)
	var c calls
	stopped := f.AfterFunc(time.Second, c.fn(f, "stopped"))
	made := f.AfterFunc(time.Second, c.fn(f, "made"))
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop of a waiting call: want true once, then false")
	}
	if n := f.Waiters(); n != 1 {
		t.Fatalf("%d waiters after a Stop, want 1", n)
	}
	f.Advance(time.Second)
	if got := c.take(); !slices.Equal(got, []string{"made@1s"}) {
		t.Fatalf("calls %v, want only the one not stopped", got)
	}
	if made.Stop() {
		t.Fatal("Stop of a call made: want false")
	}
	f.AfterFunc(0, c.fn(f, "now"))
	f.AfterFunc(-time.Second, c.fn(f, "past"))
	if got := c.take(); !slices.Equal(got, []string{"now@1s", "past@1s"}) || f.Waiters() != 0 {
		t.Fatalf("calls %v and %d waiters for d <= 0, want both made at once", got, f.Waiters())
	}
}

// TestFakeConcurrentUse: calls scheduled, stopped and made from several
// goroutines at once are each either stopped or made, once.
func TestFakeConcurrentUse(t *testing.T) {
	f := NewFake(start)
	var (
		mu            sync.Mutex
		made, stopped int
		wg            sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for i := range 200 {
				timer := f.AfterFunc(time.Duration(i%7+1)*time.Millisecond, func() {
					mu.Lock()
					made++
					mu.Unlock()
				})
				if i%3 == 0 && timer.Stop() {
					mu.Lock()
					stopped++
					mu.Unlock()
				}
			}
		})
		wg.Go(func() {
			for range 200 {
				f.Advance(time.Millisecond)
				_ = f.Waiters()
			}
		})
	}
	wg.Wait()
	f.Advance(time.Second)
	if f.Waiters() != 0 || made+stopped != 4*200 {
		t.Fatalf("%d waiters, %d calls made and %d stopped; want 0 waiting and %d in all", f.Waiters(), made, stopped, 4*200)
	}
}

func TestSystemAfterFunc(t *testing.T) {
	fired := make(chan struct{})
	System().AfterFunc(time.Millisecond, func() { close(fired) })
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the system clock's AfterFunc made no call")
	}
	timer := System().AfterFunc(time.Hour, func() { t.Error("a stopped call was made") })
	if !timer.Stop() {
		t.Fatal("Stop of a waiting system call: want true")
	}
}
