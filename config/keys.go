package config

import (
	"fmt"
	"os"
	"slices"
)

// The roles of an API key.
const (
	// RoleWrite, the default, may do everything with its tenant's messages
	// and sees its tenant's figures.
	RoleWrite = "write"
	// RoleRead may only read (GET): every change is refused 403, and the
	// admin page shows no buttons.
	RoleRead = "read"
	// RoleAdmin may do what write may, and sees every tenant's figures in
	// stats, health, activity and lanes.
	RoleAdmin = "admin"
)

// Roles are the roles a key may have.
var Roles = []string{RoleWrite, RoleRead, RoleAdmin}

// Keys resolves the API keys to the map the HTTP API takes: key -> tenant.
// It reads each KeyEnv from the environment.
func (f *File) Keys() (map[string]string, error) {
	keys, _, err := f.keysAndRoles()
	return keys, err
}

// Roles resolves the API keys to their roles: key -> role (one of Roles).
func (f *File) Roles() (map[string]string, error) {
	_, roles, err := f.keysAndRoles()
	return roles, err
}

func (f *File) keysAndRoles() (keys, roles map[string]string, err error) {
	keys, roles = make(map[string]string, len(f.APIKeys)), make(map[string]string, len(f.APIKeys))
	for i, k := range f.APIKeys {
		key, err := k.resolve()
		if err != nil {
			return nil, nil, fmt.Errorf("api_keys[%d]: %w", i, err)
		}
		role := k.Role
		if role == "" {
			role = RoleWrite
		}
		if !slices.Contains(Roles, role) {
			return nil, nil, fmt.Errorf("api_keys[%d]: role %q: want write, read or admin", i, k.Role)
		}
		if prev, dup := keys[key]; dup && prev != k.Tenant {
			return nil, nil, fmt.Errorf("api_keys[%d]: the same key is given to tenants %q and %q", i, prev, k.Tenant)
		}
		if prev, dup := roles[key]; dup && prev != role {
			return nil, nil, fmt.Errorf("api_keys[%d]: the same key is given roles %q and %q", i, prev, role)
		}
		keys[key], roles[key] = k.Tenant, role
	}
	return keys, roles, nil
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
