package config

import (
	"errors"
	"fmt"
	"os"
)

// Metrics protects GET /metrics: a scraper must send the key KeyEnv holds
// as "Authorization: Bearer <key>". With it, the lane gauges name each
// lane (a tenant's chat id, a gateway); without it, /metrics is open and
// names none.
type Metrics struct {
	// KeyEnv names the environment variable that holds the key. Required.
	KeyEnv string `yaml:"key_env"`
}

// MetricsKey returns the key /metrics requires, "" when it requires none.
func (f *File) MetricsKey() (string, error) {
	if f.Metrics == nil {
		return "", nil
	}
	if f.Metrics.KeyEnv == "" {
		return "", errors.New("metrics.key_env is required (or leave metrics out: /metrics then needs no key)")
	}
	v, ok := os.LookupEnv(f.Metrics.KeyEnv)
	if !ok || v == "" {
		return "", fmt.Errorf("metrics.key_env: environment variable %s is not set", f.Metrics.KeyEnv)
	}
	keys, err := f.Keys()
	if err != nil {
		return "", nil // reported by itself
	}
	if _, ok := keys[v]; ok {
		return "", fmt.Errorf("metrics.key_env: %s holds an API key; give /metrics a key of its own", f.Metrics.KeyEnv)
	}
	return v, nil
}
