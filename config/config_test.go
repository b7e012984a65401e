package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func mustParseFile(t *testing.T, name string) *File {
	t.Helper()
	f, err := Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	return f
}

func TestParseContractExample(t *testing.T) {
	t.Setenv("HERALD_API_KEY", "k1")
	t.Setenv("HERALD_EVENTS_SECRET", "s1")
	f := mustParseFile(t, "contract.yaml")

	if f.Listen != "127.0.0.1:8080" || f.Store != "sqlite:./herald.db" {
		t.Errorf("listen %q store %q", f.Listen, f.Store)
	}
	keys, err := f.Keys()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(keys, map[string]string{"k1": "default"}) {
		t.Errorf("keys = %v", keys)
	}
	if len(f.Subscribers) != 1 || f.Subscribers[0].URL != "http://127.0.0.1:9100/events" ||
		f.Subscribers[0].SecretEnv != "HERALD_EVENTS_SECRET" || f.Subscribers[0].Name != f.Subscribers[0].URL {
		t.Errorf("subscribers = %+v", f.Subscribers)
	}
	if len(f.Routes) != 1 {
		t.Fatalf("routes = %+v", f.Routes)
	}
	r := f.Routes[0]
	if r.Name != "hooks" || r.Carrier != CarrierWebhook || r.URL != "http://127.0.0.1:9000/in" || r.ProfileName() != herald.ProfileChannel {
		t.Errorf("route = %+v", r)
	}
	p, err := r.Policy()
	if err != nil {
		t.Fatal(err)
	}
	want := herald.Policy{
		Retry:               herald.RetryPolicy{Kind: herald.RetryExponential, Base: 2 * time.Second, Multiplier: 2, Max: time.Hour, Jitter: 0.5},
		MaxAttempts:         12,
		MaxAge:              48 * time.Hour,
		Timeouts:            herald.Timeouts{Accept: 20 * time.Second, Carrier: 15 * time.Minute, Device: 12 * time.Second},
		RetryCarrierTimeout: true, // from the channel profile
		// A webhook route's default circuit breaker.
		Admission: herald.Admission{Circuit: herald.Circuit{Failures: 20, CoolDown: time.Minute}},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("policy =\n %+v\nwant\n %+v", p, want)
	}
	spec, err := f.StoreSpec()
	if err != nil || spec != (StoreSpec{Kind: StoreSQLite, Location: "./herald.db"}) {
		t.Errorf("store spec = %+v, %v", spec, err)
	}
}

