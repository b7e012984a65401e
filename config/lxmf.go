package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
)

// LXMF methods, as an lxmf route's method key names them.
var lxmfMethods = []string{"opportunistic", "direct", "propagated"}

// validateLXMF checks an lxmf route's own keys.
func (r Route) validateLXMF() []error {
	var errs []error
	switch {
	case r.Reticulum == nil || r.Reticulum.TCP == "":
		errs = append(errs, errors.New("reticulum.tcp is required for an lxmf route: the host:port of a Reticulum transport node's TCP server interface (rnsd)"))
	default:
		if err := checkHostPort(r.Reticulum.TCP); err != nil {
			errs = append(errs, fmt.Errorf("reticulum.tcp: %v", err))
		}
	}
	if r.IdentityFile == "" {
		errs = append(errs, errors.New("identity_file is required for an lxmf route: the file of herald's Reticulum identity (created on first start)"))
	}
	switch r.Method {
	case "", "opportunistic", "direct":
		if r.PropagationNode != "" {
			errs = append(errs, fmt.Errorf("propagation_node is used by method propagated only (method is %q)", r.lxmfMethod()))
		}
	case "propagated":
		if r.PropagationNode == "" {
			errs = append(errs, errors.New("propagation_node is required for method propagated: the node's lxmf.propagation hash, 32 hex characters"))
		}
	default:
		errs = append(errs, fmt.Errorf("method %q: want one of %v", r.Method, lxmfMethods))
	}
	if r.PropagationNode != "" {
		if b, err := hex.DecodeString(r.PropagationNode); err != nil || len(b) != 16 {
			errs = append(errs, fmt.Errorf("propagation_node %q: want an lxmf.propagation hash, 32 hex characters", r.PropagationNode))
		}
	}
	return errs
}

// lxmfMethod is the route's method, direct when it names none.
func (r Route) lxmfMethod() string {
	if r.Method == "" {
		return "direct"
	}
	return r.Method
}

// checkHostPort reports whether s is host:port with a port number.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return fmt.Errorf("%q is not host:port", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a port number", s, port)
	}
	return nil
}

// validateLXMFRoutes checks what lxmf routes say of each other: those
// naming the same identity file share one node, so they name the same
// transport node and display name; a fallback_route names another lxmf
// route on the same identity file, which has no fallback of its own.
func (f *File) validateLXMFRoutes() []error {
	var errs []error
	byName := map[string]Route{}
	first := map[string]Route{} // by identity file
	for _, r := range f.Routes {
		byName[r.Name] = r
	}
	for i, r := range f.Routes {
		if r.Carrier != CarrierLXMF || r.IdentityFile == "" || r.Reticulum == nil {
			continue
		}
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("routes[%d] %q: "+format, append([]any{i, r.Name}, args...)...))
		}
		key := filepath.Clean(r.IdentityFile)
		if o, ok := first[key]; !ok {
			first[key] = r
		} else if o.Reticulum.TCP != r.Reticulum.TCP || o.DisplayName != r.DisplayName {
			bad("shares identity_file %s with route %q, so it shares its node: name the same reticulum.tcp and display_name", r.IdentityFile, o.Name)
		}
		if r.FallbackRoute == "" {
			continue
		}
		fb, ok := byName[r.FallbackRoute]
		switch {
		case r.FallbackRoute == r.Name:
			bad("fallback_route names the route itself")
		case !ok:
			bad("fallback_route %q: no such route", r.FallbackRoute)
		case fb.Carrier != CarrierLXMF:
			bad("fallback_route %q is a %s route: want an lxmf route", r.FallbackRoute, fb.Carrier)
		case filepath.Clean(fb.IdentityFile) != key:
			bad("fallback_route %q has another identity_file: its last attempt would come from another address", r.FallbackRoute)
		case fb.FallbackRoute != "":
			bad("fallback_route %q has a fallback_route of its own: a message falls back once", r.FallbackRoute)
		}
	}
	return errs
}
