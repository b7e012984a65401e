package chirpstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// MQTT timings.
const (
	mqttKeepAlive      = 30 * time.Second
	mqttConnectTimeout = 10 * time.Second
	mqttRetryInterval  = time.Second
	mqttMaxReconnect   = 30 * time.Second
)

// clientOptions are the options every connection of the carrier shares:
// the broker, its credentials, automatic reconnection.
func (c *Carrier) clientOptions(clientID string) *mqtt.ClientOptions {
	m := c.mqtt
	return mqtt.NewClientOptions().
		AddBroker(m.URL).
		SetClientID(clientID).
		SetUsername(m.Username).
		SetPassword(m.Password).
		SetKeepAlive(mqttKeepAlive).
		SetConnectTimeout(mqttConnectTimeout).
		SetAutoReconnect(true).
		SetMaxReconnectInterval(mqttMaxReconnect).
		SetConnectRetryInterval(mqttRetryInterval)
}

// waitToken waits for an MQTT flow to complete, or ctx to end.
func waitToken(ctx context.Context, tok mqtt.Token) error {
	select {
	case <-tok.Done():
		return tok.Error()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errClosed is returned by a send after Close.
var errClosed = errors.New("chirpstack: the carrier is closed")

// publisherClient returns the connection downlink commands are published
// on, connecting it at the first call. It is a clean session of its own,
// with a client id unique to this process: it subscribes to nothing, and
// does not take Listen's session.
func (c *Carrier) publisherClient(ctx context.Context) (mqtt.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if c.publisher != nil {
		return c.publisher, nil
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	cl := mqtt.NewClient(c.clientOptions(c.mqtt.ClientID + "-send-" + hex.EncodeToString(suffix[:])).SetCleanSession(true))
	if err := waitToken(ctx, cl.Connect()); err != nil {
		cl.Disconnect(0)
		return nil, fmt.Errorf("chirpstack: MQTT broker %s: %w", c.mqtt.URL, err)
	}
	c.publisher = cl
	return cl, nil
}
