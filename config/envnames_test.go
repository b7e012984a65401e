package config

import (
	"slices"
	"testing"
)

func TestEnvNames(t *testing.T) {
	for _, name := range []string{"API_KEY", "EVENTS_SECRET", "HOOK_SECRET"} {
		t.Setenv(name, "x")
	}
	f, err := Parse([]byte(`
api_keys: [{key_env: API_KEY, tenant: a}, {key: literal, tenant: b}]
subscribers: [{url: "http://127.0.0.1:9/e", secret_env: EVENTS_SECRET}]
routes:
  - {name: hooks, carrier: webhook, url: "http://127.0.0.1:9/in", secret_env: HOOK_SECRET}
  - {name: bot, carrier: telegram, token_env: API_KEY}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.EnvNames(), []string{"API_KEY", "EVENTS_SECRET", "HOOK_SECRET"}; !slices.Equal(got, want) {
		t.Errorf("EnvNames() = %v, want %v", got, want)
	}
}
