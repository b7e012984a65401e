package config

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

const pnHash = "0123456789abcdef0123456789abcdef"

// TestLXMFRouteKeys: an lxmf route reads its keys and gets the lxmf
// profile (5 attempts 10 s apart, one message per recipient) unless it
// names another.
func TestLXMFRouteKeys(t *testing.T) {
	f, err := Parse([]byte(`
routes:
  - name: mesh
    carrier: lxmf
    reticulum: {tcp: "127.0.0.1:4242"}
    identity_file: /var/lib/herald/lxmf/identity
    display_name: Herald
    method: direct
    fallback_route: mesh-pn
    wait_for_path: 24h
  - name: mesh-pn
    carrier: lxmf
    reticulum: {tcp: "127.0.0.1:4242"}
    identity_file: /var/lib/herald/lxmf/identity
    display_name: Herald
    method: propagated
    propagation_node: ` + pnHash + `
`))
	if err != nil {
		t.Fatal(err)
	}
	r := f.Routes[0]
	if r.Reticulum.TCP != "127.0.0.1:4242" || r.IdentityFile != "/var/lib/herald/lxmf/identity" || r.DisplayName != "Herald" ||
		r.Method != "direct" || r.FallbackRoute != "mesh-pn" || r.WaitForPath.D() != 24*time.Hour || f.Routes[1].PropagationNode != pnHash {
		t.Errorf("routes read as %+v, %+v", r, f.Routes[1])
	}
	p, err := r.Policy()
	if err != nil || p.MaxAttempts != 5 || p.Retry.Kind != herald.RetryConstant || p.Retry.Base != 10*time.Second || p.Admission.Concurrency != 1 {
		t.Errorf("policy %+v, %v; want the lxmf profile's", p, err)
	}
}

// TestLXMFValidationNamesTheKey: every bad lxmf key is an error naming it.
func TestLXMFValidationNamesTheKey(t *testing.T) {
	base := func(extra string) string {
		return `
routes:
  - {name: mesh, carrier: lxmf, reticulum: {tcp: "127.0.0.1:4242"}, identity_file: /tmp/id` + extra + `}
`
	}
	tests := []struct{ name, yaml, want string }{
		{"no reticulum", `
routes:
  - {name: mesh, carrier: lxmf, identity_file: /tmp/id}
`, "reticulum.tcp is required"},
		{"bad tcp", `
routes:
  - {name: mesh, carrier: lxmf, reticulum: {tcp: "localhost"}, identity_file: /tmp/id}
`, `reticulum.tcp: "localhost" is not host:port`},
		{"bad port", `
routes:
  - {name: mesh, carrier: lxmf, reticulum: {tcp: "localhost:http"}, identity_file: /tmp/id}
`, `reticulum.tcp: "localhost:http": port "http" is not a port number`},
		{"no identity file", `
routes:
  - {name: mesh, carrier: lxmf, reticulum: {tcp: "127.0.0.1:4242"}}
`, "identity_file is required"},
		{"method", base(", method: carrier-pigeon"), `method "carrier-pigeon": want one of [opportunistic direct propagated]`},
		{"propagated without a node", base(", method: propagated"), "propagation_node is required for method propagated"},
		{"a node that is no hash", base(", method: propagated, propagation_node: abc"), `propagation_node "abc": want an lxmf.propagation hash`},
		{"a node for direct", base(", propagation_node: " + pnHash), "propagation_node is used by method propagated only"},
		{"fallback to itself", base(", fallback_route: mesh"), "fallback_route names the route itself"},
		{"fallback to nothing", base(", fallback_route: pn"), `fallback_route "pn": no such route`},
		{"fallback to a webhook", base(", fallback_route: hooks") + `  - {name: hooks, carrier: webhook, url: "http://h/x"}
`, `fallback_route "hooks" is a webhook route`},
		{"fallback on another identity", base(", fallback_route: pn") + `  - {name: pn, carrier: lxmf, reticulum: {tcp: "127.0.0.1:4242"}, identity_file: /tmp/other, method: propagated, propagation_node: ` + pnHash + `}
`, `fallback_route "pn" has another identity_file`},
		{"a shared identity on another node", base("") + `  - {name: pn, carrier: lxmf, reticulum: {tcp: "127.0.0.1:4243"}, identity_file: /tmp/id, method: propagated, propagation_node: ` + pnHash + `}
`, `shares identity_file /tmp/id with route "mesh"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
