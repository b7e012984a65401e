package config

import (
	"time"

	"github.com/heraldmq/herald"
)

// The carriers a route may name.
const (
	CarrierWebhook    = "webhook"
	CarrierChirpStack = "chirpstack"
	CarrierCalinV1    = "calin-v1"
	CarrierCalinV2    = "calin-v2"
	CarrierTelegram   = "telegram"
	CarrierLXMF       = "lxmf"
)

// Carriers lists the known carriers.
var Carriers = []string{CarrierWebhook, CarrierChirpStack, CarrierCalinV1, CarrierCalinV2, CarrierTelegram, CarrierLXMF}

// DefaultProfile returns the profile a route of the given carrier uses when
// it names none: lorawan for chirpstack, taskpoll for the Calin carriers,
// lxmf for lxmf, channel for the rest (webhook, telegram).
func DefaultProfile(carrier string) herald.Profile {
	switch carrier {
	case CarrierChirpStack:
		return herald.ProfileLoRaWAN
	case CarrierCalinV1, CarrierCalinV2:
		return herald.ProfileTaskPoll
	case CarrierLXMF:
		return herald.ProfileLXMF
	default:
		return herald.ProfileChannel
	}
}

// Route is a named carrier instance with its policy and flow control.
type Route struct {
	// Name is what messages name in their route field. Required, unique.
	Name string `yaml:"name"`
	// Carrier is one of Carriers. Required.
	Carrier string `yaml:"carrier"`
	// Profile is the policy preset; empty means DefaultProfile(Carrier).
	Profile string `yaml:"profile"`
	// Overrides, the policy key, change the profile field by field; the
	// result is what Policy returns.
	Overrides *PolicyOverrides `yaml:"policy"`
	// Lane is the default lane of messages that name none.
	Lane string `yaml:"lane"`
	// PermanentErrors are the error patterns that fail a message at once;
	// nil keeps herald.DefaultPermanentPatterns.
	PermanentErrors []string `yaml:"permanent_errors"`
	// Admission is the flow control applied per lane of this route; nil
	// keeps the profile's (and, on a telegram route whose profile sets no
	// spacing, adds DefaultTelegramSpacing and DefaultTelegramConcurrency
	// per chat).
	Admission *Admission `yaml:"admission"`
	// TenantRate is a token bucket per tenant on this route; zero for none.
	TenantRate Rate `yaml:"tenant_rate"`
	// RouteRate is a token bucket for the whole route, across its lanes
	// and tenants; zero for none (a telegram route then gets
	// DefaultTelegramRouteRate).
	RouteRate Rate `yaml:"route_rate"`
	// Ordered allows one message in flight per target, in order.
	Ordered bool `yaml:"ordered"`
	// DedupTTL is the content-hash dedup window; 0 turns dedup off.
	DedupTTL Duration `yaml:"dedup_ttl"`
	// Coalesce, when set, says whether a message that names no
	// coalesce_key coalesces by its target (a newer message for a target
	// replaces the one still waiting for it); nil keeps the profile's
	// (on for classc).
	Coalesce *bool `yaml:"coalesce"`
	// Circuit is each lane's circuit breaker; nil means the default: on
	// for webhook routes (DefaultWebhookCircuit) and telegram routes
	// (DefaultTelegramCircuit), off for the others.
	Circuit *Circuit `yaml:"circuit"`

	// URL is where a webhook route POSTs. Required for webhook.
	URL string `yaml:"url"`
	// Headers are added to every webhook request.
	Headers map[string]string `yaml:"headers"`
	// SecretEnv names the variable holding the webhook's Standard Webhooks secret.
	SecretEnv string `yaml:"secret_env"`

	// Server is ChirpStack's gRPC host:port.
	Server string `yaml:"server"`
	// TokenEnv names the variable holding ChirpStack's API token, or a
	// telegram route's bot token (required there).
	TokenEnv string `yaml:"token_env"`
	// TLS dials Server with TLS.
	TLS bool `yaml:"tls"`
	// Send is how ChirpStack downlinks are sent: grpc (default) or mqtt.
	Send string `yaml:"send"`
	// MQTT configures ChirpStack's MQTT integration.
	MQTT *MQTT `yaml:"mqtt"`
	// IngressSecretEnv names the variable holding the secret ChirpStack's HTTP
	// integration sends as a bearer token to /v1/ingress/{route}.
	IngressSecretEnv string `yaml:"ingress_secret_env"`
	// IngressOpen says that the route's HTTP ingress takes events without
	// a secret, deliberately: anyone who reaches it may post events. A
	// chirpstack route needs it or IngressSecretEnv, unless it has MQTT
	// (its events come from the broker): its HTTP ingress is then closed.
	IngressOpen bool `yaml:"ingress_open"`

	// BaseURL is the Calin API's address, or the Telegram Bot API's
	// (default https://api.telegram.org).
	BaseURL string `yaml:"base_url"`
	// Company is the Calin company name.
	Company string `yaml:"company"`
	// UsernameEnv names the variable holding the Calin v1 user name.
	UsernameEnv string `yaml:"username_env"`
	// UserIDEnv names the variable holding the Calin v2 user id.
	UserIDEnv string `yaml:"user_id_env"`
	// PasswordEnv names the variable holding the Calin password.
	PasswordEnv string `yaml:"password_env"`
	// RetryFailedTasks (Calin) retries a task the meter did not carry out
	// with a new task; by default such a task delivers its message, with
	// the execution's failure as its result.
	RetryFailedTasks bool `yaml:"retry_failed_tasks"`
	// PollConcurrency (Calin) bounds the polls of the route's tasks that
	// run at once on a node; 0 keeps herald.DefaultPollConcurrency.
	PollConcurrency int `yaml:"poll_concurrency"`
	// FirstPoll (Calin) is the wait between a task's creation and its
	// first poll; nil keeps the profile's (10 s).
	FirstPoll *Duration `yaml:"first_poll"`
	// PollJitter (Calin), 0..0.5, is the random share added to each
	// poll's wait; nil keeps the profile's (0.2).
	PollJitter *float64 `yaml:"poll_jitter"`
	// CreateTimeout (Calin) bounds a create-task call; 0 keeps the
	// carrier's default (2 minutes).
	CreateTimeout Duration `yaml:"create_timeout"`

	// Reticulum is how an lxmf route reaches its Reticulum network.
	// Required for lxmf.
	Reticulum *Reticulum `yaml:"reticulum"`
	// IdentityFile is an lxmf route's Reticulum identity (created on first
	// start, mode 0600); routes naming the same file share one node.
	// Required for lxmf.
	IdentityFile string `yaml:"identity_file"`
	// DisplayName is announced with an lxmf route's address.
	DisplayName string `yaml:"display_name"`
	// Method is how an lxmf route delivers: opportunistic, direct (the
	// default) or propagated.
	Method string `yaml:"method"`
	// PropagationNode is the lxmf.propagation hash (32 hex characters) a
	// propagated lxmf route uploads to.
	PropagationNode string `yaml:"propagation_node"`
	// FallbackRoute names another lxmf route, on the same identity file,
	// whose method takes each message's last attempt; empty for none.
	FallbackRoute string `yaml:"fallback_route"`
	// WaitForPath lets an lxmf route's message wait for its recipient's
	// path without spending attempts, until it is that old; 0 for off.
	WaitForPath Duration `yaml:"wait_for_path"`
}

