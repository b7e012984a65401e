package herald_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// spanKey marks a context that a fakeTracer's Call returned.
type spanKey struct{}

// parentKey holds the trace context a fakeTracer's TraceParent finds.
type parentKey struct{}

// fakeTracer records what the engine tells its Tracer: each Call as
// "op attempt parent -> outcome to err", and each Sent.
type fakeTracer struct {
	mu    sync.Mutex
	calls []string
	sent  []string
}

func (f *fakeTracer) TraceParent(ctx context.Context) string {
	p, _ := ctx.Value(parentKey{}).(string)
	return p
}

func (f *fakeTracer) Sent(_ context.Context, m *herald.Message, created bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, fmt.Sprintf("%s %v", m.ID, created))
}

func (f *fakeTracer) Call(ctx context.Context, op string, m *herald.Message) (context.Context, func(string, herald.Status, error)) {
	start := fmt.Sprintf("%s %d %s", op, m.Attempt, m.TraceParent)
	return context.WithValue(ctx, spanKey{}, op), func(outcome string, to herald.Status, err error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, fmt.Sprintf("%s -> %s %s %v", start, outcome, to, err))
	}
}

func (f *fakeTracer) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// spanCarrier is a pull and push carrier that checks it is called within
// its call's span, fails its first send, then polls "pending" and
// "succeeded", and says its queue still holds the message.
type spanCarrier struct {
	path    herald.Path
	mu      sync.Mutex
	sends   int
	polls   int
	outside []string // calls made without their span's context
}

func (c *spanCarrier) within(ctx context.Context, op string) {
	if got, _ := ctx.Value(spanKey{}).(string); got != op {
		c.outside = append(c.outside, op)
	}
}

func (c *spanCarrier) Path() herald.Path              { return c.path }
func (c *spanCarrier) Validate(*herald.Message) error { return nil }
func (c *spanCarrier) Send(ctx context.Context, _ *herald.Message) (herald.SendResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.within(ctx, herald.CallSend)
	if c.sends++; c.sends == 1 {
		return herald.SendResult{}, errors.New("busy")
	}
	return herald.SendResult{ExternalID: "task-1"}, nil
}
func (c *spanCarrier) Poll(ctx context.Context, _ *herald.Message) (herald.PollResult, map[string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.within(ctx, herald.CallPoll)
	if c.polls++; c.polls == 1 {
		return herald.PollPending, nil, nil
	}
	return herald.PollSucceeded, nil, nil
}
func (c *spanCarrier) StillQueued(ctx context.Context, _ *herald.Message) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.within(ctx, herald.CallQueueCheck)
	return true, nil
}

// TestTracerFollowsAPullMessage: Send keeps the trace context of its
// context with the message and tells the Tracer which message it stored;
// every carrier call, the failed send, its retry and the polls, is a
// call of the Tracer, with the message's trace context and attempt, what
// it came to, and the carrier called within it.
func TestTracerFollowsAPullMessage(t *testing.T) {
	tr := &fakeTracer{}
	c := &spanCarrier{path: herald.PathPull}
	p, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
	p.Retry = herald.RetryPolicy{Kind: herald.RetryConstant, Base: time.Second}
	r := newRigWith(t, func(cfg *herald.Config) { cfg.Tracer = tr }, []herald.Route{{Name: "meters", Carrier: c, Policy: p}})
	r.start()
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	m, created, err := r.eng.Send(context.WithValue(context.Background(), parentKey{}, parent), "acme",
		herald.SendRequest{Route: "meters", Target: "m1", Text: "reading"})
	if err != nil || !created {
		t.Fatal(created, err)
	}
	if got := r.get(m.ID).TraceParent; got != parent {
		t.Errorf("stored TraceParent %q, want %q", got, parent)
	}
	r.advance(0)
	r.advance(time.Second)
	r.advance(10 * time.Second)
	r.advance(10 * time.Second)
	if got := r.get(m.ID); got.Status != herald.StatusDeliverySuccessful {
		t.Fatalf("message %s, want DELIVERY_SUCCESSFUL", got.Status)
	}
	want := []string{
		"send 1 " + parent + " -> retry TO_RETRY busy",
		"send 2 " + parent + " -> accepted DELIVERED_TO_NS <nil>",
		"poll 2 " + parent + " -> pending  <nil>",
		"poll 2 " + parent + " -> succeeded DELIVERY_SUCCESSFUL <nil>",
	}
	if got := tr.took(); !slices.Equal(got, want) {
		t.Errorf("calls:\n%q\nwant\n%q", got, want)
	}
	if len(tr.sent) != 1 || tr.sent[0] != m.ID+" true" {
		t.Errorf("Sent told %q, want %s true", tr.sent, m.ID)
	}
	if len(c.outside) > 0 {
		t.Errorf("carrier called outside its span: %v", c.outside)
	}
}

