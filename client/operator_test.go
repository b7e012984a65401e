package client_test

import (
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/client"
)

// TestScheduleSendNowCancel: a message sent with SendAt waits scheduled,
// SendNow sends it at once (a second SendNow is a conflict), and
// CancelMessages cancels the route's waiting messages and counts them;
// every attempt's answer is in the timeline the client reads.
func TestScheduleSendNowCancel(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)
	later := send(t, c, client.SendRequest{Route: routeHooks, Text: "later", SendAt: time.Now().Add(time.Hour)})
	x, err := c.Explain(ctx, later.ID)
	if err != nil || x.Reason != "scheduled" {
		t.Fatalf("explain a scheduled message: %+v, %v; want scheduled", x, err)
	}
	if _, err := c.SendNow(ctx, later.ID); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, later.ID, herald.StatusDeliverySuccessful)
	if last := got.Timeline[len(got.Timeline)-1]; last.Answer != "204" {
		t.Errorf("the accepted send's entry %+v, want answer 204", last)
	}
	if _, err := c.SendNow(ctx, later.ID); !client.IsConflict(err) {
		t.Errorf("send-now of a delivered message: %v, want a conflict", err)
	}

	for range 2 {
		send(t, c, client.SendRequest{Route: routeHooks, Text: "cancel me", SendAt: time.Now().Add(time.Hour)})
	}
	n, err := c.CancelMessages(ctx, client.CancelFilter{Route: routeHooks, Status: herald.StatusQueued})
	if err != nil || n != 2 {
		t.Errorf("CancelMessages = %d, %v; want 2", n, err)
	}
	if _, err := c.CancelMessages(ctx, client.CancelFilter{}); err == nil {
		t.Error("CancelMessages without a route succeeded")
	}
}
