package chirpstack

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chirpstack/chirpstack/api/go/v4/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/heraldmq/herald"
	csim "github.com/heraldmq/herald/sim/chirpstack"
)

// TestSendGRPC enqueues over real gRPC: ChirpStack's id is the external id,
// GetQueue lists it until the simulator transmits it.
func TestSendGRPC(t *testing.T) {
	s := startSim(t, simConfig())
	c := newCarrier(t, Config{Server: s.Addr(), Token: token})
	m := message(strings.ToUpper(devA), []byte{1, 2, 3}, map[string]string{"f_port": "10", "confirmed": "false"})
	m.ExpiresAt = time.Now().Add(time.Hour)
	res, err := c.Send(ctxT(t), m)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	items := s.Enqueued()
	if len(items) != 1 || items[0].ID != res.ExternalID {
		t.Fatalf("enqueued %+v; want one item with id %q", items, res.ExternalID)
	}
	it := items[0]
	if it.DevEUI != devA || it.FPort != 10 || it.Confirmed || string(it.Data) != "\x01\x02\x03" ||
		!it.ExpiresAt.Equal(m.ExpiresAt.Truncate(time.Microsecond)) {
		t.Errorf("item %+v; want devA, FPort 10, unconfirmed, 010203, expiring at %v", it, m.ExpiresAt)
	}
	m.ExternalID = res.ExternalID
	if q, err := c.StillQueued(ctxT(t), m); err != nil || !q {
		t.Fatalf("StillQueued before transmission: %v, %v; want true", q, err)
	}

	// The device's uplink opens its receive window: the item goes.
	if _, err := s.Uplink(devA, 1, nil); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, func(e csim.Event) bool { return e.Type == EventTxAck && e.QueueItemID == res.ExternalID })
	if q, err := c.StillQueued(ctxT(t), m); err != nil || q {
		t.Fatalf("StillQueued after transmission: %v, %v; want false", q, err)
	}
}

// TestSendDefaults: f_port 1, confirmed, no expiry.
func TestSendDefaults(t *testing.T) {
	s := startSim(t, simConfig())
	c := newCarrier(t, Config{Server: s.Addr(), Token: token})
	if _, err := c.Send(ctxT(t), message(devA, []byte{9}, nil)); err != nil {
		t.Fatal(err)
	}
	it := s.Enqueued()[0]
	if it.FPort != DefaultFPort || !it.Confirmed || !it.ExpiresAt.IsZero() {
		t.Errorf("item %+v; want FPort 1, confirmed, no expiry", it)
	}
}

// TestSendRetryTakesQueuedItem: a retry whose earlier item is still
// waiting takes it over; one whose item went enqueues anew.
func TestSendRetryTakesQueuedItem(t *testing.T) {
	s := startSim(t, simConfig())
	c := newCarrier(t, Config{Server: s.Addr(), Token: token})
	m := message(devA, []byte{1}, map[string]string{"confirmed": "false"})
	first, err := c.Send(ctxT(t), m)
	if err != nil {
		t.Fatal(err)
	}
	m.ExternalID = first.ExternalID
	again, err := c.Send(ctxT(t), m)
	if err != nil || again.ExternalID != first.ExternalID || len(s.Enqueued()) != 1 {
		t.Fatalf("retry: %+v, %v, %d items; want the first item taken over", again, err, len(s.Enqueued()))
	}
	if _, err := s.Uplink(devA, 1, nil); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, func(e csim.Event) bool { return e.Type == EventTxAck })
	third, err := c.Send(ctxT(t), m)
	if err != nil || third.ExternalID == first.ExternalID || len(s.Enqueued()) != 2 {
		t.Fatalf("retry after transmission: %+v, %v, %d items; want a new item", third, err, len(s.Enqueued()))
	}
}

// failEnqueues passes every call to ChirpStack but fails the first n
// Enqueues: with lost, ChirpStack queues the item and the answer is lost
// (the connection drops); otherwise ChirpStack refuses it (Internal) and
// queues nothing.
type failEnqueues struct {
	api.DeviceServiceClient
	n    int
	lost bool
}

func (f *failEnqueues) Enqueue(ctx context.Context, in *api.EnqueueDeviceQueueItemRequest, opts ...grpc.CallOption) (*api.EnqueueDeviceQueueItemResponse, error) {
	if f.n == 0 {
		return f.DeviceServiceClient.Enqueue(ctx, in, opts...)
	}
	f.n--
	if !f.lost {
		return nil, status.Error(codes.Internal, "database error")
	}
	if _, err := f.DeviceServiceClient.Enqueue(ctx, in, opts...); err != nil {
		return nil, err
	}
	return nil, status.Error(codes.Unavailable, "error reading from server: EOF")
}