// TestTracerSeesQueueChecks: a queue check of a push carrier is a call of
// the Tracer too.
func TestTracerSeesQueueChecks(t *testing.T) {
	tr := &fakeTracer{}
	c := &spanCarrier{path: herald.PathPush, sends: 1}
	p, _ := herald.ProfilePolicy(herald.ProfileLoRaWAN)
	p.Timeouts.Carrier = time.Minute
	r := newRigWith(t, func(cfg *herald.Config) { cfg.Tracer = tr }, []herald.Route{{Name: "lora", Carrier: c, Policy: p}})
	r.start()
	m := r.send(herald.SendRequest{Route: "lora", Target: "dev", Text: "on"})
	r.advance(0)
	r.advance(time.Minute)
	if got := r.get(m.ID); got.Status != herald.StatusDeliveredToNS {
		t.Fatalf("message %s, want DELIVERED_TO_NS, its deadline extended", got.Status)
	}
	want := []string{"send 1  -> accepted DELIVERED_TO_NS <nil>", "check_queue 1  -> queued  <nil>"}
	if got := tr.took(); !slices.Equal(got, want) {
		t.Errorf("calls:\n%q\nwant\n%q", got, want)
	}
	if len(c.outside) > 0 {
		t.Errorf("carrier called outside its span: %v", c.outside)
	}
}

// TestNoTracerNoTraceParent: without a Tracer, Send keeps no trace
// context, whatever its context holds.
func TestNoTracerNoTraceParent(t *testing.T) {
	c := &spanCarrier{path: herald.PathPull}
	p, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
	r := newRig(t, []herald.Route{{Name: "meters", Carrier: c, Policy: p}})
	m, _, err := r.eng.Send(context.WithValue(context.Background(), parentKey{}, "00-x"), "acme",
		herald.SendRequest{Route: "meters", Target: "m1", Text: "reading"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.get(m.ID).TraceParent; got != "" {
		t.Errorf("stored TraceParent %q, want none", got)
	}
}

// TestRoomDeliveriesContinueThePublishersTrace: each delivery of a
// published event keeps the trace context of the publish request, so its
// pushes are in the publisher's trace.
func TestRoomDeliveriesContinueThePublishersTrace(t *testing.T) {
	tracer := &fakeTracer{}
	r := newRigWith(t, func(c *herald.Config) {
		c.Routes = append(c.Routes, roomRoute(t, c.Store))
		c.Tracer = tracer
	}, nil)
	r.createRoom(herald.RoomRequest{Name: "orders"})
	sub := r.subscribe("orders", herald.SubscriptionRequest{Type: herald.SubscriptionPull})
	ctx := context.WithValue(context.Background(), parentKey{}, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	ev, err := r.eng.Publish(ctx, "acme", "orders", herald.PublishRequest{Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if m := r.get(delivery(t, ev, sub.ID)); m.TraceParent != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Fatalf("delivery's trace context %q, want the publish request's", m.TraceParent)
	}
}
