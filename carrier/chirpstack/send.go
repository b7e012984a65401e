package chirpstack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chirpstack/chirpstack/api/go/v4/api"
	"github.com/heraldmq/herald"
)

// Send hands m to ChirpStack: by gRPC Enqueue (SendGRPC) or as an MQTT
// downlink command (SendMQTT). ctx carries the accept deadline. The
// result's ExternalID is the queue item's id. A message that fails
// Validate is a permanent error.
func (c *Carrier) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	o, err := readOptions(m)
	if err != nil {
		return herald.SendResult{}, herald.Permanent(fmt.Errorf("chirpstack: %w", err))
	}
	if c.send == SendMQTT {
		return c.publishDown(ctx, m, o)
	}
	return c.enqueue(ctx, m, o)
}

// expiresAt is the queue item's expires_at: the message's ExpiresAt, nil
// when it has none (see the package comment).
func expiresAt(m *herald.Message) *timestamppb.Timestamp {
	if m.ExpiresAt.IsZero() {
		return nil
	}
	return timestamppb.New(m.ExpiresAt.Truncate(time.Microsecond))
}

// enqueue sends m by api.DeviceService/Enqueue. A retry whose earlier item
// (m.ExternalID) ChirpStack still holds untransmitted takes that item over.
func (c *Carrier) enqueue(ctx context.Context, m *herald.Message, o options) (herald.SendResult, error) {
	if m.ExternalID != "" {
		items, err := c.getQueue(ctx, o.devEUI)
		if err != nil {
			return herald.SendResult{}, err
		}
		for _, it := range items {
			if it.GetId() == m.ExternalID && !it.GetIsPending() {
				return herald.SendResult{ExternalID: m.ExternalID}, nil
			}
		}
	}
	req := &api.EnqueueDeviceQueueItemRequest{QueueItem: &api.DeviceQueueItem{
		DevEui:    o.devEUI,
		FPort:     o.fPort,
		Confirmed: o.confirmed,
		Data:      m.Payload,
		ExpiresAt: expiresAt(m),
	}}
	ctx, cancel := callContext(ctx)
	defer cancel()
	resp, err := c.devices.Enqueue(c.authorized(ctx), req)
	if err != nil {
		return herald.SendResult{}, callError("Enqueue", o.devEUI, err)
	}
	if resp.GetId() == "" {
		// The item is queued but cannot be followed; sending again would
		// queue it twice.
		return herald.SendResult{}, herald.Permanent(errors.New("chirpstack: Enqueue accepted the item but returned no queue item id"))
	}
	return herald.SendResult{ExternalID: resp.GetId()}, nil
}
