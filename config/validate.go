package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/httpsend"
)

// routeName is what a route may be called: it appears in URL paths.
var routeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// headerName is an HTTP header's name (RFC 9110's token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// Validate reports everything wrong with f, one line per problem. It reads
// the environment variables that the API keys and signing secrets name.
func (f *File) Validate() error {
	var errs []error
	if _, err := ParseStore(f.Store); err != nil {
		errs = append(errs, err)
	}
	if _, err := f.Keys(); err != nil {
		errs = append(errs, err)
	}
	if f.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency %d is negative", f.Concurrency))
	}
	errs = append(errs, f.HTTP.validate()...)
	errs = append(errs, f.validateSubscribers()...)
	errs = append(errs, f.validateRoutes()...)
	errs = append(errs, f.validateLXMFRoutes()...)
	if f.OTel != nil {
		errs = append(errs, f.OTel.validate()...)
	}
	if f.Health != nil {
		if err := f.Health.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := f.AllowedPrefixes(); err != nil {
		errs = append(errs, err)
	}
	if _, err := f.TrustedProxies(); err != nil {
		errs = append(errs, err)
	}
	if _, err := f.MetricsKey(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (f *File) validateSubscribers() []error {
	var errs []error
	names := map[string]bool{}
	for i, s := range f.Subscribers {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("subscribers[%d]: "+format, append([]any{i}, args...)...))
		}
		if err := checkHTTPURL(s.URL); err != nil {
			bad("url: %v", err)
		}
		if names[s.Name] {
			bad("name %q is used twice", s.Name)
		}
		names[s.Name] = true
		if err := checkEnv(s.SecretEnv); err != nil {
			bad("secret_env: %v", err)
		}
		for _, t := range s.Types {
			if _, err := herald.ParseEventType(t); err != nil {
				bad("types: %v", err)
			}
		}
		if s.MaxAttempts < 0 {
			bad("max_attempts %d is negative", s.MaxAttempts)
		}
		if err := s.RetryPolicy().Validate(); err != nil {
			bad("%v", err)
		}
		switch s.Signature {
		case "", SignatureStandard:
			if s.SignatureHeader != "" || s.SignaturePrefix != "" {
				bad("signature_header and signature_prefix need signature: %s", SignatureHMAC)
			}
		case SignatureHMAC:
			if s.SecretEnv == "" {
				bad("signature: %s needs secret_env, the variable that holds the shared secret", SignatureHMAC)
			}
			if s.SignatureHeader != "" && !headerName.MatchString(s.SignatureHeader) {
				bad("signature_header %q is not a header name", s.SignatureHeader)
			}
			if strings.ContainsFunc(s.SignaturePrefix, func(r rune) bool { return r < ' ' || r == 0x7f }) {
				bad("signature_prefix holds control characters")
			}
		default:
			bad("signature %q: want %s or %s", s.Signature, SignatureStandard, SignatureHMAC)
		}
	}
	return errs
}

func (f *File) validateRoutes() []error {
	if len(f.Routes) == 0 {
		return []error{errors.New("routes: at least one route is required")}
	}
	var errs []error
	seen := map[string]bool{}
	for i, r := range f.Routes {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("routes[%d] %q: "+format, append([]any{i, r.Name}, args...)...))
		}
		switch {
		case r.Name == "":
			bad("name is required")
		case !routeName.MatchString(r.Name):
			bad("name may hold only letters, digits, '_', '.' and '-'")
		case seen[r.Name]:
			bad("duplicate route name")
		}
		seen[r.Name] = true
		if !slices.Contains(Carriers, r.Carrier) {
			bad("unknown carrier %q (want one of %v)", r.Carrier, Carriers)
			continue
		}
		if _, err := r.policy(); err != nil {
			bad("%v", err)
		}
		if _, err := herald.NewErrorClassifier(r.PermanentErrors); err != nil {
			bad("permanent_errors: %v", err)
		}
		if a := r.Admission; a != nil && a.Concurrency < 0 {
			bad("admission: concurrency %d is negative", a.Concurrency)
		}
		for _, err := range r.validateCarrier() {
			bad("%v", err)
		}
		if other, ok := f.sharedListener(i); ok {
			bad("listens to the same ChirpStack application as route %q (mqtt url %s, application_id %q): each route's "+
				"session would take events of the other's messages, which it cannot match; give each route an application of its own",
				other, r.MQTT.URL, r.MQTT.ApplicationID)
		}
	}
	return errs
}