// TestSendRetryAfterLostAnswer: an Enqueue whose answer was lost queued
// its item; the message's retry takes that item over (it has the same
// contents and the message's own expiry) when ChirpStack has not sent it
// yet, and so does the retry of a send that outlived its accept timeout.
// Without an expiry, once the item went, or after ChirpStack refused the
// Enqueue, the retry queues anew, even beside an item just like its own.
func TestSendRetryAfterLostAnswer(t *testing.T) {
	expires := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name      string
		refused   bool          // the first Enqueue is refused, not lost
		lastError string        // in place of the first Send's error
		expires   time.Time     // the message's
		other     time.Duration // another message's item, alike but for its expiry (this much later), is queued first; -1 for none
		transmit  bool          // the device takes the lost item before the retry
		items     int           // queued in the end
		takeOver  bool          // the retry takes the item of the first Enqueue
	}{
		{name: "taken over", expires: expires, other: -1, items: 1, takeOver: true},
		{name: "taken over, not the look-alike", expires: expires, other: time.Millisecond, items: 2, takeOver: true},
		{name: "accept timeout", lastError: herald.AcceptTimeoutError, expires: expires, other: -1, items: 1, takeOver: true},
		{name: "no expiry", other: -1, items: 2},
		{name: "already sent", expires: expires, other: -1, transmit: true, items: 2},
		{name: "refused, beside an item just like it", refused: true, expires: expires, other: 0, items: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, simConfig())
			c := newCarrier(t, Config{Server: s.Addr(), Token: token})
			if tc.other >= 0 {
				other := message(devA, []byte{7, 7}, map[string]string{"f_port": "5"})
				other.ID, other.ExpiresAt, other.Attempt = "01980c3e-5b2a-7c41-8d2e-000000000001", expires.Add(tc.other), 1
				if _, err := c.Send(ctxT(t), other); err != nil {
					t.Fatal(err)
				}
			}
			before := len(s.Enqueued())
			c.devices = &failEnqueues{DeviceServiceClient: c.devices, n: 1, lost: !tc.refused}
			m := message(devA, []byte{7, 7}, map[string]string{"f_port": "5"})
			m.ExpiresAt, m.Attempt = tc.expires, 1
			_, err := c.Send(ctxT(t), m)
			if err == nil || isPermanent(err) || strings.Contains(err.Error(), mayBeQueued) == tc.refused {
				t.Fatalf("first Send: %v; want a transient error, saying the item may be queued: %v", err, !tc.refused)
			}
			m.Attempt, m.LastError = 2, err.Error()
			if tc.lastError != "" {
				m.LastError = tc.lastError
			}
			var first string // the item of the first Enqueue
			if len(s.Enqueued()) > before {
				first = s.Enqueued()[before].ID
			}
			if tc.transmit {
				if _, err := s.Uplink(devA, 1, nil); err != nil {
					t.Fatal(err)
				}
				waitEvent(t, s, func(e csim.Event) bool { return e.Type == EventTxAck && e.QueueItemID == first })
			}
			res, err := c.Send(ctxT(t), m)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if got := len(s.Enqueued()); got != tc.items || (first != "" && res.ExternalID == first) != tc.takeOver {
				t.Fatalf("retry: external id %q, %d items queued; want %d, the first Enqueue's item %q taken over: %v", res.ExternalID, got, tc.items, first, tc.takeOver)
			}
		})
	}
}

// TestSendErrors classifies ChirpStack's refusals.
func TestSendErrors(t *testing.T) {
	const unknown = "ffffffffffffffff"
	for _, tc := range []struct {
		name      string
		unknown   csim.UnknownDevice
		token     string
		dev       string
		permanent bool
		want      string
	}{
		{"bad token", "", "bad-token-7f3a", devA, true, "Unauthenticated"},
		{"unknown device", csim.UnknownDeviceNotFound, token, unknown, true, "NotFound"},
		{"unknown device, admin key", csim.UnknownDeviceAdminKey, token, unknown, true, "no such device"},
		{"unknown device, tenant key", csim.UnknownDeviceTenantKey, token, unknown, true, "Unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := simConfig()
			cfg.UnknownDevice = tc.unknown
			s := startSim(t, cfg)
			c := newCarrier(t, Config{Server: s.Addr(), Token: tc.token})
			_, err := c.Send(ctxT(t), message(tc.dev, []byte{1}, nil))
			if err == nil || isPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Send: %v (permanent %v); want %q, permanent %v", err, isPermanent(err), tc.want, tc.permanent)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Errorf("the error %q quotes the token", err)
			}
			m := message(tc.dev, []byte{1}, nil)
			m.ExternalID = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
			if _, err := c.StillQueued(ctxT(t), m); tc.unknown != csim.UnknownDeviceAdminKey && !isPermanent(err) {
				t.Errorf("StillQueued: %v; want a permanent error", err)
			}
		})
	}
}

// TestSendInvalid: a message Validate refuses fails permanently.
func TestSendInvalid(t *testing.T) {
	c := newCarrier(t, Config{Server: "127.0.0.1:1", Token: token})
	_, err := c.Send(ctxT(t), message(devA, []byte{1}, map[string]string{"f_port": "0"}))
	var inv *herald.InvalidError
	if !isPermanent(err) || !errorsAs(err, &inv) || inv.Field != "params.f_port" {
		t.Fatalf("Send: %v; want a permanent InvalidError for params.f_port", err)
	}
}

// TestSendUnavailable: a server that does not answer is a transient error.
func TestSendUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newCarrier(t, Config{Server: addr, Token: token})
	_, err = c.Send(ctxT(t), message(devA, []byte{1}, nil))
	if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "Unavailable") {
		t.Fatalf("Send: %v; want a transient Unavailable", err)
	}
	m := message(devA, []byte{1}, nil)
	m.ExternalID = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
	if q, err := c.StillQueued(ctxT(t), m); q || err == nil || isPermanent(err) {
		t.Fatalf("StillQueued: %v, %v; want a transient error", q, err)
	}
}

// TestStillQueuedWithoutItem: no external id, nothing to ask; no server,
// an error.
func TestStillQueuedWithoutItem(t *testing.T) {
	c := newCarrier(t, Config{Send: SendMQTT, MQTT: &MQTTConfig{URL: "tcp://127.0.0.1:1", ApplicationID: csim.DefaultApplicationID}})
	m := message(devA, []byte{1}, nil)
	if q, err := c.StillQueued(ctxT(t), m); q || err != nil {
		t.Fatalf("StillQueued without external id: %v, %v; want false, nil", q, err)
	}
	m.ExternalID = msgID
	if _, err := c.StillQueued(ctxT(t), m); err == nil {
		t.Fatal("StillQueued without a gRPC server: nil error")
	}
}