func TestParseCarrierKeys(t *testing.T) {
	t.Setenv("HERALD_API_KEY", "k2")
	t.Setenv("TELEGRAM_BOT_TOKEN", "123:abc")
	f := mustParseFile(t, "carriers.yaml")

	keys, err := f.Keys()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(keys, map[string]string{"demo-key": "acme", "k2": DefaultTenant}) {
		t.Errorf("keys = %v", keys)
	}
	s := f.Subscribers[0]
	if !reflect.DeepEqual(s.Types, []string{"DELIVERY_FAILED", "CANCELLED"}) || s.MaxAttempts != 4 {
		t.Errorf("subscriber = %+v", s)
	}

	cs := f.Routes[0]
	wantAdm := Admission{Spacing: Duration(2 * time.Second), Concurrency: 5, Rate: Rate{N: 30, Per: time.Minute}}
	if cs.Admission == nil || *cs.Admission != wantAdm {
		t.Errorf("admission = %+v", cs.Admission)
	}
	if cs.TenantRate != (Rate{N: 100, Per: time.Minute}) || cs.TenantRate.PerSecond() != 100.0/60 {
		t.Errorf("tenant_rate = %+v", cs.TenantRate)
	}
	p, err := cs.Policy()
	if err != nil {
		t.Fatal(err)
	}
	wantPolicyAdm := herald.Admission{Spacing: 2 * time.Second, Concurrency: 5, Rate: herald.Rate{N: 30, Per: time.Minute}, TenantRate: herald.Rate{N: 100, Per: time.Minute}}
	if p.Admission != wantPolicyAdm {
		t.Errorf("policy admission = %+v, want %+v", p.Admission, wantPolicyAdm)
	}
	if p, err := f.Routes[1].Policy(); err != nil || p.Admission != (herald.Admission{Concurrency: 5}) {
		t.Errorf("taskpoll route's admission = %+v, %v; want the profile's concurrency 5", p.Admission, err)
	}
	if cs.Ordered || cs.DedupTTL.D() != time.Hour || cs.Lane != "net-1" {
		t.Errorf("ordered %v dedup %v lane %q", cs.Ordered, cs.DedupTTL, cs.Lane)
	}
	wantMQTT := MQTT{URL: "tcp://127.0.0.1:1883", ApplicationID: "app-1", UsernameEnv: "MQTT_USER", PasswordEnv: "MQTT_PASS"}
	if cs.Server != "127.0.0.1:8080" || cs.TokenEnv != "CHIRPSTACK_TOKEN" || !cs.TLS || cs.Send != "mqtt" ||
		cs.MQTT == nil || *cs.MQTT != wantMQTT || cs.IngressSecretEnv != "CHIRPSTACK_INGRESS" {
		t.Errorf("chirpstack keys = %+v", cs)
	}

	v2 := f.Routes[1]
	if v2.BaseURL != "https://calin.example.com/api" || v2.Company != "acme" || v2.UserIDEnv != "CALIN_USER" ||
		v2.PasswordEnv != "CALIN_PASS" || v2.DedupTTL != 0 || v2.ProfileName() != herald.ProfileTaskPoll {
		t.Errorf("calin-v2 keys = %+v", v2)
	}
	v1 := f.Routes[2]
	if v1.UsernameEnv != "CALIN_USER" || !reflect.DeepEqual(v1.PermanentErrors, []string{"meter not found"}) {
		t.Errorf("calin-v1 keys = %+v", v1)
	}

	tg := f.Routes[3]
	if tg.Carrier != CarrierTelegram || tg.TokenEnv != "TELEGRAM_BOT_TOKEN" || tg.BaseURL != "http://127.0.0.1:8081" ||
		tg.ProfileName() != herald.ProfileChannel {
		t.Errorf("telegram keys = %+v", tg)
	}

	th := f.Health.Thresholds()
	if th.QueueDepthWarning != 10 || th.QueueDepthCritical != 20 || th.DeadLettersWarning != herald.DefaultHealthThresholds.DeadLettersWarning {
		t.Errorf("thresholds = %+v", th)
	}
	if f.Retention.D() != 7*24*time.Hour || f.DrainBudget.D() != 30*time.Second {
		t.Errorf("retention %v drain %v", f.Retention, f.DrainBudget)
	}
}

