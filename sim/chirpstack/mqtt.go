package chirpstack

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/chirpstack/chirpstack/api/go/v4/integration"
)

// commandSubscription is the topic filter ChirpStack subscribes to: the
// commands of every application and device.
const commandSubscription = "application/+/device/+/command/+"

// commandTopicRE matches a command topic as ChirpStack's command regex
// does.
var commandTopicRE = regexp.MustCompile(`^application/([\w-]+)/device/(\w+)/command/(\w+)$`)

// connectMQTT connects to the broker and subscribes to the command topics,
// again after every reconnection (as ChirpStack does). It returns once the
// first subscription is acknowledged.
func (s *Sim) connectMQTT() error {
	m := s.cfg.MQTT
	clientID := m.ClientID
	if clientID == "" {
		clientID = fmt.Sprintf("%x", s.idRng.Uint64())
	}
	subscribed := make(chan error, 1)
	var once sync.Once
	opts := mqtt.NewClientOptions().
		AddBroker(m.Server).
		SetClientID(clientID).
		SetUsername(m.Username).
		SetPassword(m.Password).
		SetCleanSession(true).
		SetKeepAlive(30 * time.Second).
		SetConnectTimeout(m.ConnectTimeout).
		SetAutoReconnect(true).
		SetOrderMatters(true).
		SetOnConnectHandler(func(c mqtt.Client) {
			tok := c.Subscribe(commandSubscription, m.QoS, func(_ mqtt.Client, msg mqtt.Message) {
				s.onCommand(msg.Topic(), msg.Payload())
			})
			go func() {
				var err error
				if !tok.WaitTimeout(m.ConnectTimeout) {
					err = errors.New("no SUBACK in time")
				} else {
					err = tok.Error()
				}
				if err != nil {
					s.logf("chirpstack sim: subscribing to %s: %v", commandSubscription, err)
				}
				once.Do(func() { subscribed <- err })
			}()
		})
	c := mqtt.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(m.ConnectTimeout) {
		c.Disconnect(0)
		return fmt.Errorf("chirpstack sim: MQTT broker %s: no connection within %v", m.Server, m.ConnectTimeout)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("chirpstack sim: MQTT broker %s: %w", m.Server, err)
	}
	select {
	case err := <-subscribed:
		if err != nil {
			c.Disconnect(0)
			return fmt.Errorf("chirpstack sim: MQTT broker %s: subscribe to %s: %w", m.Server, commandSubscription, err)
		}
	case <-time.After(m.ConnectTimeout + time.Second):
		c.Disconnect(0)
		return fmt.Errorf("chirpstack sim: MQTT broker %s: subscribe to %s: no answer", m.Server, commandSubscription)
	}
	s.mqtt = c
	return nil
}

// onCommand handles a message on a command topic as ChirpStack's MQTT
// integration does: only "down" is known; its DownlinkCommand must name the
// topic's device and a device of the topic's application. What is refused
// is only logged (and recorded).
func (s *Sim) onCommand(topic string, payload []byte) {
	cmd := Command{Topic: topic, Payload: slices.Clone(payload), At: time.Now()}
	var err error
	ran := s.do(func() {
		cmd.QueueItemID, err = s.downCommand(topic, payload)
		if err != nil {
			cmd.Err = err.Error()
		}
		if !s.cfg.DisableRecords {
			s.commands = append(s.commands, cmd)
			s.notify()
		}
	})
	if ran && err != nil {
		s.logf("chirpstack sim: processing command on %s: %v", topic, err)
	}
}

// downCommand decodes and enqueues a downlink command. Lock held.
func (s *Sim) downCommand(topic string, payload []byte) (string, error) {
	parts := commandTopicRE.FindStringSubmatch(topic)
	if parts == nil {
		return "", csError("Error parsing command topic")
	}
	appID, topicEUI, command := parts[1], parts[2], parts[3]
	if command != "down" {
		return "", csError("Unknown command type")
	}
	var pl integration.DownlinkCommand
	var err error
	if s.cfg.MQTT.Encoding == Protobuf {
		err = proto.Unmarshal(payload, &pl)
	} else {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(payload, &pl)
	}
	if err != nil {
		return "", err
	}
	if pl.GetDevEui() != topicEUI {
		return "", csErrorf("Payload dev_eui %s does not match topic dev_eui %s", pl.GetDevEui(), topicEUI)
	}
	// handle_down_command
	eui, problem := apiEUI(pl.GetDevEui())
	if problem != "" {
		return "", csError(problem)
	}
	app, err := parseUUID(appID)
	if err != nil {
		return "", err
	}
	dev := s.devices[eui]
	if dev == nil {
		return "", csErrorf("Object does not exist (id: %s)", eui)
	}
	if app != s.cfg.ApplicationID {
		return "", csError("Application ID from topic does not match application ID from device")
	}
	data := slices.Clone(pl.GetData())
	if pl.GetObject() != nil {
		data = nil // encoded by the device profile's codec: none, no bytes
	}
	id := newUUID(s.idRng)
	if pl.GetId() != "" {
		if id, err = parseUUID(pl.GetId()); err != nil {
			return "", err
		}
	}
	fPort := uint32(uint8(pl.GetFPort()))
	var expires time.Time
	if ts := pl.GetExpiresAt(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return "", csErrorf("Parse expires_at error: %v", err)
		}
		expires = ts.AsTime()
	}
	if fPort == 0 {
		return "", csError(fPortInvalid)
	}
	if s.hasItem(id) {
		return "", csErrorf(`duplicate key value violates unique constraint "device_queue_item_pkey" (id: %s)`, id)
	}
	s.enqueue(dev, &item{QueueItem: QueueItem{
		ID: id, DevEUI: eui, FPort: fPort, Confirmed: pl.GetConfirmed(), Data: data,
		ExpiresAt: expires, EnqueuedAt: time.Now(), Source: "mqtt",
	}})
	return id, nil
}

// csError is an error that carries ChirpStack's own message (capitalised as
// ChirpStack writes it).
type csError string

func (e csError) Error() string { return string(e) }

func csErrorf(format string, args ...any) error { return csError(fmt.Sprintf(format, args...)) }
