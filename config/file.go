// Package config reads herald's YAML configuration file: the listen address,
// the store, the API keys, the outcome subscribers and the routes.
//
// Parse and Load reject unknown keys (a typo is an error naming its line)
// and validate what they read, so that a File they return can be wired into
// an engine as is. Secrets never appear in the file: every *_env key names
// the environment variable that holds one.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/heraldmq/herald"
)

// Defaults of the top-level keys.
const (
	// DefaultListen is the address served when listen is absent.
	DefaultListen = "127.0.0.1:8080"
	// DefaultStore is the store used when store is absent.
	DefaultStore = "sqlite:./herald.db"
	// DefaultTenant is the tenant of an API key that names none.
	DefaultTenant = "default"
)

// File is the whole configuration file.
type File struct {
	// Listen is the HTTP address to serve. Defaults to DefaultListen.
	Listen string `yaml:"listen"`
	// Store names the store: sqlite:PATH, redis://... or rediss://...
	// Defaults to DefaultStore.
	Store string `yaml:"store"`
	// APIKeys are the bearer keys of the HTTP API and their tenants.
	APIKeys []APIKey `yaml:"api_keys"`
	// Egress is the policy of the connections to URLs that tenants supply.
	Egress Egress `yaml:"egress"`
	// Metrics protects /metrics with a key of its own; nil serves it to
	// anyone (with no string a tenant chose in it).
	Metrics *Metrics `yaml:"metrics"`
	// Subscribers receive outcome events.
	Subscribers []Subscriber `yaml:"subscribers"`
	// Routes are the named carriers messages are sent through. At least one is required.
	Routes []Route `yaml:"routes"`
	// Health overrides the thresholds of GET /v1/health; nil keeps the defaults.
	Health *Health `yaml:"health"`
	// Retention is how long terminal messages are kept; 0 keeps the engine's default.
	Retention Duration `yaml:"retention"`
	// DrainBudget bounds the startup drain; 0 keeps the engine's default.
	DrainBudget Duration `yaml:"drain_budget"`
	// Concurrency bounds the sends in flight at once; 0 keeps the engine's default (64).
	Concurrency int `yaml:"concurrency"`
	// UI serves the admin page at /ui (log in with an API key). Defaults
	// to true; false serves no page, no /ui path at all.
	UI *bool `yaml:"ui"`
	// OTel exports OpenTelemetry traces; nil (absent) traces nothing.
	OTel *OTel `yaml:"otel"`
	// HTTP holds the HTTP server's limits; Parse fills in every default.
	HTTP HTTP `yaml:"http"`
}

// UIEnabled reports whether the admin page is served: unless ui is false.
func (f *File) UIEnabled() bool { return f.UI == nil || *f.UI }

// APIKey is one bearer key of the HTTP API.
type APIKey struct {
	// KeyEnv names the environment variable that holds the key.
	KeyEnv string `yaml:"key_env"`
	// Key is the key itself, for local demos only; prefer KeyEnv.
	Key string `yaml:"key"`
	// Tenant owns the messages sent with this key. Defaults to DefaultTenant.
	Tenant string `yaml:"tenant"`
	// Role is what the key may do: write (the default), read (GETs only)
	// or admin (every tenant's figures too, and the pause and resume of
	// lanes, which hold every tenant's messages).
	Role string `yaml:"role"`
}

// Subscriber is a webhook URL that receives outcome events.
type Subscriber struct {
	// Name identifies the subscriber in the outbox; defaults to its URL.
	Name string `yaml:"name"`
	// URL receives the events. Required.
	URL string `yaml:"url"`
	// SecretEnv names the environment variable holding the signing secret.
	SecretEnv string `yaml:"secret_env"`
	// Types are the statuses whose transitions are sent, "uplink" for the
	// devices' uplinks that answer no message, "lxmf.message" for the
	// LXMF messages addressed to herald, and the lane events
	// (lane.circuit_open, lane.circuit_closed); empty means
	// DELIVERY_SUCCESSFUL, DELIVERY_FAILED, uplink, lxmf.message and the
	// lane events.
	Types []string `yaml:"types"`
	// MaxAttempts bounds the deliveries of one event; 0 keeps the engine's
	// default (herald.DefaultSubscriberAttempts).
	MaxAttempts int `yaml:"max_attempts"`
	// Retry spaces the deliveries of one event, as a route's policy's
	// retry does, over herald.DefaultSubscriberRetry.
	Retry *RetryOverrides `yaml:"retry"`
	// Signature is how bodies are signed with the secret: SignatureStandard
	// (the default) or SignatureHMAC.
	Signature string `yaml:"signature"`
	// SignatureHeader is the header of an hmac-sha256 signature; default
	// notify.DefaultHMACHeader (X-Signature).
	SignatureHeader string `yaml:"signature_header"`
	// SignaturePrefix comes before the hex digest in that header ("" by
	// default; "sha256=" for receivers that expect it).
	SignaturePrefix string `yaml:"signature_prefix"`
}

// The signatures of a subscriber.
const (
	// SignatureStandard signs in the Standard Webhooks form (webhook-id,
	// webhook-timestamp, webhook-signature).
	SignatureStandard = "standard"
	// SignatureHMAC puts the hex HMAC-SHA256 of the raw body, under the
	// secret's bytes as they are, in one header (signature_header).
	SignatureHMAC = "hmac-sha256"
)

// RetryPolicy returns the subscriber's retry policy: its retry over
// herald.DefaultSubscriberRetry.
func (s Subscriber) RetryPolicy() herald.RetryPolicy {
	p := herald.DefaultSubscriberRetry
	if s.Retry != nil {
		s.Retry.apply(&p)
	}
	return p
}

// Load reads and parses the file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse decodes a configuration, fills in the defaults and validates it.
// Unknown keys are errors.
func Parse(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("parse config: want one YAML document, found more")
	}
	f.setDefaults()
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Default returns the configuration used without a file: DefaultListen,
// DefaultStore, no API keys (the caller adds a demo key) and one webhook
// route named "demo" whose URL the caller fills in.
func Default() *File {
	return &File{
		Listen: DefaultListen,
		Store:  DefaultStore,
		HTTP:   HTTP{}.withDefaults(),
		Routes: []Route{{Name: "demo", Carrier: CarrierWebhook}},
	}
}

func (f *File) setDefaults() {
	if f.Listen == "" {
		f.Listen = DefaultListen
	}
	if f.Store == "" {
		f.Store = DefaultStore
	}
	f.HTTP = f.HTTP.withDefaults()
	for i := range f.APIKeys {
		if f.APIKeys[i].Tenant == "" {
			f.APIKeys[i].Tenant = DefaultTenant
		}
		if f.APIKeys[i].Role == "" {
			f.APIKeys[i].Role = RoleWrite
		}
	}
	for i := range f.Subscribers {
		if f.Subscribers[i].Name == "" {
			f.Subscribers[i].Name = f.Subscribers[i].URL
		}
	}
}
