package chirpstack

import (
	"context"
	"errors"

	"github.com/chirpstack/chirpstack/api/go/v4/api"
	"github.com/heraldmq/herald"
)

// errNoServer is StillQueued's answer without a gRPC server: permanent,
// since no later check can answer either.
var errNoServer = herald.Permanent(errors.New("chirpstack: no gRPC server configured: cannot ask ChirpStack's device queue"))

// StillQueued reports whether ChirpStack still holds the queue item of m
// (m.ExternalID) in its device's queue: waiting for a transmission, or
// transmitted and pending the device's acknowledgement. The reaper then
// extends m's DELIVERED_TO_NS deadline instead of retrying it.
func (c *Carrier) StillQueued(ctx context.Context, m *herald.Message) (bool, error) {
	if m.ExternalID == "" {
		return false, nil
	}
	if c.devices == nil {
		return false, errNoServer
	}
	eui, ok := parseDevEUI(m.Target)
	if !ok {
		return false, herald.Invalid("target", "%q is not a DevEUI", clip(m.Target))
	}
	items, err := c.getQueue(ctx, eui)
	if err != nil {
		return false, err
	}
	for _, it := range items {
		if it.GetId() == m.ExternalID {
			return true, nil
		}
	}
	return false, nil
}

// getQueue lists a device's queue by api.DeviceService/GetQueue.
func (c *Carrier) getQueue(ctx context.Context, devEUI string) ([]*api.DeviceQueueItem, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	resp, err := c.devices.GetQueue(c.authorized(ctx), &api.GetDeviceQueueItemsRequest{DevEui: devEUI})
	if err != nil {
		return nil, callError("GetQueue", devEUI, err)
	}
	return resp.GetResult(), nil
}
