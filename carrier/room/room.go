// Package room is the carrier of the rooms' push deliveries: it serves the
// prefix route herald.RoomRoutePrefix and POSTs each delivery to its
// subscription's URL through the webhook carrier, as the JSON
// herald.DeliveryView, signed in the Standard Webhooks form with the
// subscription's secret when it names one. A 2xx answer delivers it;
// what the webhook carrier retries, the engine retries with the
// delivery's own backoff.
//
// Right before each POST, the carrier reads the delivery from the store:
// one that is no longer SENT_TO_NS under the claim it was handed with (its
// subscription was deleted while it waited for a send slot, the reaper
// retried it elsewhere) is not POSTed. The deletion of a subscription ends
// its deliveries in the same write that deletes it, so a delivery is not
// POSTed once the deletion has been answered.
//
// The URLs are the tenants', not the operator's: the carrier connects to
// no address of a range the egress policy refuses (loopback, link-local,
// private, multicast; httpsend.Egress) unless Config.Allow holds it,
// whether the URL names the address or a name that resolves to it, and a
// delivery's error quotes no more of the answer than its status and a
// short excerpt of a body that is not HTML.
package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/webhook"
	"github.com/heraldmq/herald/internal/httpsend"
	"github.com/heraldmq/herald/stdwebhook"
)

// Store finds a subscription and a delivery by id; a herald.Store does.
type Store interface {
	Subscription(ctx context.Context, id string) (*herald.Subscription, error)
	Get(ctx context.Context, id string) (*herald.Message, error)
}

// Config configures a Carrier.
type Config struct {
	// Store finds the subscription of each delivery, and the delivery as
	// it stands right before its POST. Required.
	Store Store
	// Secret returns the signing key held by the environment variable
	// name. Defaults to Env.
	Secret func(name string) ([]byte, error)
	// Allow lists the networks the carrier may reach although the egress
	// policy refuses their range (loopback, link-local, private,
	// multicast: httpsend.RefusedRanges): the config's egress.allow.
	Allow []netip.Prefix
	// OnRefuse, when set, is told of every address refused, at a
	// subscription's creation or at a connection (a log line and a
	// metric); it must not block.
	OnRefuse func(addr netip.Addr, kind string)
	// Client sends the requests. Defaults to a client whose connections
	// keep to the egress policy (Allow); one given is used as it is.
	Client *http.Client
	// Now tells the time for signature timestamps. Defaults to time.Now.
	Now func() time.Time
}

// Env returns the signing key held by the environment variable name, as
// stdwebhook.ParseSecret reads it; an unset variable is an error.
func Env(name string) ([]byte, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return nil, fmt.Errorf("environment variable %s is not set", name)
	}
	return stdwebhook.ParseSecret(v)
}

// maxCached bounds the subscriptions a Carrier keeps: it forgets them all
// when it would keep more.
const maxCached = 10000

// Carrier sends the push deliveries of rooms. It is safe for concurrent
// use.
type Carrier struct {
	store  Store
	secret func(string) ([]byte, error)
	client *http.Client
	now    func() time.Time
	egress *httpsend.Egress

	mu    sync.Mutex
	hooks map[string]*webhook.Carrier // by subscription id; a subscription never changes
}

var (
	_ herald.Carrier    = (*Carrier)(nil)
	_ herald.URLChecker = (*Carrier)(nil)
)

// New returns a Carrier for c.
func New(c Config) (*Carrier, error) {
	if c.Store == nil {
		return nil, errors.New("room: Config.Store is required")
	}
	cr := &Carrier{store: c.Store, secret: c.Secret, client: c.Client, now: c.Now, hooks: make(map[string]*webhook.Carrier),
		egress: &httpsend.Egress{Allow: c.Allow, OnRefuse: c.OnRefuse}}
	if cr.secret == nil {
		cr.secret = Env
	}
	if cr.client == nil {
		cr.client = cr.egress.Client()
	}
	if cr.now == nil {
		cr.now = time.Now
	}
	return cr, nil
}

// Path returns herald.PathDirect: an accepted POST is a delivery.
func (c *Carrier) Path() herald.Path { return herald.PathDirect }

// Validate accepts every message: the engine makes the deliveries itself.
func (c *Carrier) Validate(*herald.Message) error { return nil }

// CheckURL refuses a URL whose host is an address the egress policy
// refuses; a name is checked when a delivery connects.
func (c *Carrier) CheckURL(rawURL string) error {
	return c.egress.CheckURL(rawURL)
}