// sharedListener returns the name of a chirpstack route before route i
// that listens to the events of the same ChirpStack application on the
// same broker (an empty application id listens to all), if any.
func (f *File) sharedListener(i int) (string, bool) {
	r := f.Routes[i]
	if r.Carrier != CarrierChirpStack || r.MQTT == nil || r.MQTT.URL == "" {
		return "", false
	}
	for _, o := range f.Routes[:i] {
		if o.Carrier != CarrierChirpStack || o.MQTT == nil || o.MQTT.URL != r.MQTT.URL {
			continue
		}
		if a, b := o.MQTT.ApplicationID, r.MQTT.ApplicationID; a == b || a == "" || b == "" {
			return o.Name, true
		}
	}
	return "", false
}

// validateCarrier checks the keys of the route's own carrier.
func (r Route) validateCarrier() []error {
	var errs []error
	switch r.Carrier {
	case CarrierWebhook:
		if r.URL == "" {
			errs = append(errs, errors.New("url is required for a webhook route"))
		} else if err := checkHTTPURL(r.URL); err != nil {
			errs = append(errs, fmt.Errorf("url: %v", err))
		}
		if err := checkEnv(r.SecretEnv); err != nil {
			errs = append(errs, fmt.Errorf("secret_env: %v", err))
		}
	case CarrierChirpStack:
		switch r.Send {
		case "", "grpc":
		case "mqtt":
			if r.MQTT == nil || r.MQTT.URL == "" {
				errs = append(errs, errors.New("send: mqtt needs mqtt.url"))
			}
		default:
			errs = append(errs, fmt.Errorf("send %q: want grpc or mqtt", r.Send))
		}
		switch {
		case r.IngressSecretEnv == "" && !r.IngressOpen && r.MQTT == nil:
			errs = append(errs, fmt.Errorf("ingress_secret_env is required: the environment variable holding the secret ChirpStack's HTTP integration sends as Authorization: Bearer to /v1/ingress/%s (or ingress_open: true, to take its events from anyone, deliberately; a route with mqtt: takes its events from the broker, and its HTTP ingress is closed without a secret)", r.Name))
		case r.IngressSecretEnv != "" && r.IngressOpen:
			errs = append(errs, errors.New("ingress_open: true and ingress_secret_env contradict each other; keep one"))
		}
	case CarrierTelegram:
		if r.TokenEnv == "" {
			errs = append(errs, errors.New("token_env is required for a telegram route: the environment variable that holds the bot token"))
		} else if err := checkEnv(r.TokenEnv); err != nil {
			errs = append(errs, fmt.Errorf("token_env: %v (the telegram bot token)", err))
		}
		if r.BaseURL != "" {
			if err := checkHTTPURL(r.BaseURL); err != nil {
				errs = append(errs, fmt.Errorf("base_url: %v", err))
			}
		}
	case CarrierLXMF:
		errs = append(errs, r.validateLXMF()...)
	case CarrierCalinV1, CarrierCalinV2:
		if r.BaseURL == "" {
			errs = append(errs, fmt.Errorf("base_url is required for a %s route", r.Carrier))
		} else if err := checkHTTPURL(r.BaseURL); err != nil {
			errs = append(errs, fmt.Errorf("base_url: %v", err))
		}
	}
	if !r.polls() {
		for key, set := range map[string]bool{"retry_failed_tasks": r.RetryFailedTasks, "poll_concurrency": r.PollConcurrency != 0,
			"first_poll": r.FirstPoll != nil, "poll_jitter": r.PollJitter != nil, "create_timeout": r.CreateTimeout != 0} {
			if set {
				errs = append(errs, fmt.Errorf("%s: a %s route has no tasks (calin-v1 and calin-v2 only)", key, r.Carrier))
			}
		}
	}
	if r.CreateTimeout < 0 {
		errs = append(errs, fmt.Errorf("create_timeout %v is negative", r.CreateTimeout.D()))
	}
	return errs
}

// checkHTTPURL reports whether s is an absolute http or https URL.
func checkHTTPURL(s string) error {
	if s == "" {
		return errors.New("is required")
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("is not a URL")
	}
	if u.Host == "" {
		return errors.New("is not an absolute http or https URL: it has no scheme and host")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s is not an absolute http or https URL", httpsend.Redact(u))
	}
	return nil
}

// checkEnv reports a named environment variable that is unset or empty.
// An empty name is fine: the setting is optional.
func checkEnv(name string) error {
	if name == "" {
		return nil
	}
	if v, ok := os.LookupEnv(name); !ok || v == "" {
		return fmt.Errorf("environment variable %s is not set", name)
	}
	return nil
}