func TestPolicyOverridesApplyOverProfile(t *testing.T) {
	lorawan, _ := herald.ProfilePolicy(herald.ProfileLoRaWAN)
	channel, _ := herald.ProfilePolicy(herald.ProfileChannel)
	classc, _ := herald.ProfilePolicy(herald.ProfileClassC)
	taskpoll, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
	no, yes := false, true
	noJitter := 0.0
	ptr := func(d time.Duration) *Duration { v := Duration(d); return &v }
	three, half := 3, 0.25

	tests := []struct {
		name  string
		route Route
		want  func(p *herald.Policy)
	}{
		{"carrier default, no overrides", Route{Carrier: CarrierChirpStack}, func(p *herald.Policy) { *p = lorawan }},
		{"lorawan with max_attempts 3", Route{Carrier: CarrierChirpStack, Overrides: &PolicyOverrides{MaxAttempts: &three}},
			func(p *herald.Policy) { *p = lorawan; p.MaxAttempts = 3 }},
		{"same retry kind keeps the unset fields", Route{Carrier: CarrierChirpStack, Overrides: &PolicyOverrides{
			Retry: &RetryOverrides{Base: ptr(5 * time.Second), Jitter: &half}}},
			func(p *herald.Policy) { *p = lorawan; p.Retry.Base = 5 * time.Second; p.Retry.Jitter = 0.25 }},
		{"another retry kind starts afresh", Route{Carrier: CarrierChirpStack, Overrides: &PolicyOverrides{
			Retry: &RetryOverrides{Kind: "constant", Base: ptr(10 * time.Second)}}},
			func(p *herald.Policy) {
				*p = lorawan
				p.Retry = herald.RetryPolicy{Kind: herald.RetryConstant, Base: 10 * time.Second}
			}},
		{"schedule and one timeout", Route{Carrier: CarrierWebhook, Overrides: &PolicyOverrides{
			Retry:    &RetryOverrides{Schedule: []Duration{Duration(time.Second), Duration(time.Minute)}},
			Timeouts: &TimeoutsOverrides{Accept: ptr(3 * time.Second)},
			MaxAge:   ptr(time.Hour)}},
			func(p *herald.Policy) {
				*p = channel
				p.Retry.Schedule = []time.Duration{time.Second, time.Minute}
				p.Timeouts.Accept = 3 * time.Second
				p.MaxAge = time.Hour
				p.Admission.Circuit = herald.Circuit{Failures: 20, CoolDown: time.Minute}
			}},
		{"telegram: spacing 1 s and one at a time per chat, 30/s per bot and a circuit", Route{Carrier: CarrierTelegram},
			func(p *herald.Policy) {
				*p = channel
				p.Admission.Spacing, p.Admission.Concurrency = time.Second, 1
				p.Admission.RouteRate = herald.Rate{N: 30, Per: time.Second}
				p.Admission.Circuit = herald.Circuit{Failures: 5, CoolDown: time.Minute}
			}},
		{"telegram: admission replaces the spacing, circuit off, route_rate set", Route{Carrier: CarrierTelegram,
			Admission: &Admission{Concurrency: 2}, Circuit: &Circuit{}, TenantRate: Rate{N: 30, Per: time.Second},
			RouteRate: Rate{N: 20, Per: time.Second}},
			func(p *herald.Policy) {
				*p = channel
				p.Admission.Concurrency = 2
				p.Admission.TenantRate = herald.Rate{N: 30, Per: time.Second}
				p.Admission.RouteRate = herald.Rate{N: 20, Per: time.Second}
			}},
		{"telegram on a profile with its own spacing", Route{Carrier: CarrierTelegram, Profile: "lorawan"},
			func(p *herald.Policy) {
				*p = lorawan
				p.Admission.RouteRate = herald.Rate{N: 30, Per: time.Second}
				p.Admission.Circuit = herald.Circuit{Failures: 5, CoolDown: time.Minute}
			}},
		{"route_rate on a webhook route", Route{Carrier: CarrierWebhook, Circuit: &Circuit{}, RouteRate: Rate{N: 5, Per: time.Minute}},
			func(p *herald.Policy) {
				*p = channel
				p.Admission.RouteRate = herald.Rate{N: 5, Per: time.Minute}
			}},
		{"classc coalesces by target", Route{Carrier: CarrierChirpStack, Profile: "classc"},
			func(p *herald.Policy) { *p = classc; p.CoalesceByTarget = true }},
		{"classc with coalesce: false", Route{Carrier: CarrierChirpStack, Profile: "classc", Coalesce: &no},
			func(p *herald.Policy) { *p = classc; p.CoalesceByTarget = false }},
		{"coalesce: true on another profile", Route{Carrier: CarrierChirpStack, Coalesce: &yes},
			func(p *herald.Policy) { *p = lorawan; p.CoalesceByTarget = true }},
		{"calin: poll_concurrency, first_poll, poll_jitter", Route{Carrier: CarrierCalinV1, PollConcurrency: 256,
			FirstPoll: ptr(5 * time.Second), PollJitter: &noJitter},
			func(p *herald.Policy) {
				*p = taskpoll
				p.PollConcurrency, p.FirstPoll, p.PollJitter = 256, 5*time.Second, 0
			}},
		{"calin: the profile's polls", Route{Carrier: CarrierCalinV2}, func(p *herald.Policy) { *p = taskpoll }},
		{"circuit off", Route{Carrier: CarrierWebhook, Circuit: &Circuit{}},
			func(p *herald.Policy) { *p = channel }},
		{"circuit set", Route{Carrier: CarrierWebhook, Circuit: &Circuit{Failures: 3, CoolDown: Duration(time.Second)}},
			func(p *herald.Policy) {
				*p = channel
				p.Admission.Circuit = herald.Circuit{Failures: 3, CoolDown: time.Second}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want herald.Policy
			tt.want(&want)
			got, err := tt.route.Policy()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("policy =\n %+v\nwant\n %+v", got, want)
			}
		})
	}

	// The profile's policy is a copy: overriding the schedule leaves it alone.
	again, _ := herald.ProfilePolicy(herald.ProfileChannel)
	if !reflect.DeepEqual(again, channel) {
		t.Errorf("the channel profile changed: %+v", again)
	}
}

