package chirpstack

import (
	"bytes"
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

// enqueue sends m by api.DeviceService/Enqueue. A retry takes over the
// item an earlier attempt queued, when ChirpStack still holds it
// untransmitted (queuedItem), instead of queueing a second one.
func (c *Carrier) enqueue(ctx context.Context, m *herald.Message, o options) (herald.SendResult, error) {
	item := &api.DeviceQueueItem{
		DevEui:    o.devEUI,
		FPort:     o.fPort,
		Confirmed: o.confirmed,
		Data:      m.Payload,
		ExpiresAt: expiresAt(m),
	}
	if m.ExternalID != "" || (m.Attempt > 1 && item.ExpiresAt != nil) {
		items, err := c.getQueue(ctx, o.devEUI)
		if err != nil {
			return herald.SendResult{}, err
		}
		if id := queuedItem(items, m.ExternalID, item); id != "" {
			if id != m.ExternalID {
				c.log.Info("chirpstack: took over the queue item of an earlier Enqueue whose answer was lost",
					"message", m.ID, "attempt", m.Attempt, "dev_eui", o.devEUI, "queue_item", id)
			}
			return herald.SendResult{ExternalID: id}, nil
		}
	}
	req := &api.EnqueueDeviceQueueItemRequest{QueueItem: item}
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

// queuedItem returns the id of the untransmitted item of items that an
// earlier attempt of a message queued, "" for none: the item whose id is
// the message's external id, else, when item (the one the message would
// queue now) has an expiry, an item equal to it. The second is the item
// of an Enqueue whose answer was lost (a timeout, a dropped connection):
// ChirpStack queued it but herald never learnt its id, and ChirpStack
// assigns the id, so the item is known only by its contents. The expiry
// is the message's own, to the microsecond, which sets it apart from the
// device's other items.
func queuedItem(items []*api.DeviceQueueItem, externalID string, item *api.DeviceQueueItem) string {
	for _, it := range items {
		if !it.GetIsPending() && externalID != "" && it.GetId() == externalID {
			return externalID
		}
	}
	if item.GetExpiresAt() == nil {
		return ""
	}
	for _, it := range items {
		if !it.GetIsPending() && it.GetFPort() == item.GetFPort() && it.GetConfirmed() == item.GetConfirmed() &&
			bytes.Equal(it.GetData(), item.GetData()) && it.GetExpiresAt().AsTime().Equal(item.GetExpiresAt().AsTime()) {
			return it.GetId()
		}
	}
	return ""
}
