package chirpstack

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chirpstack/chirpstack/api/go/v4/api"
	"github.com/heraldmq/herald"
)

// The ways of sending, Config.Send.
const (
	// SendGRPC enqueues by api.DeviceService/Enqueue.
	SendGRPC = "grpc"
	// SendMQTT publishes a downlink command on the MQTT integration.
	SendMQTT = "mqtt"
)

// DefaultCallTimeout bounds a gRPC call whose context has no deadline
// (StillQueued from the reaper).
const DefaultCallTimeout = 10 * time.Second

// Config describes one ChirpStack application.
type Config struct {
	// Server is ChirpStack's gRPC API, host:port. Required with SendGRPC;
	// with SendMQTT it is optional, but without it StillQueued cannot ask
	// ChirpStack's queue and reports an error.
	Server string
	// Token is a ChirpStack API token (admin or tenant key), sent as
	// "authorization: Bearer" metadata. Required with Server. It is a
	// secret: it appears in no error text.
	Token string
	// TLS dials Server with TLS (the system's roots); plain text
	// otherwise.
	TLS bool
	// Send is SendGRPC or SendMQTT. Defaults to SendGRPC.
	Send string
	// MQTT is ChirpStack's MQTT integration: the events (Listen) and, with
	// SendMQTT, the downlink commands. Nil for none.
	MQTT *MQTTConfig
	// IngressSecret is the bearer token ChirpStack's HTTP integration sends
	// to herald's ingress. When it is "", IngressOpen says whether the
	// ingress takes any caller's events (true) or none (false: a random
	// secret that no one knows; the events come over MQTT).
	IngressSecret string
	// IngressOpen opens the ingress to any caller when IngressSecret is "".
	IngressOpen bool
	// Logger receives what Listen cannot report otherwise (an event that
	// could not be made durable, a lost connection). Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// MQTTConfig is the broker ChirpStack's MQTT integration publishes to.
type MQTTConfig struct {
	// URL is the broker: tcp://, ssl://, ws:// or wss:// host:port.
	// Required.
	URL string
	// ApplicationID is the ChirpStack application (a UUID) whose topics
	// are used. Required with SendMQTT; empty listens to every
	// application's events.
	ApplicationID string
	// Username and Password authenticate to the broker, when set.
	Username, Password string
	// ClientID is the client id of Listen's persistent session. Defaults
	// to "herald-" + ApplicationID ("herald-chirpstack" without one). Give
	// each herald replica its own.
	ClientID string
	// Protobuf publishes downlink commands in binary Protobuf, for a
	// ChirpStack whose MQTT integration has json=false. Defaults to JSON.
	Protobuf bool
}

// Carrier sends messages to the devices of a ChirpStack network server. It
// is safe for concurrent use.
type Carrier struct {
	send          string
	token         string
	ingressSecret string
	mqtt          *MQTTConfig // nil for none; ClientID filled in
	log           *slog.Logger

	conn    *grpc.ClientConn // nil without Server
	devices api.DeviceServiceClient

	mu        sync.Mutex
	publisher mqtt.Client // SendMQTT's connection, made at the first send
	closed    bool

	listening atomic.Bool
	// subscribed, when set (by tests), is called each time Listen's
	// subscription is acknowledged.
	subscribed func()
}

var (
	_ herald.Carrier      = (*Carrier)(nil)
	_ herald.QueueChecker = (*Carrier)(nil)
	_ herald.EventReader  = (*Carrier)(nil)
	_ herald.Listener     = (*Carrier)(nil)
)

// New checks c and returns a carrier for it. It connects nothing: the gRPC
// connection is made at the first call, the MQTT ones by the first send
// and by Listen.
func New(c Config) (*Carrier, error) {
	cr := &Carrier{send: c.Send, token: c.Token, ingressSecret: c.IngressSecret, log: c.Logger}
	if cr.ingressSecret == "" && !c.IngressOpen {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		cr.ingressSecret = hex.EncodeToString(key) // the HTTP ingress is closed
	}
	if cr.send == "" {
		cr.send = SendGRPC
	}
	if cr.log == nil {
		cr.log = slog.Default()
	}
	switch cr.send {
	case SendGRPC:
		if c.Server == "" {
			return nil, errors.New("chirpstack: server (ChirpStack's gRPC host:port) is required to send by grpc")
		}
	case SendMQTT:
		if c.MQTT == nil || c.MQTT.URL == "" {
			return nil, errors.New("chirpstack: send mqtt needs the MQTT integration's broker URL")
		}
		if c.MQTT.ApplicationID == "" {
			return nil, errors.New("chirpstack: send mqtt needs the application id (the command topic names it)")
		}
	default:
		return nil, fmt.Errorf("chirpstack: send %q: want %s or %s", c.Send, SendGRPC, SendMQTT)
	}
	if c.MQTT != nil {
		m := *c.MQTT
		if err := checkBrokerURL(m.URL); err != nil {
			return nil, err
		}
		if m.ApplicationID != "" && !isTopicLevel(m.ApplicationID) {
			return nil, fmt.Errorf("chirpstack: mqtt application id %q: want ChirpStack's application id (a UUID)", m.ApplicationID)
		}
		if m.ClientID == "" {
			m.ClientID = "herald-chirpstack"
			if m.ApplicationID != "" {
				m.ClientID = "herald-" + m.ApplicationID
			}
		}
		cr.mqtt = &m
	}
	if c.Server != "" {
		if c.Token == "" {
			return nil, errors.New("chirpstack: the API token is empty (ChirpStack refuses every call without one)")
		}
		if strings.ContainsFunc(c.Token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return nil, errors.New("chirpstack: the API token holds white space or control characters, which a token never has")
		}
		if _, _, err := net.SplitHostPort(c.Server); err != nil {
			return nil, fmt.Errorf("chirpstack: server %q: want host:port (ChirpStack's gRPC API, 8080 by default)", c.Server)
		}
		creds := insecure.NewCredentials()
		if c.TLS {
			creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
		}
		conn, err := grpc.NewClient(c.Server, grpc.WithTransportCredentials(creds), grpc.WithUserAgent("herald-chirpstack"))
		if err != nil {
			return nil, fmt.Errorf("chirpstack: server %q: %w", c.Server, err)
		}
		cr.conn, cr.devices = conn, api.NewDeviceServiceClient(conn)
	}
	return cr, nil
}

// checkBrokerURL checks an MQTT broker address as paho takes it.
func checkBrokerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("chirpstack: mqtt url %q: want scheme://host:port (tcp, ssl, ws or wss)", s)
	}
	switch u.Scheme {
	case "tcp", "mqtt", "ssl", "tls", "mqtts", "tcps", "ws", "wss":
		return nil
	}
	return fmt.Errorf("chirpstack: mqtt url %q: scheme %q: want tcp, ssl, ws or wss", s, u.Scheme)
}

