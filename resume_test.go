package herald_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// partsCarrier delivers a message's text word by word, one call a word,
// and fails the call for the word it is told to, once. It derives the lane
// from the target.
type partsCarrier struct {
	mu       sync.Mutex
	shown    []string // the words delivered, in order, over all sends
	failOnce string
	nextID   int
}

func (c *partsCarrier) Path() herald.Path              { return herald.PathDirect }
func (c *partsCarrier) Validate(*herald.Message) error { return nil }
func (c *partsCarrier) Lane(m *herald.Message) string  { return "chat:" + m.Target }
func (c *partsCarrier) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	return c.SendResumable(ctx, m, func(string) error { return nil })
}

func (c *partsCarrier) SendResumable(_ context.Context, m *herald.Message, progress func(string) error) (herald.SendResult, error) {
	words := strings.Fields(m.Text)
	var ids []string
	if m.ExternalID != "" {
		ids = strings.Split(m.ExternalID, ",")
	}
	for _, w := range words[len(ids):] {
		c.mu.Lock()
		if w == c.failOnce {
			c.failOnce = ""
			c.mu.Unlock()
			return herald.SendResult{}, errors.New("platform hiccup")
		}
		c.shown = append(c.shown, w)
		c.nextID++
		ids = append(ids, strconv.Itoa(c.nextID))
		c.mu.Unlock()
		if err := progress(strings.Join(ids, ",")); err != nil {
			return herald.SendResult{}, err
		}
	}
	return herald.SendResult{ExternalID: strings.Join(ids, ",")}, nil
}

func (c *partsCarrier) delivered() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.shown)
}

// TestResumableSendResumesAfterTheDeliveredParts: a send that fails after 2
// of 3 parts were delivered is retried from the third, so no part is shown
// twice; the progress is the message's ExternalID meanwhile, and the parts'
// ids at the end. The lane comes from the carrier.
func TestResumableSendResumesAfterTheDeliveredParts(t *testing.T) {
	c := &partsCarrier{failOnce: "three"}
	p, _ := herald.ProfilePolicy(herald.ProfileChannel) // first retry after 5 s
	r := newRig(t, []herald.Route{{Name: "chat", Carrier: c, Policy: p}})
	r.start()
	m := r.send(herald.SendRequest{Route: "chat", Target: "42", Text: "one two three"})
	if m.Lane != "chat:42" {
		t.Errorf("lane %q, want the carrier's chat:42", m.Lane)
	}
	r.settle()
	got := r.get(m.ID)
	if got.Status != herald.StatusToRetry || got.ExternalID != "1,2" {
		t.Fatalf("after the failed third part: %s, external id %q; want TO_RETRY with the first two parts' ids", got.Status, got.ExternalID)
	}
	r.advance(5 * time.Second)
	got = r.get(m.ID)
	if got.Status != herald.StatusDeliverySuccessful || got.ExternalID != "1,2,3" {
		t.Fatalf("after the retry: %s, external id %q; want DELIVERY_SUCCESSFUL, 1,2,3", got.Status, got.ExternalID)
	}
	if shown := c.delivered(); !slices.Equal(shown, []string{"one", "two", "three"}) {
		t.Errorf("delivered %v, want each word once, in order", shown)
	}
}