// Send POSTs m, a delivery, to its subscription (its target), unless m
// has moved on from the claim it was handed with (see the package
// comment). A subscription that is gone, or that is not a push
// subscription, fails it at once.
func (c *Carrier) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	if m.Text == "" { // the engine gives a delivery its event's data; none: the event is gone
		return herald.SendResult{}, herald.Permanent(fmt.Errorf("room: delivery %s: its event %s is gone, and its data with it", m.ID, m.Params["event_id"]))
	}
	hook, err := c.hook(ctx, m.Target)
	if err != nil {
		return herald.SendResult{}, err
	}
	body, err := json.Marshal(m.DeliveryView())
	if err != nil {
		return herald.SendResult{}, herald.Permanent(fmt.Errorf("room: delivery %s: %w", m.ID, err))
	}
	if err := c.stillClaimed(ctx, m); err != nil {
		return herald.SendResult{}, err
	}
	post := *m
	post.Payload, post.Text, post.Params = body, "", nil
	return hook.SendWithHeaders(ctx, &post, deliveryHeaders(m))
}

// The headers of a push delivery that count its redeliveries.
const (
	// HeaderAttempt is the redeliveries before this one: 0 on the first
	// send.
	HeaderAttempt = "X-Herald-Attempt"
	// HeaderDelay is the backoff, in milliseconds, that the last failure
	// computed and that was waited before this redelivery: 0 on the first
	// send.
	HeaderDelay = "X-Herald-Delivery-Delay-Ms"
)

// deliveryHeaders are HeaderAttempt and HeaderDelay of m, a delivery sent
// at its m.Attempt: its n-th redelivery waited its backoff's After(n).
func deliveryHeaders(m *herald.Message) http.Header {
	redeliveries, delay := max(m.Attempt-1, 0), time.Duration(0)
	if redeliveries > 0 && !m.Backoff.IsZero() {
		delay = m.Backoff.After(redeliveries)
	}
	return http.Header{HeaderAttempt: {strconv.Itoa(redeliveries)}, HeaderDelay: {strconv.FormatInt(delay.Milliseconds(), 10)}}
}

// stillClaimed returns nil when the store still has m SENT_TO_NS under
// the claim's lease, and otherwise the error that fails this send without
// a POST: permanent when m moved on (the engine's record of it is then
// refused as stale: m keeps what moved it), transient when the store
// cannot tell.
func (c *Carrier) stillClaimed(ctx context.Context, m *herald.Message) error {
	now, err := c.store.Get(ctx, m.ID)
	switch {
	case errors.Is(err, herald.ErrNotFound):
		return herald.Permanent(fmt.Errorf("room: delivery %s is gone: not sent", m.ID))
	case err != nil:
		return fmt.Errorf("room: delivery %s: %w", m.ID, err)
	case now.Status != herald.StatusSentToNS || now.Lease != m.Lease:
		why := ""
		if now.LastError != "" {
			why = " (" + now.LastError + ")"
		}
		return herald.Permanent(fmt.Errorf("room: delivery %s is %s%s since it was claimed: not sent", m.ID, now.Status, why))
	}
	return nil
}

// hook returns the webhook carrier of subscription id.
func (c *Carrier) hook(ctx context.Context, id string) (*webhook.Carrier, error) {
	c.mu.Lock()
	hook := c.hooks[id]
	c.mu.Unlock()
	if hook != nil {
		return hook, nil
	}
	sub, err := c.store.Subscription(ctx, id)
	switch {
	case errors.Is(err, herald.ErrNotFound):
		return nil, herald.Permanent(fmt.Errorf("room: subscription %s deleted", id))
	case err != nil:
		return nil, fmt.Errorf("room: subscription %s: %w", id, err)
	case sub.Type != herald.SubscriptionPush:
		return nil, herald.Permanent(fmt.Errorf("room: subscription %s is %s, not push", id, sub.Type))
	}
	var secret []byte
	switch {
	case sub.Secret != "":
		if secret, err = stdwebhook.ParseSecret(sub.Secret); err != nil {
			return nil, herald.Permanent(fmt.Errorf("room: subscription %s: secret: %w", id, err))
		}
	case sub.SecretEnv != "": // made before subscriptions kept their own
		if secret, err = c.secret(sub.SecretEnv); err != nil {
			return nil, herald.Permanent(fmt.Errorf("room: subscription %s: secret_env: %w", id, err))
		}
	}
	hook, err = webhook.New(webhook.Config{URL: sub.URL, Secret: secret, Client: c.client, Now: c.now,
		Headers: map[string]string{"Content-Type": "application/json"}, TenantURL: true})
	if err != nil {
		return nil, herald.Permanent(fmt.Errorf("room: subscription %s: %w", id, err))
	}
	c.mu.Lock()
	if len(c.hooks) >= maxCached {
		clear(c.hooks)
	}
	c.hooks[id] = hook
	c.mu.Unlock()
	return hook, nil
}

// Close closes the idle connections of the carrier's client.
func (c *Carrier) Close() error {
	c.client.CloseIdleConnections()
	return nil
}