// isTopicLevel reports whether s may stand as one level of a topic name.
func isTopicLevel(s string) bool {
	return s != "" && !strings.ContainsAny(s, "/+#\x00")
}

// Path returns herald.PathPush: ChirpStack's events take a message from
// DELIVERED_TO_NS to DELIVERY_SUCCESSFUL.
func (c *Carrier) Path() herald.Path { return herald.PathPush }

// IngressSecret returns Config.IngressSecret: "" when the ingress is open
// (Config.IngressOpen), a secret no one knows when it is closed.
func (c *Carrier) IngressSecret() string { return c.ingressSecret }

// AwaitsAck reports whether m is a confirmed downlink (params.confirmed is
// not "false"), whose device must acknowledge it after the transmission.
func (c *Carrier) AwaitsAck(m *herald.Message) bool { return m.Params[ParamConfirmed] != "false" }

// Close closes the gRPC connection and the MQTT connection of SendMQTT.
// (Listen closes its own when its context ends.) The carrier sends nothing
// afterwards.
func (c *Carrier) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.publisher != nil {
		c.publisher.Disconnect(250)
		c.publisher = nil
	}
	if c.conn != nil {
		return c.conn.Close()
	}
	return nil
}

// callContext bounds a call whose context has no deadline by
// DefaultCallTimeout.
func callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultCallTimeout)
}