func TestDefaultProfiles(t *testing.T) {
	for carrier, want := range map[string]herald.Profile{
		CarrierWebhook: herald.ProfileChannel, CarrierChirpStack: herald.ProfileLoRaWAN,
		CarrierCalinV1: herald.ProfileTaskPoll, CarrierCalinV2: herald.ProfileTaskPoll,
		CarrierTelegram: herald.ProfileChannel,
	} {
		if got := (Route{Carrier: carrier}).ProfileName(); got != want {
			t.Errorf("%s: profile %s, want %s", carrier, got, want)
		}
	}
	if got := (Route{Carrier: CarrierChirpStack, Profile: "classc"}).ProfileName(); got != herald.ProfileClassC {
		t.Errorf("explicit profile = %s", got)
	}
}

func TestDefault(t *testing.T) {
	f := Default()
	if f.Listen != "127.0.0.1:8080" || f.Store != "sqlite:./herald.db" || len(f.APIKeys) != 0 {
		t.Errorf("default = %+v", f)
	}
	if len(f.Routes) != 1 || f.Routes[0].Name != "demo" || f.Routes[0].Carrier != CarrierWebhook {
		t.Fatalf("default routes = %+v", f.Routes)
	}
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "url is required") {
		t.Errorf("Validate without the demo URL = %v", err)
	}
	f.Routes[0].URL = "http://127.0.0.1:9000/in"
	f.APIKeys = append(f.APIKeys, APIKey{Key: "demo", Tenant: "default"})
	if err := f.Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
	if _, err := f.Routes[0].Policy(); err != nil {
		t.Errorf("Policy = %v", err)
	}
}

