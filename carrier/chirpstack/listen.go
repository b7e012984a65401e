package chirpstack

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/heraldmq/herald"
)

// maxIngests bounds the events Listen hands to ingest at once.
const maxIngests = 32

// The waits between two tries of an event whose ingest failed.
const (
	ingestRetryMin = 100 * time.Millisecond
	ingestRetryMax = 10 * time.Second
)

// subscribeTimeout bounds the wait for the broker's SUBACK.
const subscribeTimeout = 30 * time.Second

// EventSubscription returns the MQTT topic filter of the events of an
// application's devices ("" for every application's).
func EventSubscription(applicationID string) string {
	if applicationID == "" {
		applicationID = "+"
	}
	return "application/" + applicationID + "/device/+/event/+"
}

// Listen receives the events of ChirpStack's MQTT integration until ctx
// ends, and returns nil then; without MQTT it returns nil at once. It
// connects with a persistent session (clean session off, MQTTConfig's
// client id), reconnecting when the connection fails and subscribing again
// on every connection, and hands each event to ingest with its type (the
// topic's last level) and content type (JSON when the body starts with
// '{', else Protobuf). The event is acknowledged to the broker only once
// ingest returned nil; an ingest that fails is tried again (with a
// growing wait) while ctx lasts, and an event not acknowledged when ctx
// ends is sent again by the broker at the next connection. An event
// ingest calls invalid (*herald.InvalidError) is logged and acknowledged:
// sending it again cannot help. Only one Listen runs at a time.
func (c *Carrier) Listen(ctx context.Context, ingest herald.IngestFunc) error {
	if c.mqtt == nil {
		return nil
	}
	if !c.listening.CompareAndSwap(false, true) {
		return errors.New("chirpstack: Listen is already running")
	}
	defer c.listening.Store(false)

	l := &listener{c: c, ctx: ctx, ingest: ingest, topic: EventSubscription(c.mqtt.ApplicationID),
		slots: make(chan struct{}, maxIngests)}
	opts := c.clientOptions(c.mqtt.ClientID).
		SetCleanSession(false).
		SetAutoAckDisabled(true).
		SetOrderMatters(false).
		SetConnectRetry(true).
		SetDefaultPublishHandler(l.handle).
		SetOnConnectHandler(l.subscribe).
		SetConnectionLostHandler(func(_ mqtt.Client, err error) {
			c.log.Warn("chirpstack: MQTT connection lost; reconnecting", "broker", c.mqtt.URL, "err", err)
		})
	cl := mqtt.NewClient(opts)
	connected := cl.Connect() // completes once connected; retries until then, or until Disconnect
	<-ctx.Done()
	l.close()
	cl.Disconnect(250)
	// A connection still being tried ends at its next try (paho sleeps
	// between tries): wait for it, so that Listen leaves nothing behind.
	t := time.NewTimer(2 * mqttRetryInterval)
	defer t.Stop()
	select {
	case <-connected.Done():
	case <-t.C:
	}
	return nil
}

// listener is one run of Listen.
type listener struct {
	c      *Carrier
	ctx    context.Context
	ingest herald.IngestFunc
	topic  string
	slots  chan struct{} // one per ingest in progress

	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup // the handlers at work
}

// subscribe subscribes to the events on every connection: a session the
// broker kept has the subscription already, a new one does not.
func (l *listener) subscribe(cl mqtt.Client) {
	log := l.c.log
	tok := cl.Subscribe(l.topic, 1, l.handle)
	if !tok.WaitTimeout(subscribeTimeout) {
		log.Error("chirpstack: no SUBACK from the MQTT broker", "topic", l.topic, "broker", l.c.mqtt.URL)
		return
	}
	if err := tok.Error(); err != nil {
		log.Error("chirpstack: subscribing to the events failed", "topic", l.topic, "broker", l.c.mqtt.URL, "err", err)
		return
	}
	if st, ok := tok.(*mqtt.SubscribeToken); ok {
		if q, ok := st.Result()[l.topic]; ok && q > 2 {
			log.Error("chirpstack: the MQTT broker refused the subscription (is the client allowed to read it?)", "topic", l.topic, "broker", l.c.mqtt.URL)
			return
		}
	}
	if l.c.subscribed != nil {
		l.c.subscribed()
	}
}

// enter admits a handler unless Listen is ending.
func (l *listener) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.running.Add(1)
	return true
}

// close admits no more handlers and waits for those at work, which stop
// when ctx ends.
func (l *listener) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.running.Wait()
}

// handle takes one message of the subscription (or of the session, before
// the subscription is renewed). paho runs it in a goroutine of its own
// (OrderMatters off), so a slow ingest holds up nothing else.
func (l *listener) handle(_ mqtt.Client, msg mqtt.Message) {
	if !l.enter() {
		return // Listen is ending: not acknowledged, so sent again later
	}
	defer l.running.Done()
	log := l.c.log
	eventType, ok := l.eventType(msg.Topic())
	if !ok {
		log.Warn("chirpstack: ignoring an MQTT message on a topic that is no event of this route", "topic", msg.Topic())
		msg.Ack() // a subscription of an earlier configuration: nobody else will take it
		return
	}
	select {
	case l.slots <- struct{}{}:
	case <-l.ctx.Done():
		return
	}
	defer func() { <-l.slots }()
	body := msg.Payload()
	contentType := ContentTypeProtobuf
	if len(body) > 0 && body[0] == '{' {
		contentType = ContentTypeJSON
	}
	wait := ingestRetryMin
	for {
		err := l.ingest(l.ctx, eventType, contentType, body)
		if err == nil {
			msg.Ack()
			return
		}
		var invalid *herald.InvalidError
		if errors.As(err, &invalid) || errors.Is(err, herald.ErrNoIngress) {
			log.Warn("chirpstack: dropping an event herald cannot use", "topic", msg.Topic(), "err", err)
			msg.Ack()
			return
		}
		if l.ctx.Err() != nil {
			return // not acknowledged: the broker sends it again at the next connection
		}
		log.Error("chirpstack: an event could not be made durable; trying again", "topic", msg.Topic(), "retry_in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-l.ctx.Done():
			t.Stop()
			return
		}
		wait = min(2*wait, ingestRetryMax)
	}
}

// eventType returns the event type of an event topic,
// application/<application>/device/<DevEUI>/event/<type>, of this
// listener's application.
func (l *listener) eventType(topic string) (string, bool) {
	parts := strings.Split(topic, "/")
	if len(parts) != 6 || parts[0] != "application" || parts[2] != "device" || parts[4] != "event" || parts[5] == "" {
		return "", false
	}
	if app := l.c.mqtt.ApplicationID; app != "" && parts[1] != app {
		return "", false
	}
	return parts[5], true
}
