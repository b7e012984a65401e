package httpapi

import (
	"context"
	"fmt"
	"net/http"
)

// Role is what an API key may do.
type Role string

// The roles of a key.
const (
	// RoleWrite, the default, may call every endpoint but the pause and
	// resume of lanes (which hold every tenant's messages), and sees its
	// tenant's own figures.
	RoleWrite Role = "write"
	// RoleRead may read only: GET and HEAD; anything else is refused 403.
	// The admin page hides its buttons.
	RoleRead Role = "read"
	// RoleAdmin may call every endpoint, pause and resume lanes, and sees every tenant's figures
	// in stats, health, activity and lanes (its messages are still its
	// tenant's own).
	RoleAdmin Role = "admin"
)

// Roles lists the roles, the default first.
var Roles = []Role{RoleWrite, RoleRead, RoleAdmin}

// ParseRole returns the role named s; "" is RoleWrite.
func ParseRole(s string) (Role, error) {
	if s == "" {
		return RoleWrite, nil
	}
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("role %q: want write, read or admin", s)
}

// Identity is who a request is authenticated as: a tenant, and the role
// of the key (or of the key its session was opened with).
type Identity struct {
	Tenant string
	Role   Role
}

type identityKey struct{}

// identityOf returns the identity that authenticate put in r's context.
func identityOf(r *http.Request) Identity {
	id, _ := r.Context().Value(identityKey{}).(Identity)
	return id
}

// withIdentity returns r carrying id.
func withIdentity(r *http.Request, id Identity) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
}

// tenantOf returns the tenant of r's identity.
func tenantOf(r *http.Request) string { return identityOf(r).Tenant }

// figuresOf returns whose figures r may read (stats, health, activity,
// lanes): its tenant's, or every tenant's ("") for an admin key.
func figuresOf(r *http.Request) string {
	if id := identityOf(r); id.Role != RoleAdmin {
		return id.Tenant
	}
	return ""
}

// The problems counted (Config.Problem) when a key may not do something.
const (
	// problemReadOnly: a read-only key tried a change (403).
	problemReadOnly = "forbidden_read_only"
	// problemNotAdmin: a key that is not an admin's tried a change that
	// acts for every tenant, such as a lane's pause (403).
	problemNotAdmin = "forbidden_not_admin"
	// problemMetricsKey: /metrics without its key (401).
	problemMetricsKey = "metrics_unauthorized"
)

// readOnly reports whether method only reads.
func readOnly(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}
