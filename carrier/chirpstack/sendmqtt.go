package chirpstack

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/chirpstack/chirpstack/api/go/v4/integration"
	"github.com/heraldmq/herald"
)

// CommandTopic returns the MQTT topic ChirpStack takes a device's downlink
// commands from (its default command_topic template, command "down").
func CommandTopic(applicationID, devEUI string) string {
	return "application/" + applicationID + "/device/" + devEUI + "/command/down"
}

// publishDown sends m as a downlink command with m's id as the queue item
// id, at QoS 1, and returns once the broker acknowledged it.
func (c *Carrier) publishDown(ctx context.Context, m *herald.Message, o options) (herald.SendResult, error) {
	id, ok := parseUUID(m.ID)
	if !ok {
		return herald.SendResult{}, herald.Permanent(fmt.Errorf("chirpstack: message id %q is not a UUID, which a queue item id must be", clip(m.ID)))
	}
	cmd := &integration.DownlinkCommand{
		Id:        id,
		DevEui:    o.devEUI,
		Confirmed: o.confirmed,
		FPort:     o.fPort,
		Data:      m.Payload,
		ExpiresAt: expiresAt(m),
	}
	var body []byte
	var err error
	if c.mqtt.Protobuf {
		body, err = proto.Marshal(cmd)
	} else {
		body, err = protojson.Marshal(cmd)
	}
	if err != nil {
		return herald.SendResult{}, herald.Permanent(fmt.Errorf("chirpstack: encode the downlink command: %w", err))
	}
	cl, err := c.publisherClient(ctx)
	if err != nil {
		return herald.SendResult{}, err
	}
	topic := CommandTopic(c.mqtt.ApplicationID, o.devEUI)
	if err := waitToken(ctx, cl.Publish(topic, 1, false, body)); err != nil {
		return herald.SendResult{}, fmt.Errorf("chirpstack: publish on %s: %w", topic, err)
	}
	return herald.SendResult{ExternalID: id}, nil
}
