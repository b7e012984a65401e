package herald_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
)

// downlinks is a push carrier (a network server) that records when each
// send came, by its clock, and answers each with err (nil accepts it).
type downlinks struct {
	clock *clock.Fake
	err   error

	mu    sync.Mutex
	sends []time.Time
	sent  []*herald.Message
}

func (d *downlinks) Path() herald.Path              { return herald.PathPush }
func (d *downlinks) Validate(*herald.Message) error { return nil }
func (d *downlinks) Send(_ context.Context, m *herald.Message) (herald.SendResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sends = append(d.sends, d.clock.Now())
	d.sent = append(d.sent, m)
	return herald.SendResult{ExternalID: "item-" + m.ID}, d.err
}

// since returns the times of the sends since t.
func (d *downlinks) since(t time.Time) []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []time.Duration
	for _, s := range d.sends {
		out = append(out, s.Sub(t))
	}
	return out
}

// classcRig is a rig with one classc route, "displays", of a downlinks
// carrier answering err.
func classcRig(t *testing.T, err error, adjust func(*herald.Policy)) (*rig, *downlinks) {
	t.Helper()
	p, _ := herald.ProfilePolicy(herald.ProfileClassC)
	if adjust != nil {
		adjust(&p)
	}
	d := &downlinks{err: err}
	r := newRig(t, []herald.Route{{Name: "displays", Carrier: d, Policy: p}})
	d.clock = r.clock
	return r, d
}

// TestClassCRetryTable: a downlink the network server keeps refusing is
// sent 6 times, retried after 2, 4, 8, 16 and 32 s (at 0, 2, 6, 14, 30
// and 62 s), then dead-lettered.
func TestClassCRetryTable(t *testing.T) {
	r, d := classcRig(t, errors.New("network server unavailable"), nil)
	r.start()
	m := r.send(herald.SendRequest{Route: "displays", Target: "202020390c0e0902", Payload: []byte{0xff, 0, 0, 0x64}})
	r.settle()
	want := []time.Duration{0, 2 * time.Second, 6 * time.Second, 14 * time.Second, 30 * time.Second, 62 * time.Second}
	for i := 1; i < len(want); i++ {
		if got := r.get(m.ID); got.Status != herald.StatusToRetry {
			t.Fatalf("after send %d: %s, want TO_RETRY", i, got.Status)
		}
		r.advance(want[i] - want[i-1])
	}
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveryFailed || got.Attempt != 6 || !strings.Contains(got.Timeline[len(got.Timeline)-1].Reason, "6 of 6 attempts") {
		t.Fatalf("after the last send: %s at attempt %d (%q), want DELIVERY_FAILED after 6", got.Status, got.Attempt, got.Timeline[len(got.Timeline)-1].Reason)
	}
	r.advance(time.Hour)
	if sends := d.since(t0); !slices.Equal(sends, want) {
		t.Fatalf("sends at %v, want at %v", sends, want)
	}
}

// TestClassCCoalescesByTarget: three commands for one device queued while
// its gateway's bucket is empty end in one send, the newest; the older
// two end CANCELLED "coalesced". A command naming its own coalesce key
// keeps it, and a route with coalescing off sends each command.
func TestClassCCoalescesByTarget(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "default", false: "coalesce off"}[on], func(t *testing.T) {
			var off func(*herald.Policy) // the profile's default: on
			if !on {
				off = func(p *herald.Policy) { p.CoalesceByTarget = false } // coalesce: false
			}
			r, d := classcRig(t, nil, off)
			r.start()
			send := func(target string, payload byte) *herald.Message {
				return r.send(herald.SendRequest{Route: "displays", Target: target, Lane: "gw-1", Payload: []byte{payload}})
			}
			for i := range 30 { // the gateway's bucket: 30 a minute
				send(fmt.Sprintf("%016x", i), 1)
			}
			r.settle()
			cmds := []*herald.Message{send("202020390c0e0902", 0xa), send("202020390c0e0902", 0xb), send("202020390c0e0902", 0xc)}
			own := r.send(herald.SendRequest{Route: "displays", Target: "202020390c0e0902", Lane: "gw-1", Payload: []byte{0xd}, CoalesceKey: "mine"})
			r.advance(time.Minute)
			var sent []byte
			d.mu.Lock()
			for _, m := range d.sent[30:] {
				sent = append(sent, m.Payload[0])
			}
			d.mu.Unlock()
			slices.Sort(sent) // sends run at once: their order is not the claims'
			want := []byte{0xc, 0xd}
			if !on {
				want = []byte{0xa, 0xb, 0xc, 0xd}
			}
			if !slices.Equal(sent, want) {
				t.Fatalf("sent %x for the device, want %x", sent, want)
			}
			for _, m := range cmds[:2] {
				got := r.get(m.ID)
				if on && (got.Status != herald.StatusCancelled || got.Timeline[len(got.Timeline)-1].Reason != "coalesced") {
					t.Errorf("an older command: %s, want CANCELLED \"coalesced\"", got.Status)
				}
			}
			if got := r.get(own.ID); got.Status != herald.StatusDeliveredToNS {
				t.Errorf("the command with its own key: %s, want it sent", got.Status)
			}
		})
	}
}
