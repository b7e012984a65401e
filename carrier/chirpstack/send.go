package chirpstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	lost := item.ExpiresAt != nil && mayHaveQueued(m)
	if m.ExternalID != "" || lost {
		items, err := c.getQueue(ctx, o.devEUI)
		if err != nil {
			return herald.SendResult{}, err
		}
		if id := queuedItem(items, m.ExternalID, item, lost); id != "" {
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
		if answerLost(err) {
			return herald.SendResult{}, fmt.Errorf("%w%s", callError("Enqueue", o.devEUI, err), mayBeQueued)
		}
		return herald.SendResult{}, callError("Enqueue", o.devEUI, err)
	}
	if resp.GetId() == "" {
		// The item is queued but cannot be followed; sending again would
		// queue it twice.
		return herald.SendResult{}, herald.Permanent(errors.New("chirpstack: Enqueue accepted the item but returned no queue item id"))
	}
	return herald.SendResult{ExternalID: resp.GetId(), Answer: codeName(codes.OK)}, nil
}

// queuedItem returns the id of the untransmitted item of items that an
// earlier attempt of a message queued, "" for none: the item whose id is
// the message's external id; else, when an earlier Enqueue of the message
// may have queued an item herald does not know of (lost: mayHaveQueued)
// and item, the one the message would queue now, has an expiry, an item
// equal to it. ChirpStack assigns the ids, so that item is known by its
// contents only; the expiry, the message's own, sets it apart from the
// device's other items but an identical downlink with the same expiry
// (see the package comment).
func queuedItem(items []*api.DeviceQueueItem, externalID string, item *api.DeviceQueueItem, lost bool) string {
	if externalID != "" {
		for _, it := range items {
			if it.GetId() == externalID && !it.GetIsPending() {
				return externalID
			}
		}
	}
	if !lost || item.GetExpiresAt() == nil {
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

// mayBeQueued ends the error of an Enqueue whose outcome is unknown: the
// message's retry, which finds it in the message's last error, looks for
// the item that Enqueue may have queued (mayHaveQueued).
const mayBeQueued = " (ChirpStack may have queued the item: the retry looks for it)"

// answerLost reports whether err, from an Enqueue, leaves its outcome
// unknown: the call ran out of time or was cancelled, or the connection
// failed, which may happen after ChirpStack queued the item. ChirpStack's
// own refusals (a status it sent) queued nothing.
func answerLost(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return true
	}
	switch st.Code() {
	case codes.DeadlineExceeded, codes.Canceled, codes.Unavailable, codes.Unknown:
		return true
	}
	return false
}

// mayHaveQueued reports whether an earlier Enqueue of m may have queued an
// item herald does not know of: its answer was lost (mayBeQueued), or it
// did not answer before the accept deadline (herald.IsAcceptTimeout: the
// call hung, or herald stopped during it).
func mayHaveQueued(m *herald.Message) bool {
	return strings.HasSuffix(m.LastError, mayBeQueued) || herald.IsAcceptTimeout(m.LastError)
}
