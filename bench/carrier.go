package bench

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/heraldmq/herald"
)

// carrier is the in-process carrier of the workloads: it accepts at once or
// after a fixed latency, optionally failing each message's first attempt,
// and counts the sends per message to find duplicates.
type carrier struct {
	latency   *alarm // nil: accepts at once
	failFirst bool

	mu     sync.Mutex
	sends  map[string]int
	waited time.Duration // the sends' time in latency, in all
	waits  int
}

// newCarrier returns a carrier that takes latency for each send; close
// stops it.
func newCarrier(latency time.Duration, failFirst bool) *carrier {
	c := &carrier{failFirst: failFirst, sends: make(map[string]int)}
	if latency > 0 {
		c.latency = newAlarm(latency)
	}
	return c
}

// close stops the carrier's alarm.
func (c *carrier) close() {
	if c.latency != nil {
		c.latency.close()
	}
}

func (c *carrier) Path() herald.Path              { return herald.PathDirect }
func (c *carrier) Validate(*herald.Message) error { return nil }

func (c *carrier) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	var waited time.Duration
	if c.latency != nil {
		start := time.Now()
		if err := c.latency.wait(ctx); err != nil {
			return herald.SendResult{}, err
		}
		waited = time.Since(start)
	}
	c.mu.Lock()
	if waited > 0 {
		c.waited += waited
		c.waits++
	}
	c.sends[m.ID]++
	n := c.sends[m.ID]
	c.mu.Unlock()
	if c.failFirst && n == 1 {
		return herald.SendResult{}, errors.New("bench: first attempt fails")
	}
	return herald.SendResult{}, nil
}

// meanLatency returns the sends' mean time in the latency, as measured.
func (c *carrier) meanLatency() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waits == 0 {
		return 0
	}
	return c.waited / time.Duration(c.waits)
}

// total counts the sends, failed ones included.
func (c *carrier) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, sends := range c.sends {
		n += sends
	}
	return n
}

// duplicates counts successful sends beyond one per message.
func (c *carrier) duplicates() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	dup := 0
	for _, n := range c.sends {
		ok := n
		if c.failFirst {
			ok--
		}
		dup += max(ok-1, 0)
	}
	return dup
}
