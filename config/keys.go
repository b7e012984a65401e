package config

import (
	"fmt"
	"os"
)

// Keys resolves the API keys to the map the HTTP API takes: key -> tenant.
// It reads each KeyEnv from the environment.
func (f *File) Keys() (map[string]string, error) {
	keys := make(map[string]string, len(f.APIKeys))
	for i, k := range f.APIKeys {
		key, err := k.resolve()
		if err != nil {
			return nil, fmt.Errorf("api_keys[%d]: %w", i, err)
		}
		if prev, dup := keys[key]; dup && prev != k.Tenant {
			return nil, fmt.Errorf("api_keys[%d]: the same key is given to tenants %q and %q", i, prev, k.Tenant)
		}
		keys[key] = k.Tenant
	}
	return keys, nil
}

// resolve returns the key's value: Key, or the variable KeyEnv names.
func (k APIKey) resolve() (string, error) {
	switch {
	case k.KeyEnv != "" && k.Key != "":
		return "", fmt.Errorf("give key_env or key, not both")
	case k.Key != "":
		return k.Key, nil
	case k.KeyEnv == "":
		return "", fmt.Errorf("key_env is required")
	}
	v, ok := os.LookupEnv(k.KeyEnv)
	if !ok || v == "" {
		return "", fmt.Errorf("key_env: environment variable %s is not set", k.KeyEnv)
	}
	return v, nil
}