func TestUIKey(t *testing.T) {
	const base = "api_keys: [{key: k}]\nroutes: [{name: hooks, carrier: webhook, url: \"http://127.0.0.1:9000/in\"}]\n"
	for _, c := range []struct {
		name, yaml string
		want       bool
	}{
		{"absent", "", true},
		{"true", "ui: true\n", true},
		{"false", "ui: false\n", false},
	} {
		f, err := Parse([]byte(base + c.yaml))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := f.UIEnabled(); got != c.want {
			t.Errorf("%s: UIEnabled = %v, want %v", c.name, got, c.want)
		}
	}
	if !Default().UIEnabled() {
		t.Error("the default config serves no admin page")
	}
	if _, err := Parse([]byte(base + "ui: maybe\n")); err == nil {
		t.Error("ui: maybe parsed; want an error")
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !os.IsNotExist(errorsUnwrapAll(err)) {
		t.Errorf("Load = %v, want a not-exist error", err)
	}
}

func errorsUnwrapAll(err error) error {
	for {
		type unwrapper interface{ Unwrap() error }
		u, ok := err.(unwrapper)
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// TestSubscriberSignatureAndRetry: a subscriber's signature and its retry,
// over the default (6 deliveries, 2 s doubling to 60 s).
func TestSubscriberSignatureAndRetry(t *testing.T) {
	t.Setenv("HOOK_SECRET", "s3cr3t")
	f, err := Parse([]byte(`
subscribers:
  - {url: "http://127.0.0.1:9100/a"}
  - {url: "http://127.0.0.1:9100/b", secret_env: HOOK_SECRET, signature: hmac-sha256, signature_header: X-Device-Messaging-Signature,
     signature_prefix: "sha256=", retry: {base: 5s, max: 30s}, max_attempts: 3}
` + okRoute))
	if err != nil {
		t.Fatal(err)
	}
	a, b := f.Subscribers[0], f.Subscribers[1]
	if got := a.RetryPolicy(); !reflect.DeepEqual(got, herald.DefaultSubscriberRetry) {
		t.Errorf("default retry %+v, want %+v", got, herald.DefaultSubscriberRetry)
	}
	want := herald.RetryPolicy{Kind: herald.RetryExponential, Base: 5 * time.Second, Multiplier: 2, Max: 30 * time.Second}
	if got := b.RetryPolicy(); !reflect.DeepEqual(got, want) || b.MaxAttempts != 3 || b.Signature != SignatureHMAC ||
		b.SignatureHeader != "X-Device-Messaging-Signature" || b.SignaturePrefix != "sha256=" {
		t.Errorf("subscriber %+v, retry %+v; want hmac-sha256 in X-Device-Messaging-Signature, retry %+v, 3 attempts", b, got, want)
	}
}

// TestEgressAllow reads egress.allow's networks and single addresses as
// prefixes, in canonical form.
func TestEgressAllow(t *testing.T) {
	f, err := Parse([]byte("egress: {allow: [10.20.1.2/16, 127.0.0.1, \"::1\", \"fd00::/8\"]}\n" + okRoute))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.AllowedPrefixes()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.20.0.0/16", "127.0.0.1/32", "::1/128", "fd00::/8"}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("allow[%d] = %v, want %s", i, got[i], want[i])
		}
	}
}

// TestRolesAndMetricsKey reads each key's role, write when it names none,
// and the metrics key from its variable.
func TestRolesAndMetricsKey(t *testing.T) {
	t.Setenv("HERALD_TEST_METRICS_KEY", "scrape")
	f, err := Parse([]byte(`api_keys: [{key: w, tenant: a}, {key: r, tenant: a, role: read}, {key: x, tenant: ops, role: admin}]
metrics: {key_env: HERALD_TEST_METRICS_KEY}
` + okRoute))
	if err != nil {
		t.Fatal(err)
	}
	roles, err := f.Roles()
	if err != nil || roles["w"] != RoleWrite || roles["r"] != RoleRead || roles["x"] != RoleAdmin || len(roles) != 3 {
		t.Errorf("roles = %v, %v", roles, err)
	}
	if key, err := f.MetricsKey(); key != "scrape" || err != nil {
		t.Errorf("metrics key = %q, %v", key, err)
	}
	if names := f.EnvNames(); !slices.Contains(names, "HERALD_TEST_METRICS_KEY") {
		t.Errorf("EnvNames %v lacks the metrics key's variable", names)
	}
}

// TestTrustedProxies reads http.trusted_proxies as prefixes.
func TestTrustedProxies(t *testing.T) {
	f, err := Parse([]byte("http: {trusted_proxies: [10.0.0.5, \"fd00::/8\"]}\n" + okRoute))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.TrustedProxies()
	if err != nil || fmt.Sprint(got) != "[10.0.0.5/32 fd00::/8]" {
		t.Errorf("trusted proxies = %v, %v", got, err)
	}
}