// Reticulum is where an lxmf route's node connects.
type Reticulum struct {
	// TCP is the host:port of a transport node's TCP server interface
	// (rnsd's TCPServerInterface).
	TCP string `yaml:"tcp"`
}

// polls reports whether the route's carrier creates tasks that it polls.
func (r Route) polls() bool { return r.Carrier == CarrierCalinV1 || r.Carrier == CarrierCalinV2 }

// Circuit opens a lane after Failures transient failures in a row, for
// CoolDown; failures: 0 turns it off.
type Circuit struct {
	Failures int      `yaml:"failures"`
	CoolDown Duration `yaml:"cool_down"`
}

// DefaultWebhookCircuit is a webhook route's circuit unless it sets one.
var DefaultWebhookCircuit = Circuit{Failures: 20, CoolDown: Duration(time.Minute)}

// DefaultTelegramCircuit is a telegram route's circuit unless it sets one.
// A telegram route's lanes are its chats, each with a few messages at a
// time, so the circuit opens after fewer failures than a webhook's: when
// Telegram keeps failing (5xx, timeouts), a chat's messages wait without
// spending their attempts instead of running out of them. It also makes
// the route gated, so that a 429 pauses its chat.
var DefaultTelegramCircuit = Circuit{Failures: 5, CoolDown: Duration(time.Minute)}

// DefaultTelegramSpacing is the interval between two messages to one chat
// on a telegram route whose admission and profile set none: Telegram asks
// bots to send at most one message a second to a chat.
const DefaultTelegramSpacing = time.Second

// DefaultTelegramConcurrency is how many messages of one chat a telegram
// route whose admission and profile set no spacing sends at once: one, so
// that a text sent in chunks ends before the chat's next message, which
// then waits the spacing after its last chunk.
const DefaultTelegramConcurrency = 1

// DefaultTelegramRouteRate is the route_rate of a telegram route that sets
// none: Telegram's published ceiling of about 30 messages a second per
// bot, across its chats.
var DefaultTelegramRouteRate = Rate{N: 30, Per: time.Second}

// Admission is the flow control applied per lane of a route.
type Admission struct {
	// Spacing is the minimum interval between dispatches.
	Spacing Duration `yaml:"spacing"`
	// Concurrency is the maximum in flight; 0 for no cap.
	Concurrency int `yaml:"concurrency"`
	// Rate is a token bucket whose burst is the per-period amount.
	Rate Rate `yaml:"rate"`
}

// MQTT configures ChirpStack's MQTT integration.
type MQTT struct {
	// URL is the broker's address (tcp://, ssl://, ws://).
	URL string `yaml:"url"`
	// ApplicationID is the ChirpStack application whose topics are used.
	ApplicationID string `yaml:"application_id"`
	// UsernameEnv and PasswordEnv name the variables holding the broker's credentials.
	UsernameEnv string `yaml:"username_env"`
	PasswordEnv string `yaml:"password_env"`
	// ClientID is the client id of herald's persistent MQTT session, where
	// events wait while herald is down; default "herald-<application_id>".
	// Give each node sharing a store its own.
	ClientID string `yaml:"client_id"`
}
