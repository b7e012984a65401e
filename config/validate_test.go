package config

import (
	"strings"
	"testing"
)

const okRoute = `
routes:
  - {name: hooks, carrier: webhook, url: "http://127.0.0.1:9000/in"}
`

func TestValidationErrors(t *testing.T) {
	t.Setenv("SET_VAR", "x")
	tests := []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"duplicate route names", `
routes:
  - {name: a, carrier: webhook, url: "http://h/x"}
  - {name: a, carrier: webhook, url: "http://h/y"}
`, []string{`routes[1] "a"`, "duplicate route name"}},
		{"unknown carrier", `
routes:
  - {name: a, carrier: telegraph}
`, []string{`routes[0] "a"`, `unknown carrier "telegraph"`}},
		{"webhook without url", `
routes:
  - {name: a, carrier: webhook}
`, []string{"url is required for a webhook route"}},
		{"webhook with a relative url", `
routes:
  - {name: a, carrier: webhook, url: "/in"}
`, []string{"not an absolute http or https URL"}},
		{"route without a name", `
routes:
  - {carrier: webhook, url: "http://h/x"}
`, []string{"name is required"}},
		{"route name unfit for a path", `
routes:
  - {name: "a/b", carrier: webhook, url: "http://h/x"}
`, []string{"name may hold only"}},
		{"no routes", `listen: ":1"`, []string{"at least one route is required"}},
		{"unknown signature", `
subscribers: [{url: "http://h/e", secret_env: SET_VAR, signature: rsa}]
` + okRoute, []string{"subscribers[0]", `signature "rsa": want standard or hmac-sha256`}},
		{"hmac without a secret", `
subscribers: [{url: "http://h/e", signature: hmac-sha256}]
` + okRoute, []string{"subscribers[0]", "needs secret_env"}},
		{"signature_header of a standard signature", `
subscribers: [{url: "http://h/e", signature_header: X-Sig}]
` + okRoute, []string{"subscribers[0]", "signature_header and signature_prefix need signature: hmac-sha256"}},
		{"signature_header not a header", `
subscribers: [{url: "http://h/e", secret_env: SET_VAR, signature: hmac-sha256, signature_header: "X Sig"}]
` + okRoute, []string{"subscribers[0]", `signature_header "X Sig" is not a header name`}},
		{"subscriber retry", `
subscribers: [{url: "http://h/e", retry: {kind: schedule}}]
` + okRoute, []string{"subscribers[0]", "schedule needs at least one step"}},
		{"poll keys on a route without tasks", `
routes:
  - {name: a, carrier: chirpstack, poll_concurrency: 4, first_poll: 5s, poll_jitter: 0.1, create_timeout: 1m}
`, []string{`routes[0] "a"`, "poll_concurrency: a chirpstack route has no tasks", "first_poll:", "poll_jitter:", "create_timeout:"}},
		{"poll_concurrency negative", `
routes:
  - {name: a, carrier: calin-v1, base_url: "http://h/", poll_concurrency: -1}
`, []string{`routes[0] "a"`, "poll concurrency -1 is negative"}},
		{"poll_jitter too big", `
routes:
  - {name: a, carrier: calin-v1, base_url: "http://h/", poll_jitter: 0.9}
`, []string{`routes[0] "a"`, "poll jitter 0.9 must be within 0..0.5"}},
		{"retry_failed_tasks on a route without tasks", `
routes:
  - {name: a, carrier: webhook, url: "http://h/x", retry_failed_tasks: true}
`, []string{`routes[0] "a"`, "retry_failed_tasks: a webhook route has no tasks"}},
		{"key_env unset", `
api_keys: [{key_env: HERALD_TEST_SURELY_UNSET, tenant: t}]
` + okRoute, []string{"api_keys[0]", "HERALD_TEST_SURELY_UNSET is not set"}},
		{"key and key_env", `
api_keys: [{key_env: SET_VAR, key: k}]
` + okRoute, []string{"not both"}},
		{"api key with neither", `
api_keys: [{tenant: t}]
` + okRoute, []string{"key_env is required"}},
		{"one key for two tenants", `
api_keys: [{key: k, tenant: a}, {key: k, tenant: b}]
` + okRoute, []string{"api_keys[1]", `tenants "a" and "b"`}},
		{"unknown role", `
api_keys: [{key: k, tenant: a, role: owner}]
` + okRoute, []string{"api_keys[0]", `role "owner": want write, read or admin`}},
		{"one key, two roles", `
api_keys: [{key: k, tenant: a}, {key: k, tenant: a, role: admin}]
` + okRoute, []string{"api_keys[1]", `roles "write" and "admin"`}},
		{"metrics without key_env", `
metrics: {}
` + okRoute, []string{"metrics.key_env is required"}},
		{"metrics key_env unset", `
metrics: {key_env: HERALD_TEST_SURELY_UNSET}
` + okRoute, []string{"metrics.key_env", "HERALD_TEST_SURELY_UNSET is not set"}},
		{"metrics key an API key", `
api_keys: [{key_env: SET_VAR, tenant: a}]
metrics: {key_env: SET_VAR}
` + okRoute, []string{"metrics.key_env: SET_VAR holds an API key"}},
		{"egress allow not a network", `
egress: {allow: [10.0.0.0/8, "10.0.0.0/33"]}
` + okRoute, []string{"egress.allow[1]", `"10.0.0.0/33" is not a CIDR prefix`}},
		{"trusted proxy not a network", `
http: {trusted_proxies: [10.0.0.0/8, proxy.internal]}
` + okRoute, []string{"http.trusted_proxies[1]", "neither an address nor a CIDR prefix"}},
		{"egress allow a name", `
egress: {allow: [metadata.internal]}
` + okRoute, []string{"egress.allow[0]", "neither an address nor a CIDR prefix"}},
		{"store scheme", `
store: postgres://localhost/db
` + okRoute, []string{`store "postgres://localhost/db"`, "sqlite:PATH"}},
		{"sqlite without a path", `
store: "sqlite:"
` + okRoute, []string{"needs a path"}},
		{"typo names its line", `
listen: ":1"
routes:
  - name: a
    carrier: webhook
    url: http://h/x
    max_attempts: 3
`, []string{"line 7", "max_attempts"}},
		{"unknown profile", `
routes:
  - {name: a, carrier: webhook, url: "http://h/x", profile: fast}
`, []string{`unknown profile "fast"`}},
		{"invalid policy", `
routes:
  - name: a
    carrier: webhook
    url: http://h/x
    policy: {retry: {jitter: 0.9}}
`, []string{"policy: retry: jitter 0.9"}},
		{"max_attempts 0", `
routes:
  - {name: a, carrier: chirpstack, policy: {max_attempts: 0}}
`, []string{"max_attempts 0 must be >= 1"}},
		{"unknown retry kind", `
routes:
  - {name: a, carrier: chirpstack, policy: {retry: {kind: fibonacci}}}
`, []string{`unknown kind "fibonacci"`}},
		{"bad duration names its line", `
routes:
  - name: a
    carrier: webhook
    url: http://h/x
    policy: {max_age: 2 weeks}
`, []string{"line 6", `"2 weeks" is not a duration`}},
		{"bare number is no duration", `
routes:
  - {name: a, carrier: webhook, url: "http://h/x", dedup_ttl: 30}
`, []string{`"30" is not a duration`}},
		{"bad rate", `
routes:
  - {name: a, carrier: webhook, url: "http://h/x", tenant_rate: 100/fortnight}
`, []string{`"100/fortnight" is not a rate`}},
		{"bad route_rate", `
routes:
  - {name: a, carrier: webhook, url: "http://h/x", route_rate: 30/fortnight}
`, []string{`"30/fortnight" is not a rate`}},
		{"negative concurrency", `
routes:
  - {name: a, carrier: webhook, url: "http://h/x", admission: {concurrency: -1}}
`, []string{"concurrency -1 is negative"}},
		{"bad permanent error pattern", `
routes:
  - {name: a, carrier: webhook, url: "http://h/x", permanent_errors: ["(unclosed"]}
`, []string{"permanent_errors"}},
		{"chirpstack send", `
routes:
  - {name: a, carrier: chirpstack, send: carrier-pigeon}
`, []string{`send "carrier-pigeon"`}},
		{"two chirpstack routes on one application", `
routes:
  - {name: meters, carrier: chirpstack, server: "cs:8080", mqtt: {url: "tcp://b:1883", application_id: app-1}}
  - {name: other, carrier: chirpstack, server: "cs:8080", mqtt: {url: "tcp://b:1883", application_id: app-2}}
  - {name: displays, carrier: chirpstack, server: "cs:8080", mqtt: {url: "tcp://b:1883", application_id: app-1}}
`, []string{`routes[2] "displays"`, `same ChirpStack application as route "meters"`}},
		{"chirpstack route listening to every application", `
routes:
  - {name: meters, carrier: chirpstack, server: "cs:8080", mqtt: {url: "tcp://b:1883", application_id: app-1}}
  - {name: all, carrier: chirpstack, server: "cs:8080", mqtt: {url: "tcp://b:1883"}}
`, []string{`routes[1] "all"`, `as route "meters"`}},
		{"chirpstack mqtt without url", `
routes:
  - {name: a, carrier: chirpstack, send: mqtt}
`, []string{"mqtt needs mqtt.url"}},
		{"calin without base_url", `
routes:
  - {name: a, carrier: calin-v1}
`, []string{"base_url is required for a calin-v1 route"}},
		{"telegram without token_env", `
routes:
  - {name: a, carrier: telegram}
`, []string{`routes[0] "a"`, "token_env is required for a telegram route"}},
		{"telegram token_env unset", `
routes:
  - {name: a, carrier: telegram, token_env: HERALD_TEST_SURELY_UNSET}
`, []string{`routes[0] "a"`, "token_env: environment variable HERALD_TEST_SURELY_UNSET is not set (the telegram bot token)"}},
		{"telegram base_url", `
routes:
  - {name: a, carrier: telegram, token_env: SET_VAR, base_url: "api.telegram.org"}
`, []string{`base_url: is not an absolute http or https URL: it has no scheme and host`}},
		{"webhook secret_env unset", `
routes:
  - {name: a, carrier: webhook, url: "http://h/x", secret_env: HERALD_TEST_SURELY_UNSET}
`, []string{"secret_env: environment variable HERALD_TEST_SURELY_UNSET is not set"}},
		{"subscriber without url", `
subscribers: [{secret_env: SET_VAR}]
` + okRoute, []string{"subscribers[0]: url: is required"}},
		{"subscriber type", `
subscribers: [{url: "http://h/e", types: [DONE]}]
` + okRoute, []string{`unknown status "DONE"`}},
		{"health out of order", `
health: {queue_depth_warning: 50, queue_depth_critical: 10}
` + okRoute, []string{"queue_depth_critical 10 is below queue_depth_warning 50"}},
		{"negative concurrency of the engine", `
concurrency: -2
` + okRoute, []string{"concurrency -2 is negative"}},
		{"two documents", okRoute + "---\n" + okRoute, []string{"one YAML document"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", f)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestValidationReportsEveryProblem(t *testing.T) {
	_, err := Parse([]byte(`
store: mysql://x
routes:
  - {name: a, carrier: webhook}
  - {name: a, carrier: nope}
`))
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	for _, w := range []string{"mysql://x", "url is required", "duplicate route name", `unknown carrier "nope"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func TestParseStore(t *testing.T) {
	tests := []struct {
		in   string
		want StoreSpec
		ok   bool
	}{
		{"sqlite:./herald.db", StoreSpec{StoreSQLite, "./herald.db"}, true},
		{"sqlite:///var/lib/herald.db", StoreSpec{StoreSQLite, "/var/lib/herald.db"}, true},
		{"redis://127.0.0.1:6379/0", StoreSpec{StoreRedis, "redis://127.0.0.1:6379/0"}, true},
		{"rediss://u:p@h:6380/1", StoreSpec{StoreRedis, "rediss://u:p@h:6380/1"}, true},
		{"./herald.db", StoreSpec{}, false},
		{"sqlite:", StoreSpec{}, false},
		{"redisx://h", StoreSpec{}, false},
	}
	for _, tt := range tests {
		got, err := ParseStore(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseStore(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

// TestSubscriberEventTypes: a subscriber may name statuses, uplink and the
// lane events; a lane event type that does not exist is refused.
func TestSubscriberEventTypes(t *testing.T) {
	f, err := Parse([]byte(`
subscribers: [{url: "http://h/e", types: [DELIVERY_FAILED, uplink, lane.circuit_open, lane.circuit_closed]}]
` + okRoute))
	if err != nil || len(f.Subscribers[0].Types) != 4 {
		t.Fatalf("Parse = %+v, %v; want the four types accepted", f, err)
	}
	if _, err := Parse([]byte(`
subscribers: [{url: "http://h/e", types: [lane.circuit_half_open]}]
` + okRoute)); err == nil || !strings.Contains(err.Error(), "lane.circuit_half_open") {
		t.Errorf("Parse of an unknown lane event type: %v, want it refused by name", err)
	}
}
