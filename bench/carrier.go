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
	latency   time.Duration
	failFirst bool

	mu    sync.Mutex
	sends map[string]int
}

func newCarrier(latency time.Duration, failFirst bool) *carrier {
	return &carrier{latency: latency, failFirst: failFirst, sends: make(map[string]int)}
}

func (c *carrier) Path() herald.Path              { return herald.PathDirect }
func (c *carrier) Validate(*herald.Message) error { return nil }

func (c *carrier) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	if c.latency > 0 {
		t := time.NewTimer(c.latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return herald.SendResult{}, ctx.Err()
		}
	}
	c.mu.Lock()
	c.sends[m.ID]++
	n := c.sends[m.ID]
	c.mu.Unlock()
	if c.failFirst && n == 1 {
		return herald.SendResult{}, errors.New("bench: first attempt fails")
	}
	return herald.SendResult{}, nil
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
